//! Compiling ahead of time ([`Precompile`]) and asking where a variant is
//! compiled ([`Call::cache_state`], [`Kernel::cache_state`]), on every
//! backend.

use kernelkit::{
    CallError, DType, Device, Error, InputDesc, Kernel, PassMode, Precompile, TemplateArg,
    TemplateParam, VariantDesc,
};

use super::{assert_output, rejected_line};

fn add_v() -> Kernel {
    Kernel::builder("precompile_add_v")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i] + V;")
        .build()
        .unwrap()
}

/// `V = v`, as a call's `.template("V", v)` sets it.
fn param(v: i32) -> TemplateParam<'static> {
    TemplateParam {
        name: "V".into(),
        value: TemplateArg::Int(v),
    }
}

fn desc_parts(dtype: DType) -> ([InputDesc; 1], [DType; 1]) {
    (
        [InputDesc {
            dtype,
            mode: PassMode::Device,
        }],
        [dtype],
    )
}

/// Four variants (two from descriptions, two from calls) compile in the
/// background, once each; the calls made afterwards compile nothing and
/// run right.
pub fn precompiled_variants_are_compiled_once_and_calls_find_them(device: Device) {
    let kernel = add_v();
    let x = device.array_from_slice(&[1i32; 16], [16]).unwrap();
    let call = |v: i32| {
        kernel
            .call([&x])
            .template("V", v)
            .output([16], DType::I32)
            .grid([16, 1, 1])
            .threadgroup([16, 1, 1])
            .on(device.default_stream())
    };
    let template = |v: i32| [param(v)];
    let (f32_in, f32_out) = desc_parts(DType::F32);
    let t = template(5);
    let f32_desc = VariantDesc {
        inputs: &f32_in,
        outputs: &f32_out,
        template: &t,
    };
    let (i32_in, i32_out) = desc_parts(DType::I32);
    let t3 = template(3);
    let i32_desc = VariantDesc {
        inputs: &i32_in,
        outputs: &i32_out,
        template: &t3,
    };
    assert!(!call(1).cache_state().unwrap().compiled());
    assert!(!kernel.cache_state(&device, &f32_desc).unwrap().compiled());
    assert_eq!(device.cache_stats().compiles, 0, "asking compiles nothing");
    let report = Precompile::builder()
        .variant(&kernel, &device, &f32_desc)
        .variant(&kernel, &device, &i32_desc)
        .call(&call(1))
        .call(&call(2))
        .workers(4)
        .start()
        .wait();
    assert_eq!(report.results.len(), 4);
    for r in &report.results {
        assert!(r.result.is_ok(), "{}: {:?}", r.function, r.result);
        assert_eq!(r.kernel, "precompile_add_v");
    }
    assert_eq!(device.cache_stats().compiles, 4);
    let state = call(2).cache_state().unwrap();
    assert!(state.memory, "{state:?}");
    assert!(kernel.cache_state(&device, &i32_desc).unwrap().memory);
    // The description of `i32_desc` is the call with V = 3: one variant.
    let out = call(3).launch().unwrap();
    assert_output(&out[0], &[4i32; 16], "V = 3");
    let out = call(1).launch().unwrap();
    assert_output(&out[0], &[2i32; 16], "V = 1");
    assert_eq!(
        device.cache_stats().compiles,
        4,
        "the calls found their variants compiled"
    );
    assert_eq!(kernel.memoized_variants(), 4);
}

/// Each item has its own result, in the order added: a compile error, a
/// variant that cannot be generated, and good ones beside them.
pub fn precompile_reports_each_variants_error(device: Device) {
    let good = add_v();
    let broken = Kernel::builder("precompile_broken")
        .inputs(["inp"])
        .outputs(["out"])
        .source(format!(
            "uint i = thread_position_in_grid.x;\n{}",
            rejected_line(&device)
        ))
        .build()
        .unwrap();
    let (inp, out) = desc_parts(DType::F32);
    let t = [param(1)];
    let desc = VariantDesc {
        inputs: &inp,
        outputs: &out,
        template: &t,
    };
    let two_inputs = [inp[0], inp[0]];
    let wrong_count = VariantDesc {
        inputs: &two_inputs,
        outputs: &out,
        template: &t,
    };
    let report = Precompile::builder()
        .variant(&good, &device, &desc)
        .variant(&broken, &device, &desc)
        .variant(&good, &device, &wrong_count)
        .start()
        .wait();
    let r = &report.results;
    assert_eq!(r.len(), 3);
    assert!(r[0].result.is_ok(), "{:?}", r[0].result);
    assert!(
        matches!(&r[1].result, Err(Error::Compile(_))),
        "{:?}",
        r[1].result
    );
    assert_eq!(r[1].kernel, "precompile_broken");
    assert!(
        matches!(
            &r[2].result,
            Err(Error::Call(CallError::InputCount {
                expected: 1,
                got: 2,
                ..
            }))
        ),
        "{:?}",
        r[2].result
    );
    assert_eq!(report.failures().count(), 2);
    // A failure is not cached: the next ask compiles again.
    assert!(!broken.cache_state(&device, &desc).unwrap().compiled());
}

/// A dropped handle's compiles go on; a call of the same variant waits for
/// that compile or finds its module, and never compiles it a second time.
pub fn a_dropped_precompile_still_fills_the_cache(device: Device) {
    let kernel = add_v();
    let x = device.array_from_slice(&[2i32; 8], [8]).unwrap();
    let call = || {
        kernel
            .call([&x])
            .template("V", 7)
            .output([8], DType::I32)
            .grid([8, 1, 1])
            .threadgroup([8, 1, 1])
            .on(device.default_stream())
    };
    let handle = Precompile::builder().call(&call()).start();
    let progress = handle.poll();
    assert_eq!(progress.total, 1);
    drop(handle);
    let out = call().launch().unwrap();
    assert_output(&out[0], &[9i32; 8], "V = 7");
    assert_eq!(device.cache_stats().compiles, 1);
    assert!(call().cache_state().unwrap().memory);
}
