//! Kernel spec files (JSON), shared by `kernelkit source` and `kernelkit run`.
//!
//! A spec file describes one call of one kernel the way MLX's
//! `mx.fast.metal_kernel` does, so a kernel written for MLX can be described
//! without translation:
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
//!   CUDA C++, as MLX's `cuda_kernel`, and run on CUDA devices only).
//! - For `kernelkit run` (validated by `source` too, so one file serves both):
//!   `grid` (required by `run`; 1 to 3 extents, missing ones are 1),
//!   `threadgroup`, `init_value` (a number, `"inf"`, `"-inf"`, `"nan"` or
//!   null), `data` (per input: a JSON value, or a path to a `.npy` file
//!   relative to the spec file) and `views` (per input: one view, or a list
//!   applied in order; see [`View`]).
//!
//! **Unknown fields are rejected**, at every level, with the closest known
//! name when there is one: a misspelt `ensure_row_contigous` silently
//! ignored would run a different kernel than the one the user meant.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use kernelkit::{Array, BodyLanguage, Call, DType, Kernel, TemplateArg};
use serde_json::{Map, Value};

/// The spec format in brief, for `kernelkit run --help` and `kernelkit source --help`.
pub const HELP: &str = "\
Spec file (JSON), e.g. examples/specs/basic.json:
  name, source                 strings (required)
  inputs, outputs              [[name, dtype, shape], ...] (required); dtypes as in MLX:
                               bool uint8..uint64 int8..int64 float16 bfloat16 float32 float64 complex64
  header                       string (default \"\")
  ensure_row_contiguous        bool (default true)
  atomic_outputs               bool (default false)
  language                     \"metal\" (default; MLX's metal_kernel) or \"cuda\" (CUDA C++; CUDA devices only)
  template                     [[name, value], ...]: string = dtype, integer = int, true/false = bool
  grid, threadgroup            [x, y, z] in threads (grid required by `run`)
  init_value                   number, \"inf\", \"-inf\", \"nan\" or null: fills the outputs first
  data                         {input: number | flat list | nested list | \"file.npy\" (relative to the spec)}
  views                        {input: {\"transpose\": axes} | {\"slice\": [[start, stop, step], ...]}
                                       | {\"broadcast\": shape} | a list of these, applied in order}
Unknown fields are errors. Floats may be written \"nan\", \"inf\", \"-inf\" in data; complex values as [re, im].
bfloat16 .npy files use the ml_dtypes convention: raw 2-byte '<V2' (np.load(f).view(ml_dtypes.bfloat16)).";

/// The fields a spec file may have.
const FIELDS: &[&str] = &[
    "name",
    "inputs",
    "outputs",
    "source",
    "header",
    "ensure_row_contiguous",
    "atomic_outputs",
    "language",
    "template",
    "grid",
    "threadgroup",
    "init_value",
    "data",
    "views",
];

/// The kinds of view an input may have.
const VIEW_KINDS: &[&str] = &["transpose", "slice", "broadcast"];

/// A spec file that cannot be used. Each message is one line and names the
/// field (and the input, output or template argument) at fault.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The file could not be read.
    #[error("cannot read spec {path}: {source}")]
    Read {
        /// The spec's path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("spec is not valid JSON: {0}")]
    Json(serde_json::Error),
    /// A field this format does not have (most likely a typo).
    #[error("spec: unknown field `{field}`{hint}")]
    UnknownField {
        /// Where the field is, e.g. `ensure_row_contigous` or `views.a.tranpose`.
        field: String,
        /// " (did you mean `...`?)" or the list of known fields.
        hint: String,
    },
    /// A required field is absent.
    #[error("spec: missing field `{field}`{why}")]
    Missing {
        /// The field.
        field: &'static str,
        /// Why it is needed, when only one command needs it.
        why: &'static str,
    },
    /// A field has the wrong type or value.
    #[error("spec: {field}: {reason}")]
    Field {
        /// Where, quoted, e.g. "`inputs[1]` (`b`)" or "`grid`".
        field: String,
        /// What is wrong and what was expected.
        reason: String,
    },
}

fn bad(field: impl std::fmt::Display, reason: impl Into<String>) -> SpecError {
    SpecError::Field {
        field: format!("`{field}`"),
        reason: reason.into(),
    }
}

/// As [`bad`], for an entry that has a name (an input, output or template
/// argument): "`inputs[1]` (`b`)".
fn bad_named(field: &str, name: &str, reason: impl Into<String>) -> SpecError {
    SpecError::Field {
        field: format!("`{field}` (`{}`)", name.escape_debug()),
        reason: reason.into(),
    }
}

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
#[derive(Clone, Debug, PartialEq, Eq)]
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
pub enum DataSource {
    /// A JSON number, flat list or nested list.
    Inline(Value),
    /// A `.npy` file (already resolved against the spec's folder).
    Npy(PathBuf),
}

/// A parsed, validated spec file.
#[derive(Clone, Debug)]
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
    /// The language of the body and header (default Metal).
    pub language: BodyLanguage,
    /// Template arguments, in order.
    pub template: Vec<(String, TemplateArg)>,
    /// The grid in threads, if given.
    pub grid: Option<[u64; 3]>,
    /// The threadgroup, if given.
    pub threadgroup: Option<[u64; 3]>,
    /// The value outputs are filled with before the launch.
    pub init_value: Option<f64>,
    /// Data per input name, in the order of `inputs` (absent ones omitted).
    pub data: Vec<(String, DataSource)>,
    /// Views per input name, applied in order.
    pub views: Vec<(String, Vec<View>)>,
}

impl SpecFile {
    /// Reads and validates a spec file; `.npy` paths are resolved against
    /// its folder.
    pub fn load(path: &Path) -> Result<SpecFile, SpecError> {
        let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let base = path.parent().unwrap_or(Path::new(""));
        SpecFile::parse(&text, base)
    }

    /// Parses and validates spec text; `.npy` paths are resolved against
    /// `base`.
    pub fn parse(text: &str, base: &Path) -> Result<SpecFile, SpecError> {
        let value: Value = serde_json::from_str(text).map_err(SpecError::Json)?;
        let Value::Object(map) = value else {
            return Err(bad("(top level)", "expected a JSON object"));
        };
        check_fields(&map, FIELDS, "")?;
        let name = string(&map, "name")?.ok_or(SpecError::Missing {
            field: "name",
            why: "",
        })?;
        let inputs = ports(&map, "inputs")?;
        let outputs = ports(&map, "outputs")?;
        let source = string(&map, "source")?.ok_or(SpecError::Missing {
            field: "source",
            why: "",
        })?;
        let header = string(&map, "header")?.unwrap_or_default();
        let ensure_row_contiguous = boolean(&map, "ensure_row_contiguous")?.unwrap_or(true);
        let atomic_outputs = boolean(&map, "atomic_outputs")?.unwrap_or(false);
        let language = match string(&map, "language")? {
            None => BodyLanguage::Metal,
            Some(name) => BodyLanguage::from_name(&name).ok_or_else(|| {
                bad(
                    "language",
                    format!("`{}`: expected \"metal\" or \"cuda\"", name.escape_debug()),
                )
            })?,
        };
        let template = template(map.get("template"))?;
        let grid = dims(&map, "grid")?;
        let threadgroup = dims(&map, "threadgroup")?;
        let init_value = init_value(map.get("init_value"))?;
        let data = data(map.get("data"), &inputs, base)?;
        let views = views(map.get("views"), &inputs)?;
        Ok(SpecFile {
            name,
            inputs,
            outputs,
            source,
            header,
            ensure_row_contiguous,
            atomic_outputs,
            language,
            template,
            grid,
            threadgroup,
            init_value,
            data,
            views,
        })
    }

    /// Builds the kernel (the library validates the names).
    pub fn kernel(&self) -> kernelkit::Result<Kernel> {
        Kernel::builder(self.name.as_str())
            .inputs(self.inputs.iter().map(|p| p.name.as_str()))
            .outputs(self.outputs.iter().map(|p| p.name.as_str()))
            .source(self.source.as_str())
            .header(self.header.as_str())
            .ensure_row_contiguous(self.ensure_row_contiguous)
            .atomic_outputs(self.atomic_outputs)
            .language(self.language)
            .build()
    }

    /// A call of `kernel` on `inputs` with this spec's outputs and template
    /// arguments (the launch settings are the caller's to add).
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

/// Rejects keys of `map` not in `known`; `prefix` locates the map.
fn check_fields(map: &Map<String, Value>, known: &[&str], prefix: &str) -> Result<(), SpecError> {
    for key in map.keys() {
        if !known.contains(&key.as_str()) {
            let hint = match closest(key, known) {
                Some(k) => format!(" (did you mean `{k}`?)"),
                None => format!(" (expected one of: {})", known.join(", ")),
            };
            return Err(SpecError::UnknownField {
                field: format!("{prefix}{}", key.escape_debug()),
                hint,
            });
        }
    }
    Ok(())
}

/// The known name within edit distance 2 of `key`, if any.
fn closest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| (edit_distance(key, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// A short description of a JSON value's type, for messages.
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn string(map: &Map<String, Value>, field: &'static str) -> Result<Option<String>, SpecError> {
    match map.get(field) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(bad(field, format!("expected a string, found {}", kind(v)))),
    }
}

fn boolean(map: &Map<String, Value>, field: &'static str) -> Result<Option<bool>, SpecError> {
    match map.get(field) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(bad(
            field,
            format!("expected true or false, found {}", kind(v)),
        )),
    }
}

/// A non-negative integer that fits `usize`.
fn index(v: &Value) -> Option<usize> {
    v.as_u64().and_then(|n| usize::try_from(n).ok())
}

/// A list of non-negative integers; the error is the reason alone.
fn indices(v: &Value, what: &str) -> Result<Vec<usize>, String> {
    let Value::Array(items) = v else {
        return Err(format!(
            "expected {what} (a list of non-negative integers), found {}",
            kind(v)
        ));
    };
    items
        .iter()
        .map(|d| {
            index(d).ok_or_else(|| {
                format!("expected {what} (a list of non-negative integers), found {d}")
            })
        })
        .collect()
}

fn ports(map: &Map<String, Value>, field: &'static str) -> Result<Vec<Port>, SpecError> {
    let role = &field[..field.len() - 1];
    let v = map
        .get(field)
        .ok_or(SpecError::Missing { field, why: "" })?;
    let Value::Array(items) = v else {
        return Err(bad(
            field,
            format!("expected a list of [name, dtype, shape], found {}", kind(v)),
        ));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("{field}[{i}]");
        let parts = match item {
            Value::Array(p) if p.len() == 3 => p,
            _ => {
                return Err(bad(
                    at,
                    format!("expected [name, dtype, shape], found {item}"),
                ))
            }
        };
        let Value::String(name) = &parts[0] else {
            return Err(bad(
                at,
                format!("the {role} name must be a string, found {}", parts[0]),
            ));
        };
        let dtype = dtype_of(&parts[1]).map_err(|r| bad_named(&at, name, r))?;
        let shape = indices(&parts[2], "a shape").map_err(|r| bad_named(&at, name, r))?;
        out.push(Port {
            name: name.clone(),
            dtype,
            shape,
        });
    }
    Ok(out)
}

/// Parses a dtype name, with the list of names in the error.
fn dtype_of(v: &Value) -> Result<DType, String> {
    let names = || {
        DType::ALL
            .iter()
            .map(|d| d.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match v {
        Value::String(s) => DType::from_name(s).ok_or_else(|| {
            format!(
                "unknown dtype `{}` (expected one of: {})",
                s.escape_debug(),
                names()
            )
        }),
        other => Err(format!(
            "expected a dtype name, found {} (dtypes: {})",
            kind(other),
            names()
        )),
    }
}

fn template(v: Option<&Value>) -> Result<Vec<(String, TemplateArg)>, SpecError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let Value::Array(items) = v else {
        return Err(bad(
            "template",
            format!("expected a list of [name, value], found {}", kind(v)),
        ));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("template[{i}]");
        let (name, value) = match item {
            Value::Array(p) if p.len() == 2 => match &p[0] {
                Value::String(n) => (n, &p[1]),
                other => return Err(bad(at, format!("the name must be a string, found {other}"))),
            },
            _ => return Err(bad(at, format!("expected [name, value], found {item}"))),
        };
        let fail = |reason: String| bad_named(&at, name, reason);
        let arg = match value {
            Value::Bool(b) => TemplateArg::Bool(*b),
            Value::String(_) => TemplateArg::DType(dtype_of(value).map_err(fail)?),
            Value::Number(n) => match n.as_i64() {
                Some(k) => TemplateArg::Int(i32::try_from(k).map_err(|_| {
                    fail(format!("{k} does not fit a 32-bit int template argument"))
                })?),
                None if n.is_u64() => {
                    return Err(fail(format!(
                        "{n} does not fit a 32-bit int template argument"
                    )))
                }
                None => {
                    return Err(fail(format!(
                        "{n} is not an integer (template values are integers, true/false or dtype names)"
                    )))
                }
            },
            other => {
                return Err(fail(
                    format!(
                        "expected an integer, true/false or a dtype name, found {}",
                        kind(other)
                    ),
                ))
            }
        };
        out.push((name.clone(), arg));
    }
    Ok(out)
}

fn dims(map: &Map<String, Value>, field: &'static str) -> Result<Option<[u64; 3]>, SpecError> {
    let Some(v) = map.get(field) else {
        return Ok(None);
    };
    let list = indices(v, "1 to 3 extents").map_err(|r| bad(field, r))?;
    if list.is_empty() || list.len() > 3 {
        return Err(bad(
            field,
            format!("expected 1 to 3 extents, found {}", list.len()),
        ));
    }
    let mut out = [1u64; 3];
    for (o, d) in out.iter_mut().zip(list) {
        *o = d as u64;
    }
    Ok(Some(out))
}

/// A float written as a JSON number or as `"nan"`, `"inf"`, `"-inf"`
/// (JSON has no literal for those).
pub(crate) fn float_value(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "nan" | "NaN" => Some(f64::NAN),
            "inf" | "+inf" | "infinity" | "Infinity" => Some(f64::INFINITY),
            "-inf" | "-infinity" | "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

fn init_value(v: Option<&Value>) -> Result<Option<f64>, SpecError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => float_value(v).map(Some).ok_or_else(|| {
            bad(
                "init_value",
                format!("expected a number, \"inf\", \"-inf\", \"nan\" or null, found {v}"),
            )
        }),
    }
}

/// Checks that `key` names an input; returns its index.
fn input_index(key: &str, inputs: &[Port], field: &str) -> Result<usize, SpecError> {
    inputs.iter().position(|p| p.name == key).ok_or_else(|| {
        let names: Vec<&str> = inputs.iter().map(|p| p.name.as_str()).collect();
        bad(
            format!("{field}.{}", key.escape_debug()),
            format!(
                "`{}` is not an input (inputs: {})",
                key.escape_debug(),
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ),
        )
    })
}

fn data(
    v: Option<&Value>,
    inputs: &[Port],
    base: &Path,
) -> Result<Vec<(String, DataSource)>, SpecError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let Value::Object(map) = v else {
        return Err(bad(
            "data",
            format!(
                "expected an object of input name to data, found {}",
                kind(v)
            ),
        ));
    };
    let mut out: Vec<(usize, String, DataSource)> = Vec::with_capacity(map.len());
    for (key, value) in map {
        let i = input_index(key, inputs, "data")?;
        let source = match value {
            Value::String(path) => DataSource::Npy(base.join(path)),
            other => DataSource::Inline(other.clone()),
        };
        out.push((i, key.clone(), source));
    }
    out.sort_by_key(|(i, _, _)| *i);
    Ok(out.into_iter().map(|(_, k, s)| (k, s)).collect())
}

fn views(v: Option<&Value>, inputs: &[Port]) -> Result<Vec<(String, Vec<View>)>, SpecError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let Value::Object(map) = v else {
        return Err(bad(
            "views",
            format!(
                "expected an object of input name to view, found {}",
                kind(v)
            ),
        ));
    };
    let mut out = Vec::with_capacity(map.len());
    for (key, value) in map {
        input_index(key, inputs, "views")?;
        let at = format!("views.{}", key.escape_debug());
        let list: Vec<View> = match value {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| view(item, &format!("{at}[{i}]")))
                .collect::<Result<_, _>>()?,
            other => vec![view(other, &at)?],
        };
        out.push((key.clone(), list));
    }
    Ok(out)
}

fn view(v: &Value, at: &str) -> Result<View, SpecError> {
    let Value::Object(map) = v else {
        return Err(bad(
            at,
            format!(
                "expected {{\"transpose\": ...}}, {{\"slice\": ...}} or {{\"broadcast\": ...}}, found {}",
                kind(v)
            ),
        ));
    };
    check_fields(map, VIEW_KINDS, &format!("{at}."))?;
    let mut entries = map.iter();
    let (Some((kind_name, arg)), None) = (entries.next(), entries.next()) else {
        return Err(bad(
            at,
            "give exactly one of transpose, slice, broadcast per view (a list of views applies several in order)",
        ));
    };
    let at = format!("{at}.{kind_name}");
    Ok(match kind_name.as_str() {
        "transpose" => {
            View::Transpose(indices(arg, "an axis permutation").map_err(|r| bad(&at, r))?)
        }
        "broadcast" => View::Broadcast(indices(arg, "a target shape").map_err(|r| bad(&at, r))?),
        _ => {
            let Value::Array(ranges) = arg else {
                return Err(bad(
                    at,
                    format!(
                        "expected a list of [start, stop, step] per axis, found {}",
                        kind(arg)
                    ),
                ));
            };
            let mut out = Vec::with_capacity(ranges.len());
            for r in ranges {
                let parts = indices(r, "[start, stop, step]").map_err(|e| bad(&at, e))?;
                match parts[..] {
                    [start, stop] => out.push([start, stop, 1]),
                    [start, stop, step] => out.push([start, stop, step]),
                    _ => {
                        return Err(bad(
                            at,
                            format!("expected [start, stop, step] per axis, found {r}"),
                        ))
                    }
                }
            }
            View::Slice(out)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SpecFile, SpecError> {
        SpecFile::parse(text, Path::new("/specs"))
    }

    const MINIMAL: &str = r#""name": "k", "inputs": [["a", "float32", [4]]],
        "outputs": [["out", "float32", [4]]], "source": "out[0] = a[0];""#;

    #[test]
    fn defaults_apply() {
        let s = parse(&format!("{{{MINIMAL}}}")).unwrap();
        assert_eq!(s.header, "");
        assert!(s.ensure_row_contiguous);
        assert!(!s.atomic_outputs);
        assert_eq!(s.language, BodyLanguage::Metal);
        assert!(s.template.is_empty() && s.grid.is_none() && s.init_value.is_none());
    }

    #[test]
    fn language_is_metal_or_cuda() {
        let s = parse(&format!(r#"{{{MINIMAL}, "language": "cuda"}}"#)).unwrap();
        assert_eq!(s.language, BodyLanguage::Cuda);
        assert_eq!(s.kernel().unwrap().spec().language(), BodyLanguage::Cuda);
        let e = parse(&format!(r#"{{{MINIMAL}, "language": "opencl"}}"#)).unwrap_err();
        assert!(
            e.to_string().contains("`language`") && e.to_string().contains("\"cuda\""),
            "{e}"
        );
        let e = parse(&format!(r#"{{{MINIMAL}, "langauge": "cuda"}}"#)).unwrap_err();
        assert!(e.to_string().contains("did you mean `language`"), "{e}");
    }

    #[test]
    fn full_spec_parses() {
        let s = parse(
            r#"{"name": "basic",
             "inputs": [["a", "float32", [2, 2]], ["b", "int32", [3]], ["d", "float32", []]],
             "outputs": [["out1", "float32", [2, 2]]],
             "source": "x", "template": [["T", "float16"], ["f", -3], ["e", true]],
             "grid": [4], "threadgroup": [2, 1, 1], "init_value": "-inf",
             "data": {"d": 7.3, "b": "sub/b.npy", "a": [[1, 2], [3, 4]]},
             "views": {"a": [{"transpose": [1, 0]}, {"slice": [[0, 2], [1, 2, 1]]}],
                       "b": {"broadcast": [2, 3]}}}"#,
        )
        .unwrap();
        assert_eq!(s.inputs[2].shape, Vec::<usize>::new());
        assert_eq!(
            s.template,
            vec![
                ("T".to_string(), TemplateArg::DType(DType::F16)),
                ("f".to_string(), TemplateArg::Int(-3)),
                ("e".to_string(), TemplateArg::Bool(true)),
            ]
        );
        assert_eq!(s.grid, Some([4, 1, 1]));
        assert_eq!(s.init_value, Some(f64::NEG_INFINITY));
        // Data is kept in input order, paths resolved against the spec folder.
        let names: Vec<&str> = s.data.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b", "d"]);
        assert_eq!(
            s.data_for("b"),
            Some(&DataSource::Npy(PathBuf::from("/specs/sub/b.npy")))
        );
        assert_eq!(
            s.views_for("a"),
            &[
                View::Transpose(vec![1, 0]),
                View::Slice(vec![[0, 2, 1], [1, 2, 1]])
            ]
        );
        assert_eq!(s.views_for("b"), &[View::Broadcast(vec![2, 3])]);
        assert!(s.views_for("d").is_empty());
    }

    fn error(text: &str) -> String {
        let e = parse(text).unwrap_err().to_string();
        assert!(!e.contains('\n'), "not one line: {e}");
        e
    }

    #[test]
    fn unknown_fields_are_rejected_with_a_suggestion() {
        let e = error(&format!("{{{MINIMAL}, \"ensure_row_contigous\": false}}"));
        assert!(e.contains("unknown field `ensure_row_contigous`"), "{e}");
        assert!(e.contains("did you mean `ensure_row_contiguous`"), "{e}");
        let e = error(&format!("{{{MINIMAL}, \"colour\": 1}}"));
        assert!(e.contains("expected one of: name, inputs"), "{e}");
        let e = error(&format!(
            "{{{MINIMAL}, \"views\": {{\"a\": {{\"tranpose\": [0]}}}}}}"
        ));
        assert!(e.contains("`views.a.tranpose`"), "{e}");
        assert!(e.contains("did you mean `transpose`"), "{e}");
    }

    #[test]
    fn bad_fields_name_the_field_and_the_port() {
        let cases = [
            (
                r#"{"inputs": [], "outputs": [], "source": ""}"#,
                "missing field `name`",
            ),
            (
                r#"{"name": "k", "inputs": [["a", "flaot32", [4]]], "outputs": [], "source": ""}"#,
                "`inputs[0]` (`a`): unknown dtype `flaot32`",
            ),
            (
                r#"{"name": "k", "inputs": [["a", "float32", [-1]]], "outputs": [], "source": ""}"#,
                "`inputs[0]` (`a`): expected a shape",
            ),
            (
                r#"{"name": "k", "inputs": [], "outputs": [["o", "float32"]], "source": ""}"#,
                "`outputs[0]`: expected [name, dtype, shape]",
            ),
            (
                r#"{"name": "k", "inputs": [], "outputs": [], "source": 3}"#,
                "`source`: expected a string",
            ),
        ];
        for (text, expected) in cases {
            let e = error(text);
            assert!(e.contains(expected), "{e:?} lacks {expected:?}");
        }
    }

    #[test]
    fn template_values_are_checked() {
        let with = |t: &str| error(&format!("{{{MINIMAL}, \"template\": [[\"N\", {t}]]}}"));
        assert!(with("3.5").contains("`template[0]` (`N`): 3.5 is not an integer"));
        assert!(with("3.0").contains("is not an integer"));
        assert!(with("2147483648").contains("does not fit a 32-bit int"));
        assert!(with("-2147483649").contains("does not fit a 32-bit int"));
        assert!(with("18446744073709551615").contains("does not fit a 32-bit int"));
        assert!(with("\"float17\"").contains("unknown dtype `float17`"));
        assert!(with("null").contains("found null"));
        let ok = parse(&format!(
            "{{{MINIMAL}, \"template\": [[\"N\", -2147483648]]}}"
        ))
        .unwrap();
        assert_eq!(ok.template[0].1, TemplateArg::Int(i32::MIN));
    }

    #[test]
    fn run_fields_are_checked() {
        let with = |f: &str| error(&format!("{{{MINIMAL}, {f}}}"));
        assert!(with(r#""grid": [1, 2, 3, 4]"#).contains("`grid`: expected 1 to 3 extents"));
        assert!(with(r#""grid": []"#).contains("`grid`: expected 1 to 3 extents"));
        assert!(with(r#""threadgroup": [1.5]"#).contains("`threadgroup`"));
        assert!(with(r#""init_value": "zero""#).contains("`init_value`"));
        assert!(with(r#""data": {"z": 1}"#).contains("`data.z`: `z` is not an input (inputs: a)"));
        assert!(with(r#""views": {"z": {"transpose": [0]}}"#).contains("`views.z`"));
        assert!(
            with(r#""views": {"a": {"transpose": [0], "broadcast": [4]}}"#)
                .contains("exactly one of")
        );
        assert!(with(r#""views": {"a": {"slice": [[0, 4, 1, 1]]}}"#)
            .contains("`views.a.slice`: expected [start, stop, step]"));
        assert!(with(r#""views": {"a": {"slice": [[0, -4]]}}"#).contains("`views.a.slice`"));
    }

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("grid", "grid"), 0);
        assert_eq!(edit_distance("gird", "grid"), 2);
        assert_eq!(edit_distance("input", "inputs"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
