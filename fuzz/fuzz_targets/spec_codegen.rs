//! Arbitrary kernel specs, call signatures and template arguments through
//! validation (`KernelBuilder::build`, `Call::generate`) and source
//! generation (`Kernel::generate`) for every dialect. Nothing may panic, and
//! whatever is accepted must give a function name that is an identifier:
//! names never inject code.

#![no_main]

use std::borrow::Cow;
use std::sync::OnceLock;

use arbitrary::Arbitrary;
use kernelkit::{
    Array, DType, Device, Dialect, InputDesc, Kernel, PassMode, TemplateArg, TemplateParam,
    VariantDesc,
};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Value {
    Int(i32),
    Bool(bool),
    DType(u8),
}

#[derive(Arbitrary, Debug)]
struct Spec {
    name: String,
    inputs: Vec<String>,
    outputs: Vec<String>,
    source: String,
    header: String,
    ensure_row_contiguous: bool,
    atomic_outputs: bool,
    /// Per input: dtype byte and pass mode byte.
    call_inputs: Vec<(u8, u8)>,
    call_outputs: Vec<u8>,
    template: Vec<(String, Value)>,
}

fn dtype(b: u8) -> DType {
    DType::ALL[b as usize % DType::ALL.len()]
}

fn mode(b: u8) -> PassMode {
    match b % 3 {
        0 => PassMode::Scalar,
        1 => PassMode::Constant,
        _ => PassMode::Device,
    }
}

fn value(v: &Value) -> TemplateArg {
    match *v {
        Value::Int(i) => TemplateArg::Int(i),
        Value::Bool(b) => TemplateArg::Bool(b),
        Value::DType(d) => TemplateArg::DType(dtype(d)),
    }
}

/// A small zeroed array of `dtype` whose shape gives pass mode `mode`.
fn array(dtype: DType, mode: PassMode) -> Array {
    static DEVICE: OnceLock<Device> = OnceLock::new();
    let device = DEVICE.get_or_init(Device::new_cpu);
    let shape: &[usize] = match mode {
        PassMode::Scalar => &[],
        PassMode::Constant => &[3],
        PassMode::Device => &[2, 8],
    };
    Array::zeros(device, shape.iter().copied(), dtype).expect("a small array")
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

const DIALECTS: [Dialect; 3] = [Dialect::Metal, Dialect::Cuda, Dialect::Cpu];

fuzz_target!(|spec: Spec| {
    let Ok(kernel) = Kernel::builder(spec.name.as_str())
        .inputs(spec.inputs.iter().map(String::as_str))
        .outputs(spec.outputs.iter().map(String::as_str))
        .source(spec.source.as_str())
        .header(spec.header.as_str())
        .ensure_row_contiguous(spec.ensure_row_contiguous)
        .atomic_outputs(spec.atomic_outputs)
        .build()
    else {
        return;
    };
    let template: Vec<TemplateParam<'_>> = spec
        .template
        .iter()
        .map(|(name, v)| TemplateParam {
            name: Cow::Borrowed(name.as_str()),
            value: value(v),
        })
        .collect();

    // The validating path: a call with arrays of the fuzzed dtypes and modes.
    let arrays: Vec<Array> = spec
        .call_inputs
        .iter()
        .take(16)
        .map(|&(d, m)| array(dtype(d), mode(m)))
        .collect();
    let mut call = kernel.call(arrays.iter());
    for &d in spec.call_outputs.iter().take(16) {
        call = call.output([4], dtype(d));
    }
    for t in &template {
        call = call.template(t.name.clone(), t.value);
    }
    for dialect in DIALECTS {
        if let Ok(g) = call.generate(dialect) {
            assert!(is_identifier(&g.name), "{dialect:?} name {:?}", g.name);
            assert!(g.source.contains(kernel.spec().source()));
        }
    }

    // The raw generator, without the call's checks: any descriptor that
    // matches the kernel's arity must generate without panicking.
    let n_in = kernel.spec().input_names().len();
    let n_out = kernel.spec().output_names().len();
    let inputs: Vec<InputDesc> = (0..n_in)
        .map(|i| {
            let (d, m) = spec.call_inputs.get(i).copied().unwrap_or((0, 2));
            InputDesc {
                dtype: dtype(d),
                mode: mode(m),
            }
        })
        .collect();
    let outputs: Vec<DType> = (0..n_out)
        .map(|i| dtype(spec.call_outputs.get(i).copied().unwrap_or(11)))
        .collect();
    let desc = VariantDesc {
        inputs: &inputs,
        outputs: &outputs,
        template: &template,
    };
    for dialect in DIALECTS {
        let g = kernel.generate(dialect, &desc);
        assert!(is_identifier(&g.name), "{dialect:?} name {:?}", g.name);
    }
});
