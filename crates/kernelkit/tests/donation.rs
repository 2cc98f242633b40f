//! Donation (`Call::donate`): an output that is an input's own buffer, on
//! the CPU and the null device — written in place, nothing allocated, the
//! same variant as an allocating call — and every misuse as a typed error
//! naming the kernel, the output and the input.

use kernelkit::{interop, CacheMode, CallError, DType, Device, Error, Kernel};

fn cpu() -> Device {
    Device::builder()
        .cache_mode(CacheMode::Memory)
        .cpu()
        .unwrap()
}

/// `out = inp + 1`, element by element.
fn add_one() -> Kernel {
    Kernel::builder("add_one")
        .inputs(["inp", "other"])
        .outputs(["out", "extra"])
        .source(
            "uint i = thread_position_in_grid.x;\n\
             out[i] = inp[i] + 1.0f; extra[i] = other[i];",
        )
        .build()
        .unwrap()
}

/// `x += 1` as a kernel with one input and one output.
fn increment() -> Kernel {
    Kernel::builder("increment")
        .inputs(["x"])
        .outputs(["y"])
        .source("uint i = thread_position_in_grid.x; y[i] = x[i] + 1.0f;")
        .build()
        .unwrap()
}

fn donation_error(err: Result<impl std::fmt::Debug, Error>) -> (String, String, String) {
    match err {
        Err(Error::Call(CallError::Donation {
            kernel,
            output,
            input,
            reason,
        })) => {
            assert!(kernel == "add_one" || kernel == "increment", "{kernel}");
            (output, input, reason)
        }
        other => panic!("expected a donation error, got {other:?}"),
    }
}

#[test]
fn a_donated_output_is_the_inputs_buffer_on_the_cpu() {
    let device = cpu();
    let k = increment();
    let x = device
        .array_from_slice(&[1.0f32, 2.0, 3.0, 4.0], [4])
        .unwrap();
    let out = k
        .call([&x])
        .donate("y", "x")
        .grid([4, 1, 1])
        .launch()
        .unwrap();
    // The input itself holds the result, and so does the returned output.
    assert_eq!(x.to_vec::<f32>().unwrap(), [2.0, 3.0, 4.0, 5.0]);
    assert_eq!(out[0].to_vec::<f32>().unwrap(), [2.0, 3.0, 4.0, 5.0]);
    // Again, through a prepared launch.
    let launch = k
        .call([&x])
        .donate("y", "x")
        .grid([4, 1, 1])
        .prepare()
        .unwrap();
    launch.run().unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), [3.0, 4.0, 5.0, 6.0]);
}

#[test]
fn a_donated_call_shares_the_allocating_calls_variant() {
    let device = cpu();
    let k = increment();
    let x = device.array_from_slice(&[1.0f32; 16], [16]).unwrap();
    let allocating = k
        .call([&x])
        .output([16], DType::F32)
        .variant_on(&device)
        .unwrap();
    let donated = k.call([&x]).donate("y", "x").variant_on(&device).unwrap();
    assert_eq!(allocating.name(), donated.name());
    assert_eq!(allocating.source(), donated.source());
}

#[test]
fn one_of_two_outputs_donated_beside_an_allocated_one() {
    let device = cpu();
    let k = add_one();
    let a = device.array_from_slice(&[10.0f32; 8], [8]).unwrap();
    let b = device.array_from_slice(&[7.0f32; 8], [8]).unwrap();
    let out = k
        .call([&a, &b])
        .donate("out", "inp")
        .output([8], DType::F32)
        .grid([8, 1, 1])
        .launch()
        .unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), [11.0; 8]);
    assert_eq!(out[1].to_vec::<f32>().unwrap(), [7.0; 8]);
}

#[test]
fn the_null_device_sees_the_inputs_address_as_the_outputs() {
    let device = Device::new_null();
    let k = increment();
    let x = device.array_from_slice(&[1.0f32; 32], [32]).unwrap();
    let out = k
        .call([&x])
        .donate("y", "x")
        .grid([32, 1, 1])
        .launch()
        .unwrap();
    let mut launches = device.take_recorded_launches();
    assert_eq!(launches.len(), 1);
    let r = launches.pop().unwrap();
    assert_eq!(r.inputs[0].addr, r.outputs[0].addr);
    assert_eq!(r.outputs[0].shape, [32]);
    // The output returned is that buffer: a call reading it is handed the
    // same address.
    k.call([&out[0]])
        .output([32], DType::F32)
        .grid([32, 1, 1])
        .launch()
        .unwrap();
    let again = device.take_recorded_launches().pop().unwrap();
    assert_eq!(again.inputs[0].addr, r.inputs[0].addr);
}

#[test]
fn other_overlaps_still_need_allow_overlap() {
    let device = cpu();
    let k = add_one();
    let a = device.array_from_slice(&[1.0f32; 8], [8]).unwrap();
    // The second input is the first one again: the donated output overlaps
    // it too, which the call must say it means.
    let err = k
        .call([&a, &a])
        .donate("out", "inp")
        .output([8], DType::F32)
        .grid([8, 1, 1])
        .launch();
    assert!(
        matches!(err, Err(Error::Call(CallError::OutputTarget { ref output, .. })) if output == "out"),
        "{err:?}"
    );
    k.call([&a, &a])
        .donate("out", "inp")
        .output([8], DType::F32)
        .allow_overlap(true)
        .grid([8, 1, 1])
        .launch()
        .unwrap();
}

#[test]
fn misuses_are_typed_errors_naming_output_and_input() {
    let device = cpu();
    let k = add_one();
    let a = device.array_from_slice(&[1.0f32; 8], [8]).unwrap();
    let b = device.array_from_slice(&[1.0f32; 8], [8]).unwrap();
    let grid = [8, 1, 1];

    // One input donated to two outputs.
    let err = k
        .call([&a, &b])
        .donate("out", "inp")
        .donate("extra", "inp")
        .grid(grid)
        .launch();
    let (output, input, reason) = donation_error(err);
    assert_eq!((output.as_str(), input.as_str()), ("extra", "inp"));
    assert!(
        reason.contains("donated to output `out` already"),
        "{reason}"
    );

    // Names the kernel does not have, or an output out of order.
    let (_, _, reason) = donation_error(k.call([&a, &b]).donate("nope", "inp").grid(grid).launch());
    assert!(reason.contains("no output `nope`"), "{reason}");
    let (_, _, reason) = donation_error(k.call([&a, &b]).donate("out", "nope").grid(grid).launch());
    assert!(reason.contains("no input `nope`"), "{reason}");
    let (_, _, reason) = donation_error(
        k.call([&a, &b])
            .donate("extra", "other")
            .grid(grid)
            .launch(),
    );
    assert!(reason.contains("in order"), "{reason}");

    // An input the kernel has but the call does not give: the count's
    // error.
    let err = k.call([&a]).donate("out", "other").grid(grid).launch();
    assert!(
        matches!(err, Err(Error::Call(CallError::InputCount { .. }))),
        "{err:?}"
    );

    // A fill would overwrite the input.
    let (_, _, reason) = donation_error(
        k.call([&a, &b])
            .donate("out", "inp")
            .output([8], DType::F32)
            .init_value(0.0)
            .grid(grid)
            .launch(),
    );
    assert!(reason.contains("init_value"), "{reason}");

    // An input the call would copy first (ensure_row_contiguous).
    let m = device.array_from_slice(&[1.0f32; 8], [2, 4]).unwrap();
    let t = m.transpose();
    let (_, _, reason) =
        donation_error(increment().call([&t]).donate("y", "x").grid(grid).launch());
    assert!(reason.contains("would copy it"), "{reason}");
}

#[test]
fn a_read_only_input_cannot_be_donated() {
    let device = cpu();
    let x = vec![1.0f32; 8];
    let k = increment();
    let err = interop::scope(|s| {
        let xs = s.slice(&device, &x, [8])?;
        let call = k.call([&xs]).donate("y", "x").grid([8, 1, 1]);
        #[allow(clippy::let_and_return)] // the call borrows `xs`: dropped before it
        let result = call.launch().map(drop);
        result
    });
    let (output, input, reason) = donation_error(err);
    assert_eq!((output.as_str(), input.as_str()), ("y", "x"));
    assert!(reason.contains("read-only"), "{reason}");
}
