//! Spec files: one call of one kernel, written in JSON.
//!
//! A spec file describes a call the way MLX's `mx.fast.metal_kernel` is
//! called, so a kernel written for MLX can be described without
//! translation. The `kernelkit source` and `kernelkit run` commands read
//! them, the golden tests are written in them, and the Python package can
//! load them; all through this one reader.
//!
//! ```json
//! {"name": "basic",
//!  "inputs": [["a", "float32", [2, 2]], ["b", "int32", [3]], ["d", "float32", []]],
//!  "outputs": [["out1", "float32", [2, 2]]],
//!  "source": "uint elem = thread_position_in_grid.x; out1[elem] = a[elem] + b[0] + d;",
//!  "header": "",
//!  "ensure_row_contiguous": true,
//!  "atomic_outputs": false,
//!  "template": [["T", "float16"], ["f", 3], ["e", true]],
//!  "grid": [4, 1, 1],
//!  "threadgroup": [2, 1, 1],
//!  "init_value": null,
//!  "data": {"a": [[1.0, 2.0], [3.0, 4.0]], "b": "b.npy", "d": 7.3},
//!  "views": {"a": {"transpose": [1, 0]}}}
//! ```
//!
//! - Required: `name`, `inputs`, `outputs`, `source`. Inputs and outputs are
//!   `[name, dtype, shape]`, dtype names as in MLX ([`DType::from_name`]).
//! - Optional: `header` (default `""`), `ensure_row_contiguous` (default
//!   true), `atomic_outputs` (default false), `template` (a list of
//!   `[name, value]`: a JSON string is a dtype, an integer an `int` (it must
//!   fit in 32 bits), `true`/`false` a `bool`), `language` (`"metal"`, the
//!   default, as MLX's `metal_kernel`, or `"cuda"`: the body and header are
//!   CUDA C++, as MLX's `cuda_kernel`, and run on CUDA devices only),
//!   `compile_options` (MLX's: `{"math_mode": "safe" | "relaxed" |
//!   "fast"}`, default safe; see [`MathMode`]).
//! - The launch and its data, checked whenever a file is read (so one file
//!   serves both commands) and used by whoever runs the call: `grid` (1 to
//!   3 extents, missing ones are 1; `kernelkit run` requires it),
//!   `threadgroup`, `init_value` (a number, `"inf"`, `"-inf"`, `"nan"` or
//!   null), `data` (per input: a JSON value — see [`data`] — or the path of
//!   a `.npy` file relative to the spec file — see [`npy`]) and `views`
//!   (per input: one view, or a list applied in order; see [`View`]).
//!
//! **Unknown fields are rejected**, at every level, with the closest known
//! name when there is one: a misspelt `ensure_row_contigous` silently
//! ignored would run a different kernel than the one the user meant.
//!
//! **Limits**, checked before anything is sized from them: a spec file is
//! at most [`MAX_SPEC_BYTES`] (larger data belong in `.npy` files); a
//! shape, a broadcast target, a transpose or a slice has at most
//! [`MAX_NDIM`] axes; a shape's bytes must be addressable; JSON nests at
//! most 128 deep (`serde_json`'s limit). Messages are one line and quote at
//! most a few dozen characters of a value or name, whatever its size. No
//! input makes a reader panic, recurse without bound or allocate from a
//! size it has not checked against the data in hand (the `spec_data` fuzz
//! target in `fuzz/` holds them to it).
//!
//! ```no_run
//! use kernelkit::spec_file::SpecFile;
//! use kernelkit::Device;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let spec = SpecFile::from_path("examples/specs/basic.json".as_ref())?;
//! let kernel = spec.kernel()?;
//! let device = Device::cpu();
//! let inputs = spec.input_arrays(&device)?;
//! let outputs = spec
//!     .call(&kernel, &inputs)
//!     .grid(spec.grid.unwrap_or([1, 1, 1]))
//!     .on(device.default_stream())
//!     .launch()?;
//! # Ok(()) }
//! ```
//!
//! The floor: the top one, beside nothing and above `kernel` (it builds
//! [`Kernel`]s and [`Call`]s, and [`Array`]s on a [`Device`](crate::Device)); no module of
//! the library imports it. Files: `read` (the checking reader), `write`
//! (serialization back to a spec file), `inputs` (the call's input arrays
//! from `data` and `views`), [`data`] (inline JSON data), [`npy`] (`.npy`
//! files in and out), `error` and `message` (the errors and how they quote).

use std::borrow::Cow;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::array::Array;
use crate::codegen::math::MathMode;
use crate::codegen::template::TemplateArg;
use crate::codegen::BodyLanguage;
use crate::dtype::DType;
use crate::kernel::call::Call;
use crate::kernel::Kernel;

pub mod data;
mod error;
mod inputs;
mod message;
pub mod npy;
mod read;
pub mod tune_configs;
mod write;

pub use data::DataError;
pub use error::SpecError;
pub use inputs::InputError;
pub use npy::NpyError;

/// The most axes a shape (or a view's axis list) may have: NumPy's own
/// limit (`NPY_MAXDIMS`), so any array NumPy can hold fits, and every
/// walk over axes is bounded.
pub const MAX_NDIM: usize = 64;

/// The largest spec file read: inline data are for small inputs, a file
/// that never ends (`/dev/zero`, a pipe) must not fill memory, and parsing
/// a whole file of this size as JSON peaks near 0.6 GB (a 64 MiB file of
/// numbers took 2.1 GB).
pub const MAX_SPEC_BYTES: u64 = 16 << 20;

/// An input or output: name, dtype, shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Port {
    /// The name the body uses.
    pub name: String,
    /// The element type.
    pub dtype: DType,
    /// The shape (for an input: the shape of its data, before any view).
    pub shape: Vec<usize>,
}

/// One view applied to an input's data before the call, making the input a
/// real strided array (this is what exercises `ensure_row_contiguous` and
/// `NAME_strides` from a spec file).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum View {
    /// `{"transpose": [1, 0]}`: an axis permutation (axis `i` of the result
    /// is axis `axes[i]` of the data).
    Transpose(Vec<usize>),
    /// `{"slice": [[start, stop, step], ...]}`: per leading axis (step 1
    /// when only `[start, stop]` is given); axes not listed are kept whole.
    Slice(Vec<[usize; 3]>),
    /// `{"broadcast": [2, 3]}`: a target shape, NumPy rules.
    Broadcast(Vec<usize>),
}

/// Where an input's data comes from.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum DataSource {
    /// A JSON number, flat list or nested list (see [`data`]).
    Inline(serde_json::Value),
    /// A `.npy` file (already joined to the spec's folder; see [`npy`]).
    Npy(PathBuf),
}

/// A read and checked spec file: every field of the format, defaults
/// filled in.
///
/// Build one with [`SpecFile::from_path`] or [`SpecFile::from_json`];
/// write one with [`SpecFile::to_json`] (or through its `Serialize`), which
/// reads back to the same spec.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct SpecFile {
    /// The kernel's name.
    pub name: String,
    /// Inputs, in call order.
    pub inputs: Vec<Port>,
    /// Outputs, in call order.
    pub outputs: Vec<Port>,
    /// The body.
    pub source: String,
    /// Code placed before the kernel function.
    pub header: String,
    /// Copy strided inputs to row-contiguous ones (default true).
    pub ensure_row_contiguous: bool,
    /// Declare outputs `atomic<T>` (default false).
    pub atomic_outputs: bool,
    /// The language of the body and header (default Metal, MLX's
    /// `metal_kernel`; CUDA C++ is MLX's `cuda_kernel`).
    #[serde(
        skip_serializing_if = "write::is_metal",
        serialize_with = "write::language"
    )]
    pub language: BodyLanguage,
    /// The floating-point math mode (MLX's `compile_options={"math_mode":
    /// ...}`; default safe), written as that object when not safe.
    #[serde(
        rename = "compile_options",
        skip_serializing_if = "write::is_safe",
        serialize_with = "write::compile_options"
    )]
    pub math_mode: MathMode,
    /// Template arguments, in order.
    #[serde(serialize_with = "write::template")]
    pub template: Vec<(String, TemplateArg)>,
    /// The grid in threads, if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid: Option<[u64; 3]>,
    /// The threadgroup, if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threadgroup: Option<[u64; 3]>,
    /// The value outputs are filled with before the launch.
    #[serde(serialize_with = "write::init_value")]
    pub init_value: Option<f64>,
    /// Data per input name, in the order of `inputs` (absent ones omitted).
    #[serde(serialize_with = "write::by_input")]
    pub data: Vec<(String, DataSource)>,
    /// Views per input name, applied in order.
    #[serde(serialize_with = "write::by_input")]
    pub views: Vec<(String, Vec<View>)>,
}

impl SpecFile {
    /// Reads and checks a spec file; `.npy` paths in `data` are taken
    /// relative to its folder. A file larger than [`MAX_SPEC_BYTES`] is
    /// refused without reading the rest of it.
    pub fn from_path(path: &Path) -> Result<SpecFile, SpecError> {
        let read_error = |source| SpecError::Read {
            path: path.display().to_string(),
            source,
        };
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_SPEC_BYTES + 1).read_to_string(&mut text))
            .map_err(read_error)?;
        if text.len() as u64 > MAX_SPEC_BYTES {
            return Err(read_error(std::io::Error::other(format!(
                "it is larger than {} MiB (put large data in .npy files)",
                MAX_SPEC_BYTES >> 20
            ))));
        }
        let base = path.parent().unwrap_or(Path::new(""));
        SpecFile::from_json(&text, base)
    }

    /// Reads and checks spec text; `.npy` paths in `data` are joined to
    /// `base_dir` (the folder of the file the text came from).
    pub fn from_json(text: &str, base_dir: &Path) -> Result<SpecFile, SpecError> {
        let value = serde_json::from_str(text).map_err(SpecError::Json)?;
        read::spec_file(value, base_dir)
    }

    /// The spec as JSON text, on one line. Every field is written,
    /// defaults included (`init_value` NaN and infinities as `"nan"`,
    /// `"inf"`, `"-inf"`), and `.npy` paths as held: already joined to the
    /// folder the spec was read from. So the text reads back to the same
    /// spec with [`SpecFile::from_json`] from the current folder (a
    /// `base_dir` of `""`), and from anywhere when those paths are
    /// absolute.
    ///
    /// Fails only for a `.npy` path that is not UTF-8 (JSON cannot hold it).
    pub fn to_json(&self) -> Result<String, SpecError> {
        serde_json::to_string(self).map_err(SpecError::Write)
    }

    /// Builds the kernel (the library validates the names).
    pub fn kernel(&self) -> crate::Result<Kernel> {
        self.builder().build()
    }

    /// The builder of [`SpecFile::kernel`], for a caller that sets more
    /// (`kernelkit run --check-bounds`).
    pub fn builder(&self) -> crate::KernelBuilder {
        Kernel::builder(self.name.as_str())
            .inputs(self.inputs.iter().map(|p| p.name.as_str()))
            .outputs(self.outputs.iter().map(|p| p.name.as_str()))
            .source(self.source.as_str())
            .header(self.header.as_str())
            .ensure_row_contiguous(self.ensure_row_contiguous)
            .atomic_outputs(self.atomic_outputs)
            .language(self.language)
            .math_mode(self.math_mode)
    }

    /// A call of `kernel` on `inputs` with this spec's outputs and template
    /// arguments. The launch (`grid`, `threadgroup`, `init_value`, the
    /// stream) is the caller's to add: `kernelkit source` compiles a call
    /// without running it, `kernelkit run` requires a grid.
    pub fn call<'a>(&'a self, kernel: &'a Kernel, inputs: &'a [Array]) -> Call<'a> {
        let mut call = kernel.call(inputs);
        for out in &self.outputs {
            call = call.output(out.shape.iter().map(|&d| d as i64), out.dtype);
        }
        for (name, value) in &self.template {
            call = call.template(Cow::Borrowed(name.as_str()), *value);
        }
        call
    }

    /// The data given for an input, if any.
    pub fn data_for(&self, input: &str) -> Option<&DataSource> {
        self.data.iter().find(|(n, _)| n == input).map(|(_, d)| d)
    }

    /// The views given for an input (empty if none).
    pub fn views_for(&self, input: &str) -> &[View] {
        self.views
            .iter()
            .find(|(n, _)| n == input)
            .map_or(&[], |(_, v)| v.as_slice())
    }
}
