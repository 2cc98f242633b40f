//! `.npy` round trips for every dtype through `kernelkit run`: an identity
//! kernel copies one input of each dtype to an output.
//!
//! 1. Inline JSON data in, `--out-dir` out: kernelkit writes the files.
//! 2. Those files in as data, JSON out: kernelkit reads its own files.
//! 3. Where NumPy is present: NumPy loads the files of (1) and checks type
//!    strings and values, then saves the same arrays its own way
//!    (big-endian, Fortran order, bfloat16 as raw `V2`), and kernelkit
//!    reads those back (3 runs in all; without NumPy, 2).

mod common;

use std::path::Path;

use common::{numpy, python, run_ok, write_spec};
use kernelkit::bf16;
use serde_json::{json, Value};

/// (dtype, shape, values) for every dtype, with edge values of each.
fn cases() -> Vec<(&'static str, Vec<usize>, Value)> {
    let s = [3, 4];
    vec![
        (
            "bool",
            vec![2, 2, 3],
            json!([
                [[true, false, true], [false, false, true]],
                [[true, true, false], [false, true, false]]
            ]),
        ),
        (
            "uint8",
            s.to_vec(),
            json!([0, 1, 2, 127, 128, 255, 3, 4, 5, 6, 7, 8]),
        ),
        (
            "uint16",
            s.to_vec(),
            json!([0, 1, 65535, 256, 4, 5, 6, 7, 8, 9, 10, 11]),
        ),
        (
            "uint32",
            s.to_vec(),
            json!([0, 4294967295u64, 65536, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
        ),
        (
            "uint64",
            s.to_vec(),
            json!([
                0,
                18446744073709551615u64,
                9007199254740993u64,
                3,
                4,
                5,
                6,
                7,
                8,
                9,
                10,
                11
            ]),
        ),
        (
            "int8",
            s.to_vec(),
            json!([-128, 127, -1, 0, 4, 5, 6, 7, 8, 9, 10, 11]),
        ),
        (
            "int16",
            s.to_vec(),
            json!([-32768, 32767, -1, 0, 4, 5, 6, 7, 8, 9, 10, 11]),
        ),
        (
            "int32",
            s.to_vec(),
            json!([-2147483648i64, 2147483647, -1, 0, 4, 5, 6, 7, 8, 9, 10, 11]),
        ),
        (
            "int64",
            s.to_vec(),
            json!([
                i64::MIN,
                i64::MAX,
                -9007199254740993i64,
                0,
                4,
                5,
                6,
                7,
                8,
                9,
                10,
                11
            ]),
        ),
        (
            "float16",
            s.to_vec(),
            json!([
                0.5,
                -2.25,
                65504,
                6.103515625e-05,
                5.960464477539063e-08,
                "inf",
                "-inf",
                "nan",
                -0.0,
                1024,
                0.0999755859375,
                3
            ]),
        ),
        (
            "bfloat16",
            s.to_vec(),
            json!([3.140625, -0.0078125, "nan", "inf", 256, 0.5, 1, -1, 2, 3, 4, 5]),
        ),
        (
            "float32",
            s.to_vec(),
            json!([
                0.1,
                3.4028234663852886e38,
                1e-45,
                "nan",
                "-inf",
                -0.0,
                1,
                2,
                3,
                4,
                5,
                7.3
            ]),
        ),
        (
            "float64",
            s.to_vec(),
            json!([0.1, 1e308, 5e-324, "nan", "inf", -0.0, 1, 2, 3, 4, 5, 7.3]),
        ),
        (
            "complex64",
            s.to_vec(),
            json!([
                [1.5, -2],
                [0, 0],
                ["nan", 1],
                ["inf", "-inf"],
                3,
                [0.1, 0.2],
                6,
                7,
                8,
                9,
                10,
                [11, -11]
            ]),
        ),
    ]
}

/// One identity kernel over all the dtypes; `data` per input name.
fn spec(data: Value) -> Value {
    let cases = cases();
    let inputs: Vec<Value> = cases
        .iter()
        .map(|(d, s, _)| json!([format!("x_{d}"), d, s]))
        .collect();
    let outputs: Vec<Value> = cases
        .iter()
        .map(|(d, s, _)| json!([format!("o_{d}"), d, s]))
        .collect();
    let body: String = cases
        .iter()
        .map(|(d, _, _)| format!("if (i < 12) o_{d}[i] = x_{d}[i];\n"))
        .collect();
    json!({
        "name": "identity",
        "inputs": inputs,
        "outputs": outputs,
        "source": format!("uint i = thread_position_in_grid.x;\n{body}"),
        "grid": [12],
        "data": data,
    })
}

/// Values as comparable text: narrow floats through f32 (what their JSON
/// output reads back as), integers exactly, specials as their names.
fn canonical(dtype: &str, v: &Value) -> Vec<String> {
    match v {
        Value::Array(items)
            if !(dtype == "complex64"
                && items.len() == 2
                && items.iter().all(|x| !x.is_array())) =>
        {
            items.iter().flat_map(|x| canonical(dtype, x)).collect()
        }
        Value::Array(pair) => pair.iter().flat_map(|x| canonical("float32", x)).collect(),
        Value::Number(n) if dtype == "complex64" => {
            vec![format!("{:?}", n.as_f64().unwrap() as f32), "0.0".into()]
        }
        Value::Number(n) if dtype == "float64" => vec![format!("{:?}", n.as_f64().unwrap())],
        Value::Number(n) if dtype.starts_with("float") || dtype == "bfloat16" => {
            vec![format!("{:?}", n.as_f64().unwrap() as f32)]
        }
        other => vec![other.to_string().trim_matches('"').to_string()],
    }
}

/// Checks every output of a run against the inline values.
fn check_outputs(result: &Value, how: &str) {
    for (dtype, shape, values) in cases() {
        let o = &result["outputs"][format!("o_{dtype}")];
        assert_eq!(o["dtype"], dtype, "{how}");
        assert_eq!(o["shape"], json!(shape), "{how} {dtype}");
        assert_eq!(
            canonical(dtype, &o["data"]),
            canonical(dtype, &values),
            "{how}: {dtype}"
        );
    }
}

fn data_files(dir: &Path) -> Value {
    let map: serde_json::Map<String, Value> = cases()
        .iter()
        .map(|(d, _, _)| (format!("x_{d}"), json!(dir.join(format!("o_{d}.npy")))))
        .collect();
    Value::Object(map)
}

const NUMPY_CHECK: &str = r#"
import json, sys, os
import numpy as np
cases = json.load(open(sys.argv[1]))
written, resaved = sys.argv[2], sys.argv[3]
names = {"bool": "|b1", "uint8": "|u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8",
         "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8", "float16": "<f2",
         "bfloat16": "|V2", "float32": "<f4", "float64": "<f8", "complex64": "<c8"}
def conv(v, complex_):
    if isinstance(v, list):
        if complex_ and len(v) == 2 and not any(isinstance(x, list) for x in v):
            return complex(float(v[0]), float(v[1]))
        return [conv(x, complex_) for x in v]
    return float(v) if isinstance(v, str) else v
for c in cases:
    d = c["dtype"]
    a = np.load(os.path.join(written, "o_" + d + ".npy"))
    assert a.dtype.str == names[d], (d, a.dtype.str)
    assert list(a.shape) == c["shape"], (d, a.shape)
    if d == "bfloat16":
        got = a.view("<u2").reshape(-1).tolist()
        assert got == c["bits"], (d, got, c["bits"])
    else:
        e = np.array(conv(c["values"], d == "complex64"), dtype=a.dtype).reshape(a.shape)
        assert np.array_equal(a, e, equal_nan=a.dtype.kind in "fc"), (d, a, e)
    # Saved back NumPy's way, with the layouts kernelkit must undo.
    if d == "int32":
        a = a.astype(">i4")
    if d == "float32":
        a = np.asfortranarray(a)
    np.save(os.path.join(resaved, "o_" + d + ".npy"), a)
assert np.load(os.path.join(resaved, "o_float32.npy"), mmap_mode="r").flags.f_contiguous
print("numpy: ok")
"#;

#[test]
fn every_dtype_round_trips_through_npy() {
    let dir = tempfile::tempdir().unwrap();
    let written = dir.path().join("written");
    let inline: serde_json::Map<String, Value> = cases()
        .into_iter()
        .map(|(d, _, v)| (format!("x_{d}"), v))
        .collect();

    // 1. Inline data in, .npy files out.
    let spec1 = write_spec(dir.path(), "inline.json", &spec(Value::Object(inline)));
    let result = run_ok(&spec1, &["--out-dir", written.to_str().unwrap()]);
    for (dtype, shape, _) in cases() {
        let o = &result["outputs"][format!("o_{dtype}")];
        assert_eq!(o["shape"], json!(shape));
        assert!(o.get("data").is_none(), "{o}");
        let file = o["file"].as_str().unwrap();
        assert_eq!(Path::new(file), written.join(format!("o_{dtype}.npy")));
        assert!(Path::new(file).is_file(), "{file}");
    }

    // 2. kernelkit reads its own files back.
    let spec2 = write_spec(dir.path(), "files.json", &spec(data_files(&written)));
    check_outputs(&run_ok(&spec2, &[]), "kernelkit's .npy files read back");

    // 3. NumPy reads them, and writes its own for kernelkit to read.
    if !numpy() {
        return;
    }
    let resaved = dir.path().join("numpy");
    std::fs::create_dir(&resaved).unwrap();
    let described: Vec<Value> = cases()
        .into_iter()
        .map(|(d, s, v)| {
            let bits: Vec<u16> = if d == "bfloat16" {
                canonical(d, &v)
                    .iter()
                    .map(|t| bf16::from_f32(t.parse::<f32>().unwrap_or(f32::NAN)).to_bits())
                    .collect()
            } else {
                Vec::new()
            };
            json!({"dtype": d, "shape": s, "values": v, "bits": bits})
        })
        .collect();
    let cases_file = dir.path().join("cases.json");
    std::fs::write(&cases_file, Value::Array(described).to_string()).unwrap();
    python(
        NUMPY_CHECK,
        &[
            cases_file.to_str().unwrap(),
            written.to_str().unwrap(),
            resaved.to_str().unwrap(),
        ],
    );
    let spec3 = write_spec(dir.path(), "numpy.json", &spec(data_files(&resaved)));
    check_outputs(&run_ok(&spec3, &[]), "NumPy's .npy files");
}
