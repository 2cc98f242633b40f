//! The planted-bug corpus (`planted/cases.rs`) run with bounds checks on
//! every backend present, each group's catches counted apart (see
//! `docs/bounds-checks.md`):
//!
//! - groups A (through the argument's name) and B (raw pointers and casts
//!   into buffers kernelkit allocated) must each be caught in at least
//!   90% of their cases, with the right argument (and for A, an index the
//!   bug reaches);
//! - group C is reported, caught or not;
//! - every planted kernel fixed (the same launch of a correct body) runs
//!   clean checked, with the results it has unchecked: no false positive.
//!
//! `cpu::` runs here; `cuda::` on the GPU machine (`scripts/gpu-remote.sh`,
//! step `i45_planted`), skipped with the reason printed where no CUDA
//! device opens.

#[path = "planted/mod.rs"]
mod planted;

use kernelkit::{BodyLanguage, CacheMode, CallError, DType, Device, Error, Kernel, OutOfBounds};
use planted::cases::{cases, Case, Expect};

fn cpu() -> Option<Device> {
    Some(
        Device::builder()
            .cache_mode(CacheMode::Memory)
            .cpu()
            .expect("a CPU device opens"),
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

fn kernel(c: &Case, check: bool) -> Kernel {
    Kernel::builder(c.name)
        .inputs(c.inputs.iter().map(|(n, _)| *n))
        .outputs(c.outputs.iter().map(|(n, _, _)| *n))
        .header(c.header)
        .source(c.body)
        .atomic_outputs(c.atomic)
        .ensure_row_contiguous(c.row_contiguous)
        .language(if c.cuda_body {
            BodyLanguage::Cuda
        } else {
            BodyLanguage::Metal
        })
        .check_bounds(check)
        .build()
        .unwrap_or_else(|e| panic!("{}: {e}", c.name))
}

/// Runs case `c` on `device`, checked or not: the outputs' values as f64,
/// or the call's error.
fn run(device: &Device, c: &Case, check: bool) -> Result<Vec<Vec<f64>>, Error> {
    let k = kernel(c, check);
    let mut arrays = Vec::new();
    for (name, shape) in c.inputs {
        let n: usize = shape.iter().product();
        if c.strided.contains(name) {
            let data: Vec<f32> = (0..2 * n).map(|k| k as f32).collect();
            let whole = device.array_from_slice(&data, [2 * n])?;
            arrays.push(whole.slice(&[[0, 2 * n, 2]])?);
        } else {
            let data: Vec<f32> = (0..n).map(|k| k as f32).collect();
            arrays.push(device.array_from_slice(&data, shape.iter().copied())?);
        }
    }
    let mut call = k.call(arrays.iter());
    for (name, shape, int) in c.outputs {
        let _ = name;
        let dtype = if *int { DType::I32 } else { DType::F32 };
        call = call.output(shape.iter().map(|&d| d as i64), dtype);
    }
    for (name, v) in c.template {
        call = call.template(*name, *v);
    }
    let outs = call
        .grid(c.grid)
        .threadgroup(c.tg)
        .init_value(0.0)
        .launch()?;
    let mut values = Vec::new();
    for (o, (_, _, int)) in outs.iter().zip(c.outputs) {
        if *int {
            values.push(o.to_vec::<i32>()?.into_iter().map(f64::from).collect());
        } else {
            values.push(o.to_vec::<f32>()?.into_iter().map(f64::from).collect());
        }
    }
    Ok(values)
}

/// Whether `e` is the report `expect` asks for; the report's words.
fn judge(e: &Error, expect: &Expect) -> (bool, String) {
    let words = e.to_string();
    let Error::Call(CallError::OutOfBounds {
        role,
        argument,
        access,
        ..
    }) = e
    else {
        return (false, words);
    };
    let ok = match expect {
        Expect::View(r, a, indices) => {
            matches!(&**access, OutOfBounds::View { index, .. }
                if indices.iter().any(|range| range.contains(index)))
                && role == r
                && argument == a
        }
        Expect::Guard(r, a) | Expect::Unseen(r, a) => role == r && argument == a,
    };
    (ok, words)
}

fn planted_bugs_are_caught(device: Option<Device>) {
    let Some(device) = device else { return };
    let cuda = device.kind() == kernelkit::DeviceKind::Cuda;
    let mut tally = std::collections::BTreeMap::<(String, bool), (usize, usize)>::new();
    let mut misses = Vec::new();
    for c in cases() {
        if c.cuda_body && !cuda {
            continue;
        }
        let group = format!("{:?}", c.group);
        let entry = tally.entry((group, c.held_out)).or_default();
        entry.1 += 1;
        match run(&device, &c, true) {
            Ok(_) => {
                println!("{:<34} {:?} missed: the call succeeded", c.name, c.group);
                misses.push(c.name);
            }
            Err(e) => {
                let (ok, words) = judge(&e, &c.expect);
                println!(
                    "{:<34} {:?} {}: {words}",
                    c.name,
                    c.group,
                    if ok { "caught" } else { "MISNAMED" }
                );
                if ok {
                    entry.0 += 1;
                } else {
                    misses.push(c.name);
                }
            }
        }
    }
    println!("\nplanted bugs on {}:", device.label());
    let mut by_group = std::collections::BTreeMap::<String, (usize, usize)>::new();
    for ((group, held_out), (caught, total)) in &tally {
        println!(
            "  group {group}{}: {caught} of {total} caught",
            if *held_out { " (held out)" } else { "" }
        );
        let g = by_group.entry(group.clone()).or_default();
        g.0 += caught;
        g.1 += total;
    }
    for (group, (caught, total)) in &by_group {
        println!("  group {group} in all: {caught} of {total}");
        if group != "C" {
            assert!(
                *caught * 10 >= *total * 9,
                "group {group}: {caught} of {total} caught (under 90%); missed: {misses:?}"
            );
        }
    }
    let total: usize = by_group.values().map(|v| v.1).sum();
    assert!(total >= 30, "{total} planted cases ran");
}

/// The correct kernels of `planted/controls.rs`, checked and not: the
/// same results, and no report.
fn correct_kernels_run_clean_with_the_same_results(device: Option<Device>) {
    let Some(device) = device else { return };
    let controls = planted::controls::controls();
    for c in &controls {
        let plain = run(&device, c, false).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let checked = run(&device, c, true).unwrap_or_else(|e| panic!("{} checked: {e}", c.name));
        assert_eq!(plain, checked, "{}", c.name);
    }
    println!("{} correct kernels: same results checked", controls.len());
}

/// On the CPU, a one-past-the-end write into an output lands in its guard
/// region: the process's heap stays whole however often it runs.
fn a_write_past_the_end_leaves_the_heap_whole(device: Option<Device>) {
    let Some(device) = device else { return };
    let c = cases()
        .into_iter()
        .find(|c| c.name == "b_raw_pointer_offset")
        .unwrap();
    for _ in 0..200 {
        let e = run(&device, &c, true).expect_err("caught");
        assert!(judge(&e, &c.expect).0, "{e}");
        // Allocations around the freed output are used again at once.
        let v: Vec<Vec<u8>> = (0..16).map(|k| vec![k as u8; 256]).collect();
        assert!(v
            .iter()
            .enumerate()
            .all(|(k, b)| b.iter().all(|&x| x == k as u8)));
    }
}

/// An output written into the caller's array (`output_into`) runs through
/// a guarded stand-in: a write past its end through a raw pointer is named
/// by the output and leaves what follows the caller's array untouched; a
/// correct kernel's results reach the caller's array.
fn outputs_into_the_callers_arrays_are_guarded(device: Option<Device>) {
    let Some(device) = device else { return };
    let data: Vec<f32> = (0..80).map(|k| k as f32).collect();
    let x = device.array_from_slice(&data[..64], [64]).unwrap();
    let kernel = |body: &str| {
        Kernel::builder("into")
            .inputs(["inp"])
            .outputs(["out"])
            .source(body)
            .check_bounds(true)
            .build()
            .unwrap()
    };
    let whole = device.array_from_slice(&data, [80]).unwrap();
    let target = whole.slice(&[[0, 64, 1]]).unwrap();
    let bad =
        kernel("uint i = thread_position_in_grid.x;\ndevice float* p = out + 1;\np[i] = -inp[i];");
    let e = bad
        .call([&x])
        .output_into(&target)
        .grid([64, 1, 1])
        .threadgroup([32, 1, 1])
        .launch()
        .expect_err("caught");
    assert!(
        matches!(
            &e,
            Error::Call(CallError::OutOfBounds { argument, access, .. })
                if argument == "out"
                    && matches!(**access, OutOfBounds::Guard { byte_offset: 256, .. })
        ),
        "{e}"
    );
    assert_eq!(
        whole.to_vec::<f32>().unwrap()[64..],
        data[64..],
        "past the target: untouched"
    );
    let good = kernel("uint i = thread_position_in_grid.x;\nout[i] = -inp[i];");
    good.call([&x])
        .output_into(&target)
        .grid([64, 1, 1])
        .threadgroup([32, 1, 1])
        .launch()
        .unwrap();
    let got = whole.to_vec::<f32>().unwrap();
    assert!(
        got[..64].iter().zip(&data).all(|(g, d)| *g == -*d),
        "{got:?}"
    );
    assert_eq!(got[64..], data[64..]);
}

/// Off, the generated sources are what they are without the feature; on,
/// the CPU and CUDA sources change and the Metal source (MLX's) does not.
#[test]
fn checking_changes_no_metal_source_and_nothing_when_off() {
    use kernelkit::{Dialect, InputDesc, PassMode, VariantDesc};
    let build = |check: Option<bool>| {
        let b = Kernel::builder("k")
            .inputs(["a"])
            .outputs(["out"])
            .source("uint i = thread_position_in_grid.x; out[i] = a[i];");
        match check {
            Some(c) => b.check_bounds(c),
            None => b,
        }
        .build()
        .unwrap()
    };
    let inputs = [InputDesc {
        dtype: DType::F32,
        mode: PassMode::Device,
    }];
    let desc = VariantDesc {
        inputs: &inputs,
        outputs: &[DType::F32],
        template: &[],
    };
    let (default, off, on) = (build(None), build(Some(false)), build(Some(true)));
    if std::env::var_os("KERNELKIT_CHECK_BOUNDS").is_none() {
        assert!(!default.spec().check_bounds());
    }
    for dialect in [Dialect::Metal, Dialect::Cuda, Dialect::Cpu] {
        let off_src = off.generate(dialect, &desc);
        let on_src = on.generate(dialect, &desc);
        assert!(!off_src.source.contains("kk_v_"), "{dialect:?}");
        if dialect == Dialect::Metal {
            assert_eq!(off_src, on_src, "MLX's source never changes");
        } else {
            assert_ne!(off_src.source, on_src.source, "{dialect:?}");
            assert_ne!(off_src.name, on_src.name, "{dialect:?}: a different kernel");
        }
    }
}

macro_rules! for_backends {
    ($($backend:ident),*) => {$(
        mod $backend {
            #[test]
            fn planted_bugs_are_caught() {
                super::planted_bugs_are_caught(super::$backend());
            }
            #[test]
            fn correct_kernels_run_clean_with_the_same_results() {
                super::correct_kernels_run_clean_with_the_same_results(super::$backend());
            }
            #[test]
            fn outputs_into_the_callers_arrays_are_guarded() {
                super::outputs_into_the_callers_arrays_are_guarded(super::$backend());
            }
            #[test]
            fn a_write_past_the_end_leaves_the_heap_whole() {
                super::a_write_past_the_end_leaves_the_heap_whole(super::$backend());
            }
        }
    )*};
}

for_backends!(cpu, cuda);

/// On the stand-in CUDA driver (`tools/fakecuda`, which runs no kernel):
/// a checked call marshals its bounds block, waits, reads the record back
/// (untouched: no violation) and checks its guard regions (untouched).
mod standin {
    #[test]
    fn a_checked_cuda_call_round_trips_its_block() {
        let Some(device) = super::cuda() else { return };
        let c = super::cases()
            .into_iter()
            .find(|c| c.name == "a_one_past_end_write")
            .unwrap();
        super::run(&device, &c, true).expect("nothing ran, so nothing was out of bounds");
    }
}
