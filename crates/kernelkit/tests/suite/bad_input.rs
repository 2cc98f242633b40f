//! The bad-input matrix: wrong specs, wrong calls and wrong array operations,
//! each with the typed error it must produce and the words its message must
//! hold (the kernel's name and the argument at fault). Every row runs inside
//! `catch_unwind`: a panic is a failure of the row, never of the process.
//!
//! All rows fail before anything is compiled except `huge output`, which
//! compiles the fixture kernel once (its memory is only asked for at launch).
//!
//! The matrix runs on every backend (`behaviour.rs`). Most rows expect the
//! same everywhere; a row that depends on the backend says on which ones it
//! runs (wgpu's per-backend expectations), and its words may name the
//! device (`{device}`: `cpu`, `cuda:0`, `null`) or the backend
//! (`{backend}`: `cpu`, `cuda`, `null`).

use std::panic::{catch_unwind, AssertUnwindSafe};

use kernelkit::{
    ArrayError, BodyLanguage, BuildError, CallError, DType, Device, DeviceError, DeviceKind,
    Dialect, Error, Kernel, Stream,
};

/// What every row may use: a private device of the backend under test, a
/// valid kernel and arrays.
struct Fx {
    device: Device,
    stream: Stream,
    /// `add_one(inp) -> out`, body `out[i] = inp[i] + OFFSET`.
    add: Kernel,
    /// Same body reading a Metal texture: no portable backend has them.
    texture: Kernel,
    /// Same body as CUDA C++ (MLX's `cuda_kernel`): CUDA devices only.
    cuda_body: Kernel,
    /// Same body with `__syncthreads()`.
    syncthreads: Kernel,
    /// Reads `inp_shape`.
    shape_user: Kernel,
    /// f32[8]
    x: kernelkit::Array,
    /// f64[8]
    x64: kernelkit::Array,
    /// i32[2, 3]
    m: kernelkit::Array,
}

const BODY: &str = "uint i = thread_position_in_grid.x; out[i] = inp[i] + OFFSET;";

fn fixture(device: Device) -> Fx {
    let stream = device.new_stream().unwrap();
    let add = Kernel::builder("add_one")
        .inputs(["inp"])
        .outputs(["out"])
        .source(BODY)
        .build()
        .unwrap();
    let texture = Kernel::builder("with_texture")
        .inputs(["inp"])
        .outputs(["out"])
        .source(BODY)
        .header("float fetch(texture2d<float> t) { return t.read(uint2(0)).x; }")
        .build()
        .unwrap();
    let cuda_body = Kernel::builder("cuda_body")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = blockIdx.x * blockDim.x + threadIdx.x; out[i] = inp[i] + OFFSET;")
        .language(BodyLanguage::Cuda)
        .build()
        .unwrap();
    let syncthreads = Kernel::builder("with_syncthreads")
        .inputs(["inp"])
        .outputs(["out"])
        .source(format!("{BODY} __syncthreads();"))
        .build()
        .unwrap();
    let shape_user = Kernel::builder("shape_user")
        .inputs(["inp"])
        .outputs(["out"])
        .source("uint i = thread_position_in_grid.x; out[i] = inp[i % inp_shape[0]];")
        .build()
        .unwrap();
    let x = device.array_from_slice(&[1.0f32; 8], [8]).unwrap();
    let x64 = device.array_from_slice(&[1.0f64; 8], [8]).unwrap();
    let m = device
        .array_from_slice(&[0i32, 1, 2, 3, 4, 5], [2, 3])
        .unwrap();
    Fx {
        device,
        stream,
        add,
        texture,
        cuda_body,
        syncthreads,
        shape_user,
        x,
        x64,
        m,
    }
}

impl Fx {
    /// The backend's name, as errors give it.
    fn backend(&self) -> &'static str {
        match self.device.kind() {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
            DeviceKind::Null => "null",
        }
    }

    /// A row's word with `{device}` and `{backend}` filled in.
    fn word(&self, word: &str) -> String {
        word.replace("{device}", self.device.label())
            .replace("{backend}", self.backend())
    }

    /// The valid call every call row changes one thing of.
    fn good<'a>(&'a self, k: &'a Kernel) -> kernelkit::Call<'a> {
        k.call([&self.x])
            .template("OFFSET", 1)
            .output([8], DType::F32)
            .grid([8, 1, 1])
            .threadgroup([8, 1, 1])
            .on(&self.stream)
    }
}

/// Builds a kernel from parts; rows change one part.
fn build(
    name: &str,
    inputs: &[&str],
    outputs: &[&str],
    body: &str,
    header: &str,
) -> Result<(), Error> {
    Kernel::builder(name)
        .inputs(inputs.iter().copied())
        .outputs(outputs.iter().copied())
        .source(body)
        .header(header)
        .build()
        .map(drop)
}

struct Row {
    what: &'static str,
    /// Whether the row is for the fixture's backend.
    on: fn(&Fx) -> bool,
    run: fn(&Fx) -> Result<(), Error>,
    matches: fn(&Error) -> bool,
    variant: &'static str,
    contains: &'static [&'static str],
}

macro_rules! row {
    ([$on:ident] $what:literal, $f:ident => $run:expr, $pat:pat, [$($word:expr),* $(,)?]) => {
        Row {
            what: $what,
            on: $on,
            run: |$f: &Fx| -> Result<(), Error> {
                #[allow(unused_variables)]
                let $f = $f;
                $run.map(drop)
            },
            matches: |e: &Error| matches!(e, $pat),
            variant: stringify!($pat),
            contains: &[$($word),*],
        }
    };
    ($what:literal, $($rest:tt)*) => {
        row!([every_backend] $what, $($rest)*)
    };
}

// Which backends a row is for.

fn every_backend(_: &Fx) -> bool {
    true
}

/// The CPU dialect refuses CUDA C++ words in a Metal body (a Metal body
/// may use them on CUDA devices).
fn refuses_cuda_words(f: &Fx) -> bool {
    f.device.dialect() == Dialect::Cpu
}

/// The portable dialects (CPU, CUDA) have no Metal textures and the like.
fn portable_dialect(f: &Fx) -> bool {
    f.device.dialect() != Dialect::Metal
}

/// A CUDA C++ body runs where sources are CUDA C++ only.
fn not_cuda_dialect(f: &Fx) -> bool {
    f.device.dialect() != Dialect::Cuda
}

fn no_shared_memory(f: &Fx) -> bool {
    f.device.limits().max_shared_bytes == 0
}

fn has_shared_memory(f: &Fx) -> bool {
    (1..u32::MAX as u64).contains(&f.device.limits().max_shared_bytes)
}

/// Arrays in host memory (the CPU's, the null device's).
fn host_memory(f: &Fx) -> bool {
    matches!(f.device.kind(), DeviceKind::Cpu | DeviceKind::Null)
}

fn cuda(f: &Fx) -> bool {
    f.device.kind() == DeviceKind::Cuda
}

fn rows() -> Vec<Row> {
    vec![
        // ---- the kernel spec (KernelBuilder::build) ----
        row!("empty kernel name", f => build("", &["inp"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "kernel", .. }), ["kernel name", "it is empty"]),
        row!("kernel name with a space", f => build("add one", &["inp"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "kernel", .. }), ["`add one`"]),
        row!("kernel name with a dash", f => build("add-one", &["inp"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "kernel", .. }), ["`add-one`"]),
        row!("kernel name with a NUL byte", f => build("add\0one", &["inp"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "kernel", .. }), ["add\\0one"]),
        row!("kernel name over 200 characters", f => build(&"k".repeat(201), &["inp"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "kernel", .. }), ["longer than 200"]),
        row!("input name starting with a digit", f => build("k1", &["1x"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "input", .. }), ["kernel `k1`", "`1x`"]),
        row!("input name with a space", f => build("k2", &["x y"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "input", .. }), ["kernel `k2`", "`x y`"]),
        row!("input name injecting code", f => build("k3", &["x){system(\"id\");}//"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "input", .. }), ["kernel `k3`", "input name"]),
        row!("input name not ASCII", f => build("k4", &["café"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "input", .. }), ["kernel `k4`", "`café`"]),
        row!("empty input name", f => build("k5", &[""], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "input", .. }), ["kernel `k5`", "it is empty"]),
        row!("input name over 200 characters", f => build("k6", &[&"n".repeat(201)], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "input", .. }), ["kernel `k6`", "longer than 200"]),
        row!("output name with a newline", f => build("k7", &["inp"], &["out\n#include <x>"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "output", .. }), ["kernel `k7`", "out\\n#include"]),
        row!("input name with a NUL byte", f => build("k8", &["in\0p"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "input", .. }), ["kernel `k8`", "in\\0p"]),
        row!("input is a C++ keyword", f => build("k9", &["float"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "input", .. }), ["kernel `k9`", "`float`", "reserved"]),
        row!("output is a C++ keyword", f => build("k10", &["inp"], &["return"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "output", .. }), ["kernel `k10`", "`return`", "reserved"]),
        row!("input is a Metal keyword", f => build("k11", &["threadgroup"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "input", .. }), ["kernel `k11`", "`threadgroup`"]),
        row!("input is a CUDA built-in", f => build("k12", &["threadIdx"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "input", .. }), ["kernel `k12`", "`threadIdx`"]),
        row!("input starting with __", f => build("k13", &["__x"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "input", .. }), ["kernel `k13`", "`__x`"]),
        row!("input in kernelkit's kk_ namespace", f => build("k14", &["kk_args"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "input", .. }), ["kernel `k14`", "`kk_args`"]),
        row!("input named like a generated type", f => build("k15", &["int64_t"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "input", .. }), ["kernel `k15`", "`int64_t`"]),
        row!("input named like a position attribute", f => build("k16", &["thread_position_in_grid"], &["out"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "input", .. }), ["kernel `k16`", "input name `thread_position_in_grid`", "position attribute"]),
        row!("output named like a position attribute", f => build("k17", &["inp"], &["threads_per_grid"], BODY, ""),
            Error::Build(BuildError::InvalidName { role: "output", .. }), ["kernel `k17`", "output name `threads_per_grid`"]),
        row!("duplicate input", f => build("k18", &["a", "a"], &["out"], BODY, ""),
            Error::Build(BuildError::DuplicateName { role: "input", .. }), ["kernel `k18`", "`a`", "collides with input `a`"]),
        row!("input and output with one name", f => build("k19", &["a"], &["a"], BODY, ""),
            Error::Build(BuildError::DuplicateName { role: "output", .. }), ["kernel `k19`", "output name `a`", "input `a`"]),
        row!("duplicate output", f => build("k20", &["inp"], &["o", "o"], BODY, ""),
            Error::Build(BuildError::DuplicateName { role: "output", .. }), ["kernel `k20`", "`o`"]),
        row!("input inp_shape beside input inp", f => build("k21", &["inp", "inp_shape"], &["out"], BODY, ""),
            Error::Build(BuildError::DuplicateName { role: "input", .. }), ["kernel `k21`", "`inp_shape`", "input `inp`"]),
        row!("output inp_strides beside input inp", f => build("k22", &["inp"], &["inp_strides"], BODY, ""),
            Error::Build(BuildError::DuplicateName { role: "output", .. }), ["kernel `k22`", "`inp_strides`", "input `inp`"]),
        row!("input inp_ndim listed before input inp", f => build("k23", &["inp_ndim", "inp"], &["out"], BODY, ""),
            Error::Build(BuildError::DuplicateName { role: "input", .. }), ["kernel `k23`", "`inp_ndim`", "input `inp`"]),
        row!("no outputs", f => build("k24", &["inp"], &[], BODY, ""),
            Error::Build(BuildError::NoOutputs { .. }), ["kernel `k24`", "output"]),
        row!("NUL byte in the body", f => build("k25", &["inp"], &["out"], "out[0] = 1;\0 evil", ""),
            Error::Build(BuildError::NulByte { field: "source", offset: 11, .. }), ["kernel `k25`", "source", "offset 11"]),
        row!("NUL byte in the header", f => build("k26", &["inp"], &["out"], BODY, "#define X 1\n\0"),
            Error::Build(BuildError::NulByte { field: "header", .. }), ["kernel `k26`", "header"]),
        // ---- argument counts ----
        row!("no inputs for one", f => f.add.call([]).output([8], DType::F32).grid([8, 1, 1]).on(&f.stream).prepare(),
            Error::Call(CallError::InputCount { expected: 1, got: 0, .. }), ["kernel `add_one`", "`inp`", "got 0"]),
        row!("two inputs for one", f => f.add.call([&f.x, &f.x]).output([8], DType::F32).grid([8, 1, 1]).on(&f.stream).prepare(),
            Error::Call(CallError::InputCount { expected: 1, got: 2, .. }), ["kernel `add_one`", "`inp`", "got 2"]),
        row!("no output given", f => f.add.call([&f.x]).template("OFFSET", 1).grid([8, 1, 1]).on(&f.stream).prepare(),
            Error::Call(CallError::OutputCount { expected: 1, got: 0, .. }), ["kernel `add_one`", "`out`", "got 0"]),
        row!("two outputs for one", f => f.good(&f.add).output([8], DType::F32).prepare(),
            Error::Call(CallError::OutputCount { expected: 1, got: 2, .. }), ["kernel `add_one`", "`out`", "got 2"]),
        // ---- output shapes ----
        row!("negative output extent", f => f.add.call([&f.x]).template("OFFSET", 1).output([-1], DType::F32).grid([8, 1, 1]).on(&f.stream).prepare(),
            Error::Call(CallError::OutputShape { .. }), ["kernel `add_one`", "output `out`", "[-1]", "negative"]),
        row!("zero output extent", f => f.add.call([&f.x]).template("OFFSET", 1).output([0], DType::F32).grid([8, 1, 1]).on(&f.stream).prepare(),
            Error::Call(CallError::OutputShape { .. }), ["kernel `add_one`", "output `out`", "[0]"]),
        row!("zero extent inside an output shape", f => f.add.call([&f.x]).template("OFFSET", 1).output([4, 0, 2], DType::F32).grid([8, 1, 1]).on(&f.stream).prepare(),
            Error::Call(CallError::OutputShape { .. }), ["kernel `add_one`", "output `out`", "[4, 0, 2]"]),
        row!("output element count overflows", f => f.add.call([&f.x]).template("OFFSET", 1).output([i64::MAX, 2], DType::F32).grid([8, 1, 1]).on(&f.stream).prepare(),
            Error::Call(CallError::OutputShape { .. }), ["kernel `add_one`", "output `out`", "overflows"]),
        row!("output byte size overflows", f => f.add.call([&f.x]).template("OFFSET", 1).output([1 << 61], DType::F64).grid([8, 1, 1]).on(&f.stream).prepare(),
            Error::Call(CallError::OutputShape { .. }), ["kernel `add_one`", "output `out`", "overflows"]),
        row!("output larger than the address space", f => f.add.call([&f.x]).template("OFFSET", 1).output([1 << 24, 1 << 24], DType::F32).grid([8, 1, 1]).on(&f.stream).launch(),
            Error::Call(CallError::OutputAlloc { .. }), ["kernel `add_one`", "output `out`", "cannot allocate"]),
        // ---- grid and threadgroup ----
        row!("missing grid", f => f.add.call([&f.x]).template("OFFSET", 1).output([8], DType::F32).on(&f.stream).prepare(),
            Error::Call(CallError::MissingGrid { .. }), ["kernel `add_one`", "grid"]),
        row!("zero grid x", f => f.good(&f.add).grid([0, 1, 1]).prepare(),
            Error::Call(CallError::Dims { what: "grid", .. }), ["kernel `add_one`", "grid [0, 1, 1]", "at least 1"]),
        row!("zero grid z", f => f.good(&f.add).grid([8, 1, 0]).prepare(),
            Error::Call(CallError::Dims { what: "grid", .. }), ["kernel `add_one`", "grid [8, 1, 0]"]),
        row!("grid extent over 32 bits", f => f.good(&f.add).grid([1 << 32, 1, 1]).prepare(),
            Error::Call(CallError::Dims { what: "grid", .. }), ["kernel `add_one`", "grid", "at most 4294967295"]),
        row!("grid thread count overflows 32 bits", f => f.good(&f.add).grid([65536, 65536, 2]).prepare(),
            Error::Call(CallError::Dims { what: "grid", .. }), ["kernel `add_one`", "grid [65536, 65536, 2]", "overflows 32 bits"]),
        row!("grid thread count overflows 64 bits", f => f.good(&f.add).grid([u32::MAX as u64, u32::MAX as u64, u32::MAX as u64]).prepare(),
            Error::Call(CallError::Dims { what: "grid", .. }), ["kernel `add_one`", "grid", "overflows"]),
        row!("zero threadgroup", f => f.good(&f.add).threadgroup([0, 1, 1]).prepare(),
            Error::Call(CallError::Dims { what: "threadgroup", .. }), ["kernel `add_one`", "threadgroup [0, 1, 1]", "at least 1"]),
        row!("threadgroup over the thread limit", f => f.good(&f.add).threadgroup([2048, 1, 1]).prepare(),
            Error::Call(CallError::Dims { what: "threadgroup", .. }), ["kernel `add_one`", "threadgroup [2048, 1, 1]", "at most 1024"]),
        row!("threadgroup product over the limit", f => f.good(&f.add).threadgroup([32, 32, 2]).prepare(),
            Error::Call(CallError::Dims { what: "threadgroup", .. }), ["kernel `add_one`", "threadgroup [32, 32, 2]"]),
        row!([no_shared_memory] "shared memory on the CPU", f => f.good(&f.add).shared_memory(1024).prepare(),
            Error::Call(CallError::Dims { what: "shared memory", .. }), ["kernel `add_one`", "shared memory", "on {device}", "no dynamic shared memory"]),
        row!([has_shared_memory] "shared memory over the device's limit", f => f.good(&f.add).shared_memory(f.device.limits().max_shared_bytes as u32 + 1).prepare(),
            Error::Call(CallError::Dims { what: "shared memory", .. }), ["kernel `add_one`", "shared memory", "on {device}", "at most"]),
        row!("input extent over 32 bits where the body reads its shape", f => f.x.slice(&[[0, 1, 1]])
                .and_then(|one| one.broadcast_to(&[1 << 31]))
                .and_then(|big| f.shape_user.call([&big]).output([8], DType::F32).grid([8, 1, 1]).on(&f.stream).prepare()),
            Error::Call(CallError::InputShape { .. }), ["kernel `shape_user`", "input `inp`", "[2147483648]", "32-bit"]),
        // ---- template arguments ----
        row!("template named like the input", f => f.good(&f.add).template("inp", 2).prepare(),
            Error::Call(CallError::TemplateName { .. }), ["kernel `add_one`", "template argument `inp`", "input `inp`"]),
        row!("template named like the output", f => f.good(&f.add).template("out", true).prepare(),
            Error::Call(CallError::TemplateName { .. }), ["kernel `add_one`", "template argument `out`", "output `out`"]),
        row!("template name not an identifier", f => f.good(&f.add).template("1N", 2).prepare(),
            Error::Call(CallError::TemplateName { .. }), ["kernel `add_one`", "template argument `1N`", "not usable"]),
        row!("template name injecting code", f => f.good(&f.add).template("N> void evil(); template <int M", 2).prepare(),
            Error::Call(CallError::TemplateName { .. }), ["kernel `add_one`", "template argument `N> void evil()"]),
        row!("empty template name", f => f.good(&f.add).template("", 2).prepare(),
            Error::Call(CallError::TemplateName { .. }), ["kernel `add_one`", "template argument ``", "empty"]),
        row!("template name is a keyword", f => f.good(&f.add).template("int", 2).prepare(),
            Error::Call(CallError::TemplateName { .. }), ["kernel `add_one`", "template argument `int`", "reserved"]),
        row!("template name with a NUL byte", f => f.good(&f.add).template("N\0", 2).prepare(),
            Error::Call(CallError::TemplateName { .. }), ["kernel `add_one`", "template argument `N\\0`"]),
        row!("template named like a generated parameter", f => f.good(&f.add).template("inp_shape", 2).prepare(),
            Error::Call(CallError::TemplateName { .. }), ["kernel `add_one`", "template argument `inp_shape`", "input `inp`"]),
        row!("template given twice", f => f.good(&f.add).template("OFFSET", 2).prepare(),
            Error::Call(CallError::TemplateName { .. }), ["kernel `add_one`", "template argument `OFFSET`", "twice"]),
        row!("template named like a position attribute", f => f.good(&f.add).template("grid_size", 2).prepare(),
            Error::Call(CallError::TemplateName { .. }), ["kernel `add_one`", "template argument `grid_size`", "position attribute"]),
        // ---- init_value ----
        row!("fractional init_value for int32", f => f.add.call([&f.x]).template("OFFSET", 1).output([8], DType::I32).grid([8, 1, 1]).init_value(0.5).on(&f.stream).prepare(),
            Error::Call(CallError::InitValue { dtype: DType::I32, .. }), ["kernel `add_one`", "output `out`", "0.5", "int32"]),
        row!("negative init_value for uint32", f => f.add.call([&f.x]).template("OFFSET", 1).output([8], DType::U32).grid([8, 1, 1]).init_value(-1.0).on(&f.stream).prepare(),
            Error::Call(CallError::InitValue { .. }), ["kernel `add_one`", "output `out`", "uint32"]),
        row!("init_value over uint8", f => f.add.call([&f.x]).template("OFFSET", 1).output([8], DType::U8).grid([8, 1, 1]).init_value(300.0).on(&f.stream).prepare(),
            Error::Call(CallError::InitValue { .. }), ["kernel `add_one`", "output `out`", "300", "uint8"]),
        row!("NaN init_value for int64", f => f.add.call([&f.x]).template("OFFSET", 1).output([8], DType::I64).grid([8, 1, 1]).init_value(f64::NAN).on(&f.stream).prepare(),
            Error::Call(CallError::InitValue { .. }), ["kernel `add_one`", "output `out`", "NaN"]),
        row!("init_value 2 for bool", f => f.add.call([&f.x]).template("OFFSET", 1).output([8], DType::Bool).grid([8, 1, 1]).init_value(2.0).on(&f.stream).prepare(),
            Error::Call(CallError::InitValue { .. }), ["kernel `add_one`", "output `out`", "bool"]),
        row!("init_value over int32", f => f.add.call([&f.x]).template("OFFSET", 1).output([8], DType::I32).grid([8, 1, 1]).init_value(1e10).on(&f.stream).prepare(),
            Error::Call(CallError::InitValue { .. }), ["kernel `add_one`", "output `out`", "int32"]),
        // ---- what the backend or dialect lacks ----
        row!([portable_dialect] "texture in a header", f => f.good(&f.texture).prepare(),
            Error::Call(CallError::Unsupported { .. }), ["kernel `with_texture`", "the {backend} backend", "texture2d", "Metal textures"]),
        row!("texture in a header, CUDA source", f => f.good(&f.texture).generate(Dialect::Cuda),
            Error::Call(CallError::Unsupported { backend: "cuda", .. }), ["kernel `with_texture`", "texture2d"]),
        row!([not_cuda_dialect] "CUDA C++ body off CUDA", f => f.good(&f.cuda_body).prepare(),
            Error::Call(CallError::Unsupported { .. }), ["kernel `cuda_body`", "the {backend} backend", "CUDA C++", "cuda_kernel"]),
        row!("CUDA C++ body as Metal", f => f.good(&f.cuda_body).generate(Dialect::Metal),
            Error::Call(CallError::Unsupported { backend: "metal", .. }), ["kernel `cuda_body`", "CUDA C++"]),
        row!([refuses_cuda_words] "__syncthreads body on the CPU", f => f.good(&f.syncthreads).prepare(),
            Error::Call(CallError::Unsupported { .. }), ["kernel `with_syncthreads`", "__syncthreads"]),
        row!("float64 input in Metal", f => f.add.call([&f.x64]).template("OFFSET", 1).output([8], DType::F32).generate(Dialect::Metal),
            Error::Call(CallError::UnsupportedDType { dtype: DType::F64, .. }), ["kernel `add_one`", "input `inp`", "float64", "metal"]),
        row!("float64 output in Metal", f => f.add.call([&f.x]).template("OFFSET", 1).output([8], DType::F64).generate(Dialect::Metal),
            Error::Call(CallError::UnsupportedDType { dtype: DType::F64, .. }), ["kernel `add_one`", "output `out`", "float64", "metal"]),
        // A float64 *template* type is accepted in Metal, as MLX accepts it
        // (golden case `dtype_float64_template`): only inputs and outputs
        // are refused there.
        row!("float64 input and output in Metal", f => f.add.call([&f.x64]).template("OFFSET", 1).output([8], DType::F64).generate(Dialect::Metal),
            Error::Call(CallError::UnsupportedDType { dtype: DType::F64, .. }), ["kernel `add_one`", "input `inp`", "float64"]),
        // ---- arrays ----
        row!("data length does not match the shape", f => f.device.array_from_slice(&[1.0f32, 2.0], [3]),
            Error::Array(ArrayError::Length { len: 2, expected: 3, .. }), ["2 elements", "[3]"]),
        row!("array shape overflows", f => f.device.array_from_slice(&[1.0f32], [usize::MAX, 2]),
            Error::Array(ArrayError::Overflow(_)), ["too large"]),
        row!("zeros with an overflowing shape", f => kernelkit::Array::zeros(&f.device, [1 << 40, 1 << 40], DType::F32),
            Error::Array(ArrayError::Overflow(_)), ["too large"]),
        row!([host_memory] "zeros larger than the address space", f => kernelkit::Array::zeros(&f.device, [1 << 48], DType::F32),
            Error::Device(DeviceError::Driver { operation: "allocate", .. }), ["{device}", "allocate"]),
        row!([cuda] "zeros larger than the device's memory", f => kernelkit::Array::zeros(&f.device, [1 << 48], DType::F32),
            Error::Device(DeviceError::Driver { .. }), ["{device}", "cuMemAlloc"]),
        row!("to_vec with the wrong element type", f => f.x.to_vec::<i32>(),
            Error::Array(ArrayError::DType { asked: DType::I32, actual: DType::F32 }), ["int32", "float32"]),
        row!("permute with a repeated axis", f => f.m.permute(&[0, 0]),
            Error::Array(ArrayError::View(_)), ["permute", "[0, 0]"]),
        row!("permute with too few axes", f => f.m.permute(&[1]),
            Error::Array(ArrayError::View(_)), ["permute", "[1]", "[2, 3]"]),
        row!("permute with an axis out of range", f => f.m.permute(&[0, 5]),
            Error::Array(ArrayError::View(_)), ["permute", "[0, 5]"]),
        row!("slice with step 0", f => f.m.slice(&[[0, 2, 0]]),
            Error::Array(ArrayError::View(_)), ["slice", "step 0"]),
        row!("slice with start past stop", f => f.m.slice(&[[0, 2, 1], [3, 1, 1]]),
            Error::Array(ArrayError::View(_)), ["slice", "axis 1", "start 3"]),
        row!("slice with more ranges than axes", f => f.m.slice(&[[0, 1, 1], [0, 1, 1], [0, 1, 1]]),
            Error::Array(ArrayError::View(_)), ["slice", "3 ranges for 2 axes"]),
        row!("broadcast to an incompatible shape", f => f.m.broadcast_to(&[2, 4]),
            Error::Array(ArrayError::View(_)), ["broadcast", "[2, 3]", "[2, 4]"]),
        row!("broadcast to fewer axes", f => f.m.broadcast_to(&[3]),
            Error::Array(ArrayError::View(_)), ["broadcast", "[3]"]),
        row!("broadcast to an overflowing shape", f => f.m.broadcast_to(&[usize::MAX, 2, 3]),
            Error::Array(ArrayError::Overflow(_)), ["too large"]),
        row!("read back a broadcast larger than memory", f => f.x.slice(&[[0, 1, 1]]).and_then(|one| one.broadcast_to(&[1 << 50])).and_then(|b| b.to_vec::<f32>()),
            Error::Array(ArrayError::Overflow(_)), ["too large"]),
        // ---- devices ----
        row!("unknown device name", f => Device::from_name("gpu"),
            Error::Device(DeviceError::Unavailable { .. }), ["gpu", "cuda:N"]),
        row!("bad CUDA ordinal", f => Device::from_name("cuda:x"),
            Error::Device(DeviceError::Unavailable { .. }), ["cuda:x"]),
    ]
}

/// Every row for the device's backend fails with its typed error, whose
/// message holds the row's words.
pub fn every_bad_input_is_a_typed_error_naming_its_argument(device: Device) {
    let fx = fixture(device);
    let rows: Vec<Row> = rows().into_iter().filter(|row| (row.on)(&fx)).collect();
    assert!(rows.len() >= 40, "the matrix has {} rows", rows.len());
    let mut failures = Vec::new();
    for row in &rows {
        match catch_unwind(AssertUnwindSafe(|| (row.run)(&fx))) {
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!("{}: panicked: {msg}", row.what));
            }
            Ok(Ok(())) => {
                failures.push(format!("{}: no error, expected {}", row.what, row.variant))
            }
            Ok(Err(e)) => {
                let text = e.to_string();
                if !(row.matches)(&e) {
                    failures.push(format!(
                        "{}: expected {}, got {e:?} ({text})",
                        row.what, row.variant
                    ));
                }
                for word in row.contains.iter().map(|w| fx.word(w)) {
                    if !text.contains(&word) {
                        failures.push(format!("{}: message lacks {word:?}: {text}", row.what));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// The rows change one thing of a valid call: that call must pass, so the
/// errors above come from the change and not from the fixture.
pub fn the_unchanged_call_is_accepted(device: Device) {
    let fx = fixture(device);
    let launch = fx
        .good(&fx.add)
        .prepare()
        .expect("the fixture's call is valid");
    assert_eq!(launch.dims(), ([8, 1, 1], [8, 1, 1]));
    fx.good(&fx.add)
        .generate(Dialect::Metal)
        .expect("float32 is fine in Metal");
    build("k_ok", &["inp", "inp2"], &["out"], BODY, "#define X 1\n").expect("valid names");
}

/// An array of another device object of the same kind and ordinal (its
/// own caches, the same memory) is a valid input: every CPU device object
/// shares host memory, every device object of one GPU that GPU's memory,
/// every null device host memory.
pub fn arrays_of_another_device_object_are_accepted(device: Device) {
    let fx = fixture(device);
    let other = match fx.device.kind() {
        DeviceKind::Cpu => Device::new_cpu(),
        DeviceKind::Cuda => Device::new_cuda(fx.device.id().ordinal).unwrap(),
        DeviceKind::Null => {
            Device::new_null_with(kernelkit::NullOptions::default().dialect(fx.device.dialect()))
        }
    };
    assert_ne!(other.id(), fx.device.id());
    assert!(other.id().same_memory(&fx.device.id()));
    let y = other.array_from_slice(&[2.0f32; 8], [8]).unwrap();
    fx.add
        .call([&y])
        .template("OFFSET", 1)
        .output([8], DType::F32)
        .grid([8, 1, 1])
        .on(&fx.stream)
        .prepare()
        .expect("device objects of one kind and ordinal share memory");
}

/// An array of a device of another kind is refused with `WrongDevice`,
/// naming both devices, before anything is compiled. (Before the null
/// device, this needed a GPU: a CPU array on a CUDA device.)
pub fn arrays_of_another_device_kind_are_refused(device: Device) {
    let fx = fixture(device);
    let other = match fx.device.kind() {
        DeviceKind::Null => Device::new_cpu(),
        _ => Device::new_null(),
    };
    assert!(!other.id().same_memory(&fx.device.id()));
    let y = other.array_from_slice(&[2.0f32; 8], [8]).unwrap();
    let call = || {
        fx.add
            .call([&y])
            .template("OFFSET", 1)
            .output([8], DType::F32)
            .grid([8, 1, 1])
            .on(&fx.stream)
    };
    for result in [call().prepare().map(drop), call().launch().map(drop)] {
        match result {
            Err(Error::Call(e @ CallError::WrongDevice { .. })) => {
                let text = e.to_string();
                for word in [
                    "kernel `add_one`".to_string(),
                    "input `inp`".to_string(),
                    format!("on device {}", other.label()),
                    format!("runs on {}", fx.device.label()),
                ] {
                    assert!(text.contains(&word), "{text} lacks {word:?}");
                }
            }
            other => panic!("expected WrongDevice, got {other:?}"),
        }
    }
    assert_eq!(fx.device.cache_stats().compiles, 0);
    assert!(fx.device.recorded_launches().is_empty());
}
