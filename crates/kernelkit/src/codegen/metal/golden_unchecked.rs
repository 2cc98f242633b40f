//! The generator alone against every MLX source in the golden folders,
//! names unvalidated.
//!
//! `tests/golden_metal.rs` goes through the public API, where kernelkit
//! refuses what MLX lets through: invalid, duplicate and empty names
//! (`quirks/`) and `float64` arguments (`dtype_float64_io`, which MLX prints
//! and then rejects). This test feeds those specs straight to the generator,
//! so it shows that the generator itself follows MLX's rules even where the
//! API never lets it run: per-input detection with duplicate names, an empty
//! input name that makes `_shape` a parameter, `double` arguments.

use std::borrow::Cow;
use std::fs;
use std::path::Path;

use serde_json::Value;

use super::generate;
use crate::codegen::spec::KernelSpec;
use crate::codegen::template::{TemplateArg, TemplateParam};
use crate::codegen::variant::{InputDesc, PassMode, VariantDesc};
use crate::dtype::DType;

fn text(v: &Value) -> String {
    v.as_str().expect("a string").to_string()
}

fn dtype(v: &Value) -> DType {
    DType::from_name(v.as_str().expect("a dtype name")).expect("a known dtype")
}

/// `(name, dtype, pass mode)` of each `[name, dtype, shape]`.
fn args(v: &Value) -> Vec<(String, DType, PassMode)> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|a| {
            let shape: Vec<usize> = a[2]
                .as_array()
                .expect("a shape")
                .iter()
                .map(|d| d.as_u64().expect("an extent") as usize)
                .collect();
            let mode = PassMode::of(shape.len(), shape.iter().product());
            (text(&a[0]), dtype(&a[1]), mode)
        })
        .collect()
}

/// Generates the case's source, or `None` for a spec MLX refused.
fn generate_case(json: &Value) -> Option<(String, String)> {
    let inputs = args(&json["inputs"]);
    let outputs = args(&json["outputs"]);
    let template: Vec<TemplateParam<'_>> = match json.get("template") {
        None => Vec::new(),
        Some(list) => list
            .as_array()
            .expect("a list")
            .iter()
            .map(|p| {
                let value = match &p[1] {
                    Value::Bool(b) => TemplateArg::Bool(*b),
                    Value::String(_) => TemplateArg::DType(dtype(&p[1])),
                    n => TemplateArg::Int(i32::try_from(n.as_i64()?).ok()?),
                };
                Some(TemplateParam {
                    name: Cow::Owned(text(&p[0])),
                    value,
                })
            })
            .collect::<Option<_>>()?,
    };
    let flag = |key: &str, default: bool| json.get(key).map_or(default, |v| v.as_bool().unwrap());
    let spec = KernelSpec::scanned(
        text(&json["name"]),
        inputs.iter().map(|i| i.0.clone()).collect(),
        outputs.iter().map(|o| o.0.clone()).collect(),
        text(&json["source"]),
        json.get("header").map_or_else(String::new, text),
        flag("ensure_row_contiguous", true),
        flag("atomic_outputs", false),
    );
    let descs: Vec<InputDesc> = inputs
        .iter()
        .map(|&(_, dtype, mode)| InputDesc { dtype, mode })
        .collect();
    let out_dtypes: Vec<DType> = outputs.iter().map(|o| o.1).collect();
    let g = generate(
        &spec,
        &VariantDesc {
            inputs: &descs,
            outputs: &out_dtypes,
            template: &template,
        },
    );
    Some((g.name, g.source))
}

fn check_folder(dir: &Path) -> usize {
    let mut checked = 0;
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("the golden folder")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    entries.sort();
    for path in entries {
        // Only cases where MLX printed a well-formed source; the malformed
        // ones are compared in `tests/golden_metal.rs`.
        let Ok(expected) = fs::read_to_string(path.with_extension("metal")) else {
            continue;
        };
        let json: Value =
            serde_json::from_str(&fs::read_to_string(&path).expect("JSON")).expect("valid JSON");
        let (name, source) = generate_case(&json)
            .unwrap_or_else(|| panic!("{}: MLX printed a source for it", path.display()));
        let expected_name =
            fs::read_to_string(path.with_extension("kernel_name")).expect("a kernel name");
        assert_eq!(name, expected_name, "{}", path.display());
        assert_eq!(source, expected, "{}", path.display());
        checked += 1;
    }
    checked
}

#[test]
fn the_generator_matches_every_mlx_source_without_validation() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/metal");
    let main = check_folder(&root);
    let quirks = check_folder(&root.join("quirks"));
    // Every `.metal` file was compared; an empty folder must not pass.
    assert!(main > 0 && quirks > 0, "no golden sources found");
}
