//! The MLX golden bodies (`tests/golden/metal/*.json`) run with and
//! without bounds checks on every backend present: where the checked run
//! is clean, the outputs are the same bytes as unchecked (no false
//! positive, the same results); where it reports, the body goes out of
//! bounds at this launch (printed: these specs were written to test
//! source generation, not launched). Each spec runs with deterministic
//! small inputs, a grid of its first output's size and groups of up to 32.
//!
//! `cpu::` runs here; `cuda::` on the GPU machine (skipped with the reason
//! printed where no CUDA device opens).

use std::path::Path;

use kernelkit::spec_file::SpecFile;
use kernelkit::{CacheMode, CallError, DType, Device, Error};

fn cpu() -> Option<Device> {
    Some(
        Device::builder()
            .cache_mode(CacheMode::Memory)
            .cpu()
            .expect("a CPU device"),
    )
}

fn cuda() -> Option<Device> {
    match Device::builder().cache_mode(CacheMode::Memory).cuda(0) {
        Ok(d) => Some(d),
        Err(e) => {
            println!("SKIPPED: no CUDA device: {e}");
            None
        }
    }
}

/// Element `k` of a test input of `dtype`: the small integer `k % 7`
/// (`k % 2` for bools), exact in every dtype.
fn element(dtype: DType, k: usize) -> Vec<u8> {
    let v = (k % 7) as u16;
    match dtype {
        DType::Bool => vec![(k % 2) as u8],
        DType::U8 | DType::I8 => vec![v as u8],
        DType::U16 | DType::I16 => v.to_le_bytes().to_vec(),
        DType::U32 | DType::I32 => (v as u32).to_le_bytes().to_vec(),
        DType::U64 | DType::I64 => (v as u64).to_le_bytes().to_vec(),
        // Binary16 of 0..6: exponent and mantissa by hand.
        DType::F16 => {
            const BITS: [u16; 7] = [0, 0x3C00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600];
            BITS[v as usize].to_le_bytes().to_vec()
        }
        DType::BF16 => ((f32::from(v).to_bits() >> 16) as u16)
            .to_le_bytes()
            .to_vec(),
        DType::F32 => f32::from(v).to_le_bytes().to_vec(),
        DType::F64 => f64::from(v).to_le_bytes().to_vec(),
        DType::Complex64 => [f32::from(v).to_le_bytes(), 0f32.to_le_bytes()].concat(),
    }
}

/// One run of `spec` on `device`: each output's bytes, or the error.
fn run(device: &Device, spec: &SpecFile, check: bool) -> Result<Vec<Vec<u8>>, Error> {
    let kernel = spec.builder().check_bounds(check).build()?;
    let mut inputs = Vec::new();
    for port in &spec.inputs {
        let n: usize = port.shape.iter().product();
        let bytes: Vec<u8> = (0..n).flat_map(|k| element(port.dtype, k)).collect();
        inputs.push(kernelkit::Array::from_bytes(
            device,
            &bytes,
            port.shape.iter().copied(),
            port.dtype,
        )?);
    }
    let n = spec.outputs[0].shape.iter().product::<usize>().max(1) as u64;
    let outs = spec
        .call(&kernel, &inputs)
        .grid([n, 1, 1])
        .threadgroup([n.min(32), 1, 1])
        .init_value(0.0)
        .launch()?;
    outs.iter().map(|o| o.to_bytes()).collect()
}

fn golden_bodies_give_the_same_outputs_checked(device: Option<Device>) {
    let Some(device) = device else { return };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/metal");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    let (mut same, mut reported, mut skipped) = (0, 0, 0);
    let mut changed = Vec::new();
    for path in &names {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let Ok(spec) = SpecFile::from_path(path) else {
            skipped += 1;
            continue;
        };
        // The checked run first: an unchecked run of a body that goes out
        // of bounds could corrupt this process's heap.
        match run(&device, &spec, true) {
            Ok(checked) => match run(&device, &spec, false) {
                Ok(plain) if plain == checked => same += 1,
                Ok(_) => changed.push(name),
                Err(e) => panic!("{name}: runs checked, fails unchecked: {e}"),
            },
            Err(Error::Call(e @ CallError::OutOfBounds { .. })) => {
                println!("{name}: goes out of bounds at this launch: {e}");
                reported += 1;
            }
            Err(e) => {
                // Refused or not compilable here (checked and unchecked
                // alike, as the next line checks).
                let plain = run(&device, &spec, false);
                assert!(plain.is_err(), "{name}: fails only checked: {e}");
                skipped += 1;
            }
        }
    }
    println!(
        "golden bodies on {}: {same} the same checked, {reported} out of bounds at this \
         launch, {skipped} not run (refused on both), of {}",
        device.label(),
        names.len()
    );
    assert!(
        changed.is_empty(),
        "outputs changed by bounds checks: {changed:?}"
    );
    assert!(same >= names.len() / 2, "too few golden bodies ran");
}

mod cpu {
    #[test]
    fn golden_bodies_give_the_same_outputs_checked() {
        super::golden_bodies_give_the_same_outputs_checked(super::cpu());
    }
}

mod cuda {
    #[test]
    fn golden_bodies_give_the_same_outputs_checked() {
        super::golden_bodies_give_the_same_outputs_checked(super::cuda());
    }
}
