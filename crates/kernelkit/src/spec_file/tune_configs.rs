//! Configuration files of `kernelkit tune` and `kernelkit precompile
//! --tune`: the launch configurations to choose from, as JSON.
//!
//! ```json
//! [{"threadgroup": [128, 1, 1], "template": {"TILE": 4}},
//!  {"threadgroup": [256], "template": [["TILE", 8]], "grid": [4096]}]
//! ```
//!
//! Each configuration has a `threadgroup` (1 to 3 extents), optional
//! `template` values (an object, or the spec's list of `[name, value]`;
//! values are integers, `true`/`false` or dtype names) and an optional
//! fixed `grid` (otherwise the spec's grid is used). The whole may also be
//! an object `{"configs": [...]}`.

use serde_json::{Map, Value};

use super::error::{bad, SpecError};
use super::read::{dims, template};
use crate::kernel::tune::TuneConfig;

/// Reads configuration text (see the module's documentation).
pub fn from_json(text: &str) -> Result<Vec<TuneConfig>, SpecError> {
    let value: Value = serde_json::from_str(text).map_err(SpecError::Json)?;
    let list = match value {
        Value::Array(list) => list,
        Value::Object(mut map) => match map.remove("configs") {
            Some(Value::Array(list)) => list,
            _ => return Err(bad("configs", "expected a list of configurations")),
        },
        _ => return Err(bad("configs", "expected a list of configurations")),
    };
    if list.is_empty() {
        return Err(bad("configs", "at least one configuration is needed"));
    }
    list.iter().enumerate().map(|(i, v)| config(i, v)).collect()
}

fn config(i: usize, v: &Value) -> Result<TuneConfig, SpecError> {
    let Value::Object(map) = v else {
        return Err(bad(format!("configs[{i}]"), "expected an object"));
    };
    for key in map.keys() {
        if !["threadgroup", "template", "grid"].contains(&key.as_str()) {
            return Err(bad(
                format!("configs[{i}].{key}"),
                "unknown field (expected threadgroup, template, grid)",
            ));
        }
    }
    let at = |e: SpecError| bad(format!("configs[{i}]"), e.to_string());
    let threadgroup = dims(map, "threadgroup")
        .map_err(at)?
        .ok_or_else(|| bad(format!("configs[{i}].threadgroup"), "missing"))?;
    let mut config = TuneConfig::new(threadgroup);
    if let Some(grid) = dims(map, "grid").map_err(at)? {
        config = config.grid(grid);
    }
    let values = match map.get("template") {
        Some(Value::Object(obj)) => template(Some(&pairs(obj))).map_err(at)?,
        other => template(other).map_err(at)?,
    };
    for (name, value) in values {
        config = config.template(name, value);
    }
    Ok(config)
}

/// An object of template values as the spec's list of `[name, value]`.
fn pairs(obj: &Map<String, Value>) -> Value {
    Value::Array(
        obj.iter()
            .map(|(k, v)| Value::Array(vec![Value::String(k.clone()), v.clone()]))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_template_forms_read_the_same() {
        let a =
            from_json(r#"[{"threadgroup": [128], "template": {"TILE": 4, "F": true}}]"#).unwrap();
        let b = from_json(
            r#"{"configs": [{"threadgroup": [128, 1, 1], "template": [["F", true], ["TILE", 4]]}]}"#,
        )
        .unwrap();
        assert_eq!(a, b);
        assert_eq!(a[0].id(), "threadgroup=128,1,1 F=true TILE=4");
    }

    #[test]
    fn bad_files_name_the_field() {
        for (text, field) in [
            ("[]", "configs"),
            ("[{}]", "configs[0].threadgroup"),
            (r#"[{"threadgroup": [1], "tile": 3}]"#, "configs[0].tile"),
            (
                r#"[{"threadgroup": [1], "template": {"T": 1.5}}]"#,
                "configs[0]",
            ),
            ("3", "configs"),
        ] {
            let e = from_json(text).unwrap_err();
            assert!(e.to_string().contains(field), "{text}: {e}");
        }
    }
}
