//! The Metal compatibility layer, function by function: each test runs
//! Metal bodies on a device and checks every result against a value
//! computed here, in plain Rust (never by the prelude under test, which
//! both backends share). Instantiated per backend by `compat.rs`.
//!
//! Tables: one kernel per (chapter, dtype) evaluates every function of the
//! chapter on many inputs (a `switch` on the function's row), so the suite
//! compiles few kernels.

#![allow(dead_code)]

pub mod atomics;
pub mod math;
pub mod mlx;
pub mod simd;
pub mod sync;
pub mod types;

use kernelkit::{bf16, f16, Array, DType, Device, Kernel, TemplateArg};

/// One launch: builds the kernel, runs it on the device's default stream
/// and returns its outputs.
pub struct Run<'a> {
    pub name: &'a str,
    pub inputs: Vec<(&'a str, Array)>,
    pub outputs: Vec<(&'a str, Vec<i64>, DType)>,
    pub body: String,
    pub header: String,
    pub grid: [u64; 3],
    pub threadgroup: [u64; 3],
    pub template: Vec<(&'a str, TemplateArg)>,
    pub init: Option<f64>,
}

impl<'a> Run<'a> {
    pub fn new(name: &'a str, body: impl Into<String>) -> Run<'a> {
        Run {
            name,
            inputs: Vec::new(),
            outputs: Vec::new(),
            body: body.into(),
            header: String::new(),
            grid: [1, 1, 1],
            threadgroup: [1, 1, 1],
            template: Vec::new(),
            init: None,
        }
    }
    pub fn input(mut self, name: &'a str, a: Array) -> Self {
        self.inputs.push((name, a));
        self
    }
    pub fn output(mut self, name: &'a str, len: usize, dtype: DType) -> Self {
        self.outputs.push((name, vec![len as i64], dtype));
        self
    }
    pub fn header(mut self, h: impl Into<String>) -> Self {
        self.header = h.into();
        self
    }
    pub fn grid(mut self, grid: [u64; 3], tg: [u64; 3]) -> Self {
        self.grid = grid;
        self.threadgroup = tg;
        self
    }
    pub fn template(mut self, name: &'a str, v: impl Into<TemplateArg>) -> Self {
        self.template.push((name, v.into()));
        self
    }
    pub fn init(mut self, v: f64) -> Self {
        self.init = Some(v);
        self
    }
    /// Runs, panicking with the kernel's name (and the compiler's log) on
    /// any error.
    pub fn run(self, device: &Device) -> Vec<Array> {
        let kernel = Kernel::builder(self.name)
            .inputs(self.inputs.iter().map(|(n, _)| *n))
            .outputs(self.outputs.iter().map(|(n, _, _)| *n))
            .source(self.body.clone())
            .header(self.header.clone())
            .build()
            .unwrap_or_else(|e| panic!("{}: {e}", self.name));
        let arrays: Vec<&Array> = self.inputs.iter().map(|(_, a)| a).collect();
        let mut call = kernel.call(arrays);
        for (_, shape, dtype) in &self.outputs {
            call = call.output(shape.iter().copied(), *dtype);
        }
        for (n, v) in &self.template {
            call = call.template(*n, *v);
        }
        if let Some(v) = self.init {
            call = call.init_value(v);
        }
        let outputs = call
            .grid(self.grid)
            .threadgroup(self.threadgroup)
            .on(device.default_stream())
            .launch()
            .unwrap_or_else(|e| panic!("{}: {e}", self.name));
        outputs.into_iter().collect()
    }
}

/// The C++ type name of a dtype in a Metal body.
pub fn metal_type(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        DType::F16 => "half",
        DType::BF16 => "bfloat",
        DType::F64 => "double",
        DType::I8 => "char",
        DType::U8 => "uchar",
        DType::I16 => "short",
        DType::U16 => "ushort",
        DType::I32 => "int",
        DType::U32 => "uint",
        DType::I64 => "long",
        DType::U64 => "ulong",
        DType::Bool => "bool",
        other => panic!("no Metal type for {other:?}"),
    }
}

/// An array of `dtype` holding `values` (rounded to the dtype).
pub fn array_f64(device: &Device, values: &[f64], dtype: DType) -> Array {
    let n = values.len();
    match dtype {
        DType::F32 => {
            device.array_from_slice(&values.iter().map(|&v| v as f32).collect::<Vec<_>>(), [n])
        }
        DType::F64 => device.array_from_slice(values, [n]),
        DType::F16 => device.array_from_slice(
            &values.iter().map(|&v| f16::from_f64(v)).collect::<Vec<_>>(),
            [n],
        ),
        DType::BF16 => device.array_from_slice(
            &values
                .iter()
                .map(|&v| bf16::from_f64(v))
                .collect::<Vec<_>>(),
            [n],
        ),
        other => panic!("array_f64: {other:?}"),
    }
    .unwrap()
}

/// An integer array of `dtype` from i128 values (wrapped into the type).
pub fn array_int(device: &Device, values: &[i128], dtype: DType) -> Array {
    let n = values.len();
    macro_rules! arr {
        ($t:ty) => {
            device.array_from_slice(&values.iter().map(|&v| v as $t).collect::<Vec<_>>(), [n])
        };
    }
    match dtype {
        DType::I8 => arr!(i8),
        DType::U8 => arr!(u8),
        DType::I16 => arr!(i16),
        DType::U16 => arr!(u16),
        DType::I32 => arr!(i32),
        DType::U32 => arr!(u32),
        DType::I64 => arr!(i64),
        DType::U64 => arr!(u64),
        other => panic!("array_int: {other:?}"),
    }
    .unwrap()
}

/// A float output as f64.
pub fn floats(a: &Array) -> Vec<f64> {
    match a.dtype() {
        DType::F32 => a
            .to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect(),
        DType::F64 => a.to_vec::<f64>().unwrap(),
        DType::F16 => a
            .to_vec::<f16>()
            .unwrap()
            .into_iter()
            .map(|v| v.to_f64())
            .collect(),
        DType::BF16 => a
            .to_vec::<bf16>()
            .unwrap()
            .into_iter()
            .map(|v| v.to_f64())
            .collect(),
        other => panic!("floats: {other:?}"),
    }
}

/// An integer output as i128.
pub fn ints(a: &Array) -> Vec<i128> {
    macro_rules! conv {
        ($t:ty) => {
            a.to_vec::<$t>()
                .unwrap()
                .into_iter()
                .map(|v| v as i128)
                .collect()
        };
    }
    match a.dtype() {
        DType::I8 => conv!(i8),
        DType::U8 => conv!(u8),
        DType::I16 => conv!(i16),
        DType::U16 => conv!(u16),
        DType::I32 => conv!(i32),
        DType::U32 => conv!(u32),
        DType::I64 => conv!(i64),
        DType::U64 => conv!(u64),
        DType::Bool => a
            .to_vec::<bool>()
            .unwrap()
            .into_iter()
            .map(|v| v as i128)
            .collect(),
        other => panic!("ints: {other:?}"),
    }
}

/// `v` rounded to `dtype` (float dtypes).
pub fn round_to(v: f64, dtype: DType) -> f64 {
    match dtype {
        DType::F32 => v as f32 as f64,
        DType::F16 => f16::from_f64(v).to_f64(),
        DType::BF16 => bf16::from_f64(v).to_f64(),
        _ => v,
    }
}

/// How close a float result must be.
#[derive(Clone, Copy, Debug)]
pub enum Tol {
    /// Bit for bit (NaN equals NaN).
    Exact,
    /// |got - want| <= abs + rel * |want|.
    Close { rel: f64, abs: f64 },
}

impl Tol {
    /// What a correctly rounded (or nearly) result of `dtype` allows: a few
    /// units in the last place for float32/float64, one or two for 16-bit.
    pub fn of(dtype: DType) -> Tol {
        match dtype {
            DType::F32 => Tol::Close {
                rel: 5e-7,
                abs: 1e-30,
            },
            DType::F64 => Tol::Close {
                rel: 1e-14,
                abs: 1e-300,
            },
            DType::F16 => Tol::Close {
                rel: 1e-3,
                abs: 1e-4,
            },
            DType::BF16 => Tol::Close {
                rel: 8e-3,
                abs: 1e-4,
            },
            _ => Tol::Exact,
        }
    }
    pub fn ok(self, got: f64, want: f64) -> bool {
        if got.is_nan() || want.is_nan() {
            return got.is_nan() && want.is_nan();
        }
        if got.is_infinite() || want.is_infinite() {
            return got == want;
        }
        match self {
            Tol::Exact => got.to_bits() == want.to_bits() || (got == 0.0 && want == 0.0),
            Tol::Close { rel, abs } => (got - want).abs() <= abs + rel * want.abs(),
        }
    }
}

/// Panics listing every mismatch (up to 20) with its label.
pub fn check(what: &str, labels: &[String], got: &[f64], want: &[f64], tol: impl Fn(usize) -> Tol) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let bad: Vec<String> = (0..got.len())
        .filter(|&i| !tol(i).ok(got[i], want[i]))
        .map(|i| format!("  {}: got {:e}, want {:e}", labels[i], got[i], want[i]))
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} of {} wrong:\n{}",
        bad.len(),
        got.len(),
        bad.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// As [`check`] for integers.
pub fn check_ints(what: &str, labels: &[String], got: &[i128], want: &[i128]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let bad: Vec<String> = (0..got.len())
        .filter(|&i| got[i] != want[i])
        .map(|i| format!("  {}: got {}, want {}", labels[i], got[i], want[i]))
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} of {} wrong:\n{}",
        bad.len(),
        got.len(),
        bad.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

/// A `switch` over rows: `case k: ...; break;` for each statement.
pub fn switch(selector: &str, cases: &[String]) -> String {
    let mut s = format!("switch ({selector}) {{\n");
    for (k, c) in cases.iter().enumerate() {
        s.push_str(&format!("  case {k}: {c} break;\n"));
    }
    s.push_str("  default: break;\n}\n");
    s
}
