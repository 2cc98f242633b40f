//! The checking reader: a spec file's JSON value, field by field, into a
//! [`SpecFile`], with the one-line errors of [`SpecError`].
//!
//! The text is parsed whole into a [`serde_json::Value`] first (so a syntax
//! error anywhere is reported before any field, and `serde_json` bounds the
//! nesting at 128), then every field is checked in a fixed order: unknown
//! fields first, then `name`, `inputs`, `outputs`, `source` and the rest as
//! the format lists them. Why not `#[derive(Deserialize)]`: its messages are
//! serde's (``unknown field `x`, expected one of `name`, ...`` plus a line
//! and column), they come in the order of the document, and a field's
//! error cannot name its entry (``inputs[1]` (`b`)``) or quote the value it
//! found; the messages are part of the format's contract.

use std::path::Path;

use serde_json::{Map, Value};

use super::data::float_value;
use super::error::{bad, bad_named, unknown_field, SpecError};
use super::message::{brief, kind, short};
use super::{DataSource, Port, SpecFile, View, MAX_NDIM};
use crate::codegen::math::MathMode;
use crate::codegen::template::TemplateArg;
use crate::codegen::BodyLanguage;
use crate::dtype::DType;

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
    "compile_options",
    "template",
    "grid",
    "threadgroup",
    "init_value",
    "data",
    "views",
];

/// The kinds of view an input may have.
const VIEW_KINDS: &[&str] = &["transpose", "slice", "broadcast"];

/// Checks a parsed spec file; `.npy` paths in `data` are joined to `base`.
pub(super) fn spec_file(value: Value, base: &Path) -> Result<SpecFile, SpecError> {
    let Value::Object(mut map) = value else {
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
    let math_mode = compile_options(map.get("compile_options"))?;
    let template = template(map.get("template"))?;
    let grid = dims(&map, "grid")?;
    let threadgroup = dims(&map, "threadgroup")?;
    let init_value = init_value(map.get("init_value"))?;
    // The data are moved out of the value, not copied: they may be most
    // of the file.
    let data = data(map.get_mut("data").map(Value::take), &inputs, base)?;
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
        math_mode,
        template,
        grid,
        threadgroup,
        init_value,
        data,
        views,
    })
}

/// MLX's `compile_options`: an object whose one field, `math_mode`, is
/// `"safe"` (the default), `"relaxed"` or `"fast"`; null or absent is safe.
fn compile_options(value: Option<&Value>) -> Result<MathMode, SpecError> {
    let map = match value {
        None | Some(Value::Null) => return Ok(MathMode::Safe),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(bad(
                "compile_options",
                format!("expected an object, found {}", kind(other)),
            ))
        }
    };
    check_fields(map, &["math_mode"], "compile_options.")?;
    match map.get("math_mode") {
        None | Some(Value::Null) => Ok(MathMode::Safe),
        Some(Value::String(name)) => MathMode::from_name(name).ok_or_else(|| {
            bad(
                "compile_options.math_mode",
                format!(
                    "`{}`: expected \"safe\", \"relaxed\" or \"fast\"",
                    short(name)
                ),
            )
        }),
        Some(other) => Err(bad(
            "compile_options.math_mode",
            format!("expected a string, found {}", kind(other)),
        )),
    }
}

/// Rejects keys of `map` not in `known`; `prefix` locates the map.
fn check_fields(map: &Map<String, Value>, known: &[&str], prefix: &str) -> Result<(), SpecError> {
    match map.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => Err(unknown_field(key, known, prefix)),
        None => Ok(()),
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
                format!(
                    "expected {what} (a list of non-negative integers), found {}",
                    brief(d)
                )
            })
        })
        .collect()
}

/// As [`indices`], for a list of axes (a shape, a permutation, a target
/// shape): at most [`MAX_NDIM`] of them.
fn axes(v: &Value, what: &str) -> Result<Vec<usize>, String> {
    if let Value::Array(items) = v {
        if items.len() > MAX_NDIM {
            return Err(format!(
                "{what} with {} axes; at most {MAX_NDIM} are supported",
                items.len()
            ));
        }
    }
    indices(v, what)
}

/// Checks that an array of `shape` and `dtype` has a byte size that
/// memory could address (what every later allocation is sized from).
fn addressable(shape: &[usize], dtype: DType) -> Result<(), String> {
    let bytes = shape
        .iter()
        .try_fold(dtype.size(), |a, &d| a.checked_mul(d))
        .filter(|&b| b <= isize::MAX as usize);
    match bytes {
        Some(_) => Ok(()),
        None => Err(format!(
            "shape {shape:?} of {} holds more bytes than memory can address",
            dtype.name()
        )),
    }
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
                    format!("expected [name, dtype, shape], found {}", brief(item)),
                ))
            }
        };
        let Value::String(name) = &parts[0] else {
            return Err(bad(
                at,
                format!(
                    "the {role} name must be a string, found {}",
                    brief(&parts[0])
                ),
            ));
        };
        let dtype = dtype_of(&parts[1]).map_err(|r| bad_named(&at, name, r))?;
        let shape = axes(&parts[2], "a shape").map_err(|r| bad_named(&at, name, r))?;
        addressable(&shape, dtype).map_err(|r| bad_named(&at, name, r))?;
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
                short(s),
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

pub(super) fn template(v: Option<&Value>) -> Result<Vec<(String, TemplateArg)>, SpecError> {
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
                other => {
                    return Err(bad(
                        at,
                        format!("the name must be a string, found {}", brief(other)),
                    ))
                }
            },
            _ => {
                return Err(bad(
                    at,
                    format!("expected [name, value], found {}", brief(item)),
                ))
            }
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

pub(super) fn dims(
    map: &Map<String, Value>,
    field: &'static str,
) -> Result<Option<[u64; 3]>, SpecError> {
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

fn init_value(v: Option<&Value>) -> Result<Option<f64>, SpecError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => float_value(v).map(Some).ok_or_else(|| {
            bad(
                "init_value",
                format!(
                    "expected a number, \"inf\", \"-inf\", \"nan\" or null, found {}",
                    brief(v)
                ),
            )
        }),
    }
}

/// Checks that `key` names an input; returns its index.
fn input_index(key: &str, inputs: &[Port], field: &str) -> Result<usize, SpecError> {
    inputs.iter().position(|p| p.name == key).ok_or_else(|| {
        let names: Vec<&str> = inputs.iter().map(|p| p.name.as_str()).collect();
        bad(
            format!("{field}.{}", short(key)),
            format!(
                "`{}` is not an input (inputs: {})",
                short(key),
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names
                        .iter()
                        .map(|n| short(n))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
        )
    })
}

/// `data`: per input, inline data or a `.npy` path (joined to `base`),
/// in the order of the inputs.
fn data(
    v: Option<Value>,
    inputs: &[Port],
    base: &Path,
) -> Result<Vec<(String, DataSource)>, SpecError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let Value::Object(map) = v else {
        return Err(bad(
            "data",
            format!(
                "expected an object of input name to data, found {}",
                kind(&v)
            ),
        ));
    };
    let mut out: Vec<(usize, String, DataSource)> = Vec::with_capacity(map.len());
    for (key, value) in map {
        let i = input_index(&key, inputs, "data")?;
        let source = match value {
            Value::String(path) => DataSource::Npy(base.join(path)),
            other => DataSource::Inline(other),
        };
        out.push((i, key, source));
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
        let at = format!("views.{}", short(key));
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
        "transpose" => View::Transpose(axes(arg, "an axis permutation").map_err(|r| bad(&at, r))?),
        "broadcast" => View::Broadcast(axes(arg, "a target shape").map_err(|r| bad(&at, r))?),
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
            if ranges.len() > MAX_NDIM {
                return Err(bad(
                    at,
                    format!(
                        "{} ranges; at most {MAX_NDIM} axes are supported",
                        ranges.len()
                    ),
                ));
            }
            let mut out = Vec::with_capacity(ranges.len());
            for r in ranges {
                let parts = indices(r, "[start, stop, step]").map_err(|e| bad(&at, e))?;
                match parts[..] {
                    [start, stop] => out.push([start, stop, 1]),
                    [start, stop, step] => out.push([start, stop, step]),
                    _ => {
                        return Err(bad(
                            at,
                            format!("expected [start, stop, step] per axis, found {}", brief(r)),
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
    use std::path::PathBuf;

    fn parse(text: &str) -> Result<SpecFile, SpecError> {
        SpecFile::from_json(text, Path::new("/specs"))
    }

    const MINIMAL: &str = r#""name": "k", "inputs": [["a", "float32", [4]]],
        "outputs": [["out", "float32", [4]]], "source": "out[0] = a[0];""#;

    #[test]
    fn defaults_apply() {
        let s = parse(&format!("{{{MINIMAL}}}")).unwrap();
        assert_eq!(s.header, "");
        assert!(s.ensure_row_contiguous);
        assert!(!s.atomic_outputs);
        assert!(s.template.is_empty() && s.grid.is_none() && s.init_value.is_none());
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
    fn compile_options_name_the_math_mode_as_mlx() {
        let with = |options: &str| format!("{{{MINIMAL}, \"compile_options\": {options}}}");
        assert_eq!(
            parse(&format!("{{{MINIMAL}}}")).unwrap().math_mode,
            MathMode::Safe
        );
        assert_eq!(parse(&with("null")).unwrap().math_mode, MathMode::Safe);
        assert_eq!(parse(&with("{}")).unwrap().math_mode, MathMode::Safe);
        for mode in [MathMode::Safe, MathMode::Relaxed, MathMode::Fast] {
            let spec = parse(&with(&format!("{{\"math_mode\": \"{}\"}}", mode.name()))).unwrap();
            assert_eq!(spec.math_mode, mode);
            assert_eq!(spec.kernel().unwrap().spec().math_mode(), mode);
            // Written back as MLX's object, and only when not safe.
            let text = spec.to_json().unwrap();
            assert_eq!(
                text.contains("compile_options"),
                mode != MathMode::Safe,
                "{text}"
            );
            assert_eq!(parse(&text).unwrap(), spec);
        }
        let e = error(&with("{\"math_mode\": \"precise\"}"));
        assert!(
            e.contains("compile_options.math_mode") && e.contains("\"fast\""),
            "{e}"
        );
        let e = error(&with("{\"math_mod\": \"fast\"}"));
        assert!(e.contains("did you mean `math_mode`"), "{e}");
        let e = error(&with("{\"math_mode\": 1}"));
        assert!(e.contains("expected a string"), "{e}");
        let e = error(&with("\"fast\""));
        assert!(
            e.contains("compile_options") && e.contains("expected an object"),
            "{e}"
        );
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
}
