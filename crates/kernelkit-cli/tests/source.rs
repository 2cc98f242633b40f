//! `kernelkit source` prints exactly what the library generates for the
//! call a spec describes, in every dialect, with nothing added; `--name`
//! prints the generated function name. The reference here is built
//! independently: full zero arrays of the declared shapes through the
//! library's own API.

mod common;

use std::path::{Path, PathBuf};

use common::kernelkit;
use kernelkit::{Array, BodyLanguage, DType, Device, Dialect, Generated, Kernel, TemplateArg};
use serde_json::Value;

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/specs");
    let mut specs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    specs.sort();
    assert!(
        specs.len() >= 4,
        "examples/specs has the basic example and one per dialect"
    );
    specs
}

fn dtype(v: &Value) -> DType {
    DType::from_name(v.as_str().unwrap()).unwrap()
}

fn shape(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect()
}

/// The library's generation for the call the spec file describes.
fn reference(path: &Path, dialect: Dialect) -> kernelkit::Result<Generated> {
    let spec: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let names = |field: &str| -> Vec<String> {
        spec[field]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[0].as_str().unwrap().to_string())
            .collect()
    };
    let kernel = Kernel::builder(spec["name"].as_str().unwrap())
        .inputs(names("inputs"))
        .outputs(names("outputs"))
        .source(spec["source"].as_str().unwrap())
        .header(spec["header"].as_str().unwrap_or(""))
        .ensure_row_contiguous(spec["ensure_row_contiguous"].as_bool().unwrap_or(true))
        .atomic_outputs(spec["atomic_outputs"].as_bool().unwrap_or(false))
        .language(match spec["language"].as_str() {
            Some("cuda") => BodyLanguage::Cuda,
            _ => BodyLanguage::Metal,
        })
        .build()
        .unwrap();
    let inputs: Vec<Array> = spec["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| Array::zeros(&Device::cpu(), shape(&p[2]), dtype(&p[1])).unwrap())
        .collect();
    let mut call = kernel.call(&inputs);
    for p in spec["outputs"].as_array().unwrap() {
        call = call.output(shape(&p[2]).iter().map(|&d| d as i64), dtype(&p[1]));
    }
    let template = spec["template"].as_array().cloned().unwrap_or_default();
    for t in &template {
        let value = match &t[1] {
            Value::Bool(b) => TemplateArg::Bool(*b),
            Value::String(_) => TemplateArg::DType(dtype(&t[1])),
            n => TemplateArg::Int(n.as_i64().unwrap() as i32),
        };
        call = call.template(t[0].as_str().unwrap().to_string(), value);
    }
    call.generate(dialect)
}

#[test]
fn source_is_exactly_the_library_generation_in_every_dialect() {
    for spec in examples() {
        for dialect in [Dialect::Metal, Dialect::Cuda, Dialect::Cpu] {
            let path = spec.to_str().unwrap();
            let expected = match reference(&spec, dialect) {
                Ok(g) => g,
                Err(e) => {
                    // A body the dialect cannot take (a CUDA C++ body as
                    // Metal or for the CPU): the command refuses it alike.
                    let out = kernelkit(&["source", "--dialect", dialect.name(), path]);
                    assert_eq!(out.code, 2, "{path} in {}: {}", dialect.name(), out.stdout);
                    assert!(out.stderr.contains(&e.to_string()), "{}", out.stderr);
                    continue;
                }
            };
            let out = kernelkit(&["source", "--dialect", dialect.name(), path]);
            assert_eq!(out.code, 0, "{}", out.stderr);
            assert!(out.stderr.is_empty(), "{}", out.stderr);
            assert!(
                out.stdout == expected.source,
                "{path} in {}: the source differs",
                dialect.name()
            );
            let out = kernelkit(&["source", "--name", "--dialect", dialect.name(), path]);
            assert_eq!(out.code, 0, "{}", out.stderr);
            assert_eq!(out.stdout, format!("{}\n", expected.name), "{path}");
        }
    }
}

/// The input pass modes (0-d, small, large) decide the variant, and the CLI
/// gets them right without allocating the declared arrays.
#[test]
fn input_shapes_pick_the_variant() {
    let dir = tempfile::tempdir().unwrap();
    let name_for = |shape: Value| {
        let spec = serde_json::json!({
            "name": "k", "inputs": [["a", "float32", shape]], "outputs": [["o", "float32", [1]]],
            "source": "o[0] = 1;",
        });
        let path = common::write_spec(dir.path(), "k.json", &spec);
        let out = kernelkit(&[
            "source",
            "--name",
            "--dialect",
            "cpu",
            path.to_str().unwrap(),
        ]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout
    };
    let scalar = name_for(serde_json::json!([]));
    let small = name_for(serde_json::json!([7]));
    let large = name_for(serde_json::json!([100000, 100000]));
    assert!(scalar.contains("float32s"), "{scalar}");
    assert!(small.contains("float32c"), "{small}");
    assert!(
        !large.contains("float32c") && !large.contains("float32s"),
        "{large}"
    );
}

#[test]
fn unknown_dialect_is_a_usage_error() {
    let spec = &examples()[0];
    let out = kernelkit(&["source", "--dialect", "vulkan", spec.to_str().unwrap()]);
    assert_eq!(out.code, 2);
    assert!(out.stdout.is_empty());
    assert!(
        out.stderr
            .contains("unknown dialect `vulkan` (expected metal, cuda or cpu)"),
        "{}",
        out.stderr
    );
}

/// Every MLX 0.32.4 golden case of the library (spec files in this very
/// format, captured from MLX itself) printed through the command: the
/// source and the kernel name match MLX byte for byte. Cases where MLX
/// raised (`.mlx_error`) or printed a malformed signature are the
/// library's own tests' business.
#[test]
fn metal_source_matches_mlx_goldens() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernelkit/tests/golden/metal");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let spec = entry.unwrap().path();
        let metal = spec.with_extension("metal");
        if spec.extension().is_none_or(|e| e != "json")
            || !metal.is_file()
            || spec.with_extension("mlx_error").exists()
        {
            continue;
        }
        let path = spec.to_str().unwrap();
        let out = kernelkit(&["source", "--dialect", "metal", path]);
        assert_eq!(out.code, 0, "{path}: {}", out.stderr);
        assert!(
            out.stdout.as_bytes() == std::fs::read(&metal).unwrap(),
            "{path}: the source differs from MLX's"
        );
        let out = kernelkit(&["source", "--name", "--dialect", "metal", path]);
        let name = std::fs::read_to_string(spec.with_extension("kernel_name")).unwrap();
        assert_eq!(out.stdout, format!("{name}\n"), "{path}");
        checked += 1;
    }
    assert!(
        checked >= 100,
        "only {checked} golden cases found in {}",
        dir.display()
    );
}

/// The golden MLX specs whose bodies are portable (no threadgroup
/// synchronization, which the CPU backend refuses) compile unchanged for the
/// CPU: `kernelkit source --dialect cpu --compile` runs the system compiler
/// on each. Bodies that the CPU refuses must say why.
#[test]
fn golden_metal_bodies_compile_for_the_cpu() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernelkit/tests/golden/metal");
    let (mut compiled, mut refused) = (0, 0);
    let mut specs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json") && !p.with_extension("mlx_error").exists()
        })
        .collect();
    specs.sort();
    for spec in specs {
        let path = spec.to_str().unwrap();
        let out = kernelkit(&["source", "--dialect", "cpu", "--compile", path]);
        if out.code == 0 {
            compiled += 1;
        } else {
            assert!(
                out.stderr.contains("cannot run this body"),
                "{path} does not compile for the CPU:\n{}",
                out.stderr
            );
            refused += 1;
        }
    }
    println!(
        "{compiled} golden bodies compiled for the CPU, {refused} refused (group synchronization)"
    );
    assert!(compiled >= 100, "only {compiled} compiled");
}
