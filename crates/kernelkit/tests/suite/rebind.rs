//! Rebindable launches (`Call::rebindable`): prepared once for a layout,
//! run with new addresses; the checks that depend on addresses still run,
//! and calls that need more than a launch are not rebindable.

use kernelkit::interop::dlpack;
use kernelkit::{Array, ArrayError, CallError, DType, Device, Error, Kernel};

use super::{assert_output, runs_kernels};

/// The address of `a`'s element 0, read through its DLPack export.
fn addr(a: &Array) -> u64 {
    let m = dlpack::export(a).unwrap();
    // SAFETY: `export` returned a valid managed tensor, which is read
    // once and then given back through its own deleter.
    unsafe {
        let t = &(*m).dl_tensor;
        let p = t.data as u64 + t.byte_offset;
        if let Some(delete) = (*m).deleter {
            delete(m);
        }
        p
    }
}

fn twice() -> Kernel {
    Kernel::builder("rebind_twice")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f + k;")
        .build()
        .unwrap()
}

fn ramp(device: &Device, start: f32) -> Array {
    let v: Vec<f32> = (0..8).map(|i| start + i as f32).collect();
    device.array_from_slice(&v, [8]).unwrap()
}

/// Eight zeros written by a kernel on `device`'s default stream: an
/// output target that stream produces (a GPU array no stream produces is
/// waited for after a launch, which a rebindable launch does not do).
fn zeros(device: &Device) -> Array {
    Kernel::builder("rebind_zeros")
        .inputs(Vec::<String>::new())
        .outputs(["out"])
        .source("out[thread_position_in_grid.x] = 0.0f;")
        .build()
        .unwrap()
        .call(Vec::<&Array>::new())
        .on(device.default_stream())
        .output([8], DType::F32)
        .grid([8, 1, 1])
        .launch()
        .unwrap()[0]
        .clone()
}

pub fn a_rebindable_launch_runs_with_new_addresses(device: Device) {
    let kernel = twice();
    let (x, y) = (ramp(&device, 0.0), zeros(&device));
    let call = kernel
        .call([&x])
        .template("k", 1)
        .output_into(&y)
        .grid([8, 1, 1]);
    let plan = call
        .rebindable()
        .unwrap()
        .expect("a launch alone is rebindable");
    // SAFETY: both are arrays of the call's device and layout, alive
    // until the stream is synchronized below, used on its stream only.
    unsafe { plan.run(&[addr(&x)], &[addr(&y)]) }.unwrap();
    let compiles = device.cache_stats().compiles;
    // Other arrays of the same layout: the same launch, new memory.
    let (x2, y2) = (ramp(&device, 10.0), zeros(&device));
    for _ in 0..3 {
        // SAFETY: as above.
        unsafe { plan.run(&[addr(&x2)], &[addr(&y2)]) }.unwrap();
    }
    plan.stream().synchronize().unwrap();
    let expect =
        |start: f32| -> Vec<f32> { (0..8).map(|i| (start + i as f32) * 2.0 + 1.0).collect() };
    assert_output(&y, &expect(0.0), "first addresses");
    assert_output(&y2, &expect(10.0), "new addresses");
    assert_eq!(
        device.cache_stats().compiles,
        compiles,
        "runs compile nothing"
    );
    // The same variant as the call's own launch.
    assert_eq!(
        plan.variant().name(),
        call.prepare().unwrap().variant().name()
    );
    if runs_kernels(&device) {
        assert!(y2.to_vec::<f32>().unwrap() != y.to_vec::<f32>().unwrap());
    }
}

pub fn a_rebindable_launch_checks_its_addresses(device: Device) {
    let kernel = twice();
    let (x, y) = (ramp(&device, 0.0), zeros(&device));
    let plan = kernel
        .call([&x])
        .template("k", 1)
        .output_into(&y)
        .grid([8, 1, 1])
        .rebindable()
        .unwrap()
        .unwrap();
    let (xa, ya) = (addr(&x), addr(&y));
    let fails = |inputs: &[u64], outputs: &[u64]| -> Error {
        // SAFETY: every case is refused before anything is launched.
        unsafe { plan.run(inputs, outputs) }.unwrap_err()
    };
    let e = fails(&[xa], &[xa]);
    assert!(
        matches!(&e, Error::Call(CallError::OutputTarget { output, .. }) if output == "out"),
        "{e}"
    );
    assert!(
        e.to_string().contains("shares memory with input `inp`"),
        "{e}"
    );
    // Overlapping only in part.
    let e = fails(&[xa], &[xa + 16]);
    assert!(
        e.to_string().contains("shares memory with input `inp`"),
        "{e}"
    );
    // An address's errors name the kernel and the argument.
    let e = fails(&[0], &[ya]);
    assert!(
        matches!(&e, Error::Array(ArrayError::Argument { argument, .. }) if argument == "input `inp`"),
        "{e}"
    );
    let m = e.to_string();
    assert!(
        m.contains("null pointer") && m.starts_with("kernel `"),
        "{m}"
    );
    let m = fails(&[xa], &[ya + 2]).to_string();
    assert!(
        m.contains("output `out`: ") && m.contains("not aligned"),
        "{m}"
    );
    assert!(matches!(
        fails(&[], &[ya]),
        Error::Call(CallError::InputCount { .. })
    ));
    assert!(matches!(
        fails(&[xa], &[]),
        Error::Call(CallError::OutputCount { .. })
    ));
    // An in-place call allowed by the caller stays allowed (on an array
    // the call's stream produced: see `zeros`).
    let z = zeros(&device);
    let inplace = kernel
        .call([&z])
        .template("k", 1)
        .output_into(&z)
        .allow_overlap(true)
        .grid([8, 1, 1])
        .rebindable()
        .unwrap()
        .unwrap();
    let za = addr(&z);
    // SAFETY: `z` is of the call's device and layout, alive until the
    // synchronize, produced on the launch's stream.
    unsafe { inplace.run(&[za], &[za]) }.unwrap();
    inplace.stream().synchronize().unwrap();
    assert_output(&z, &[1.0f32; 8], "in place");
}

pub fn calls_that_need_more_than_a_launch_are_not_rebindable(device: Device) {
    let kernel = twice();
    let x = ramp(&device, 0.0);
    let y = zeros(&device);
    let ready = device.array_from_slice(&[0f32; 8], [8]).unwrap();
    let base = || kernel.call([&x]).template("k", 1).grid([8, 1, 1]);
    // Outputs kernelkit would allocate.
    assert!(base()
        .output([8], DType::F32)
        .rebindable()
        .unwrap()
        .is_none());
    // A fill before the launch.
    assert!(base()
        .output_into(&y)
        .init_value(0.0)
        .rebindable()
        .unwrap()
        .is_none());
    // A strided input the spec wants copied.
    let view = device.array_from_slice(&[0f32; 16], [16]).unwrap();
    let every_other = view.slice(&[[0, 16, 2]]).unwrap();
    assert!(!every_other.is_row_contiguous());
    assert!(kernel
        .call([&every_other])
        .template("k", 1)
        .output_into(&y)
        .grid([8, 1, 1])
        .rebindable()
        .unwrap()
        .is_none());
    // A GPU output no stream produced (uploaded, then ready): the launch
    // would be waited for after it.
    if device.kind() == kernelkit::DeviceKind::Cuda {
        assert!(base().output_into(&ready).rebindable().unwrap().is_none());
    }
    // The call's own errors come first, as a launch's would.
    assert!(base().rebindable().is_err());
}

/// A donated output (`Call::donate`) is its input's buffer, launched and
/// rebound: the kept launch lets that one pair share memory, and a launch
/// prepared without the donation still refuses the same addresses.
pub fn a_donated_call_writes_its_input_in_place(device: Device) {
    let kernel = twice();
    let z = zeros(&device);
    let out = kernel
        .call([&z])
        .template("k", 1)
        .donate("out", "inp")
        .grid([8, 1, 1])
        .launch()
        .unwrap();
    assert_eq!(addr(&out[0]), addr(&z), "the output is the input's buffer");
    assert_output(&z, &[1.0f32; 8], "donated");
    let rebound = kernel
        .call([&z])
        .template("k", 1)
        .donate("out", "inp")
        .grid([8, 1, 1])
        .rebindable()
        .unwrap()
        .expect("a donated call is a launch alone");
    let za = addr(&z);
    // SAFETY: `z` is of the call's device and layout, alive until the
    // synchronize, produced on the launch's stream.
    unsafe { rebound.run(&[za], &[za]) }.unwrap();
    rebound.stream().synchronize().unwrap();
    assert_output(&z, &[3.0f32; 8], "donated, rebound");
    let y = zeros(&device);
    let plain = kernel
        .call([&z])
        .template("k", 1)
        .output_into(&y)
        .grid([8, 1, 1])
        .rebindable()
        .unwrap()
        .unwrap();
    // SAFETY: as above; the run is refused before anything is launched.
    let err = unsafe { plain.run(&[za], &[za]) }.unwrap_err();
    assert!(
        matches!(err, Error::Call(CallError::OutputTarget { .. })),
        "{err:?}"
    );
}
