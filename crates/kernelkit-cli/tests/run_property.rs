//! A property of `kernelkit run`, checked on the real binary: on any spec
//! file it exits with 0 or 2 — never by a signal (an abort, a stack
//! overflow), never with a panic (101) — and when it fails, the first
//! line of stderr is `kernelkit run: ` and the reason. With `--out-dir`,
//! no temporary file is left behind, and a failed run publishes nothing.
//!
//! The specs are random and adversarial: shapes with huge extents or
//! hundreds of thousands of axes, data nested past JSON's depth limit or
//! of the wrong length or type, long and bad names, bad dtypes, grids over
//! 32 bits, views with huge steps and targets, bad `.npy` files (cut
//! short, a 4 GiB header length, a nested shape, an overflowing shape,
//! bool bytes of 2), and JSON text cut or corrupted at a random byte.
//! Some are valid, and run. Every run is under an address-space limit
//! (`common::ADDRESS_LIMIT_KIB`), so an allocation sized from the spec
//! fails at once rather than succeeding lazily.
//!
//! Cases: 48, or `PROPTEST_CASES`. Most fail before any compile; the valid
//! ones share a disk cache, so each distinct kernel compiles once.

mod common;

use std::cell::Cell;
use std::path::Path;

use common::{kernelkit_limited, npy_bytes};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};

const DTYPES: [&str; 14] = [
    "bool",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
];

/// `.npy` files every case may name, written once: good and bad.
fn write_npy_files(dir: &Path) {
    let f32_2 = [1f32.to_le_bytes(), 2f32.to_le_bytes()].concat();
    let plain =
        |shape: &str| format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("good.npy", npy_bytes(&plain("(2,)"), &f32_2)),
        ("short.npy", npy_bytes(&plain("(2,)"), &f32_2[..5])),
        ("huge.npy", npy_bytes(&plain("(1000000000000,)"), &f32_2)),
        (
            "overflow.npy",
            npy_bytes(&plain("(4294967296, 4294967296, 2)"), &[]),
        ),
        (
            "nested.npy",
            npy_bytes(
                &plain(&format!("{}2,{}", "(".repeat(20_000), ")".repeat(20_000))),
                &[],
            ),
        ),
        (
            "header4g.npy",
            [
                &b"\x93NUMPY\x02\x00"[..],
                &u32::MAX.to_le_bytes(),
                b"{'descr'",
            ]
            .concat(),
        ),
        (
            "bools.npy",
            npy_bytes(
                "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
                &[1, 2],
            ),
        ),
        (
            "fortran.npy",
            npy_bytes(
                "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1), }",
                &f32_2,
            ),
        ),
        ("garbage.npy", b"\x93NUMPY\x01\x00\xff".to_vec()),
    ];
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

fn name() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => prop::sample::select(vec!["a", "b", "o", "p"]).prop_map(|n| json!(n)),
        1 => "[a-z_][a-z0-9_]{0,6}".prop_map(|n| json!(n)),
        1 => Just(json!("n".repeat(100_000))),
        1 => Just(json!("bad name\n")),
        1 => Just(json!("")),
        1 => Just(json!(7)),
    ]
}

fn dtype() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => prop::sample::select(DTYPES.to_vec()).prop_map(|d| json!(d)),
        1 => Just(json!("float17")),
        1 => Just(json!(["float32"])),
    ]
}

/// An extent: mostly small, sometimes absurd.
fn extent() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 0..4u64,
        1 => Just(1_000_000_000_000u64),
        1 => Just(u64::MAX),
        1 => Just(1u64 << 62),
        1 => Just(1u64 << 32),
    ]
}

fn shape() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => prop::collection::vec(extent(), 0..4).prop_map(|s| json!(s)),
        1 => (60..70usize).prop_map(|n| json!(vec![1; n])),
        1 => Just(json!(vec![1; 200_000])),
        1 => prop::sample::select(vec![json!(3), json!([-1]), json!([1.5]), json!(null)]),
    ]
}

/// JSON nested `depth` lists deep around one number.
fn nested(depth: usize) -> Value {
    let text = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    // Past serde_json's limit of 128 the text is kept as a string: the
    // raw-text mutation below puts such text in the file itself.
    serde_json::from_str(&text).unwrap_or(json!(text))
}

/// Data for an input declared with `shape`.
fn data(shape: Value) -> impl Strategy<Value = Value> {
    let n = shape.as_array().and_then(|s| {
        s.iter()
            .try_fold(1u64, |a, d| d.as_u64().and_then(|d| a.checked_mul(d)))
    });
    let fitting = match n {
        Some(n) if n <= 64 => prop::collection::vec(-3i64..4, n as usize..=n as usize)
            .prop_map(|v| json!(v))
            .boxed(),
        _ => Just(json!([1.0])).boxed(),
    };
    prop_oneof![
        6 => fitting,
        1 => prop::collection::vec(-3i64..4, 0..9).prop_map(|v| json!(v)),
        1 => prop::sample::select(vec![10usize, 64, 120, 127]).prop_map(nested),
        1 => prop::sample::select(vec![
            json!(1e300), json!(-1), json!("nan"), json!({"x": 1}), json!(null),
            json!(true), json!([[1, 2], [3]]), json!([[1.0, 2.0]]),
        ]),
        1 => prop::sample::select(vec![
            "good.npy", "short.npy", "huge.npy", "overflow.npy", "nested.npy",
            "header4g.npy", "bools.npy", "fortran.npy", "garbage.npy", "missing.npy",
            "/dev/zero", ".",
        ])
        .prop_map(|p| json!(p)),
    ]
}

fn grid() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => prop::collection::vec(1..5u64, 1..=3).prop_map(|g| json!(g)),
        1 => prop::sample::select(vec![
            json!([0]),
            json!([4_294_967_296u64]),
            json!([65_536, 65_536, 1]),
            json!([u64::MAX, u64::MAX, u64::MAX]),
            json!([1, 1, 1, 1]),
            json!([]),
            json!("4"),
        ]),
    ]
}

fn views() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        4 => Just(None),
        1 => prop::sample::select(vec![
            json!({"a": {"transpose": [1, 0]}}),
            json!({"a": {"slice": [[0, 2, 4_611_686_018_427_387_904u64]]}}),
            json!({"a": {"slice": [[0, 1, 1], [0, 1, 1], [0, 1, 1]]}}),
            json!({"a": {"broadcast": [1_000_000_000_000u64, 1_000_000_000_000u64]}}),
            json!({"a": {"broadcast": vec![1; 100]}}),
            json!({"a": [{"transpose": [0]}, {"slice": [[1, 0]]}]}),
            json!({"a": {"tranpose": [0]}}),
        ])
        .prop_map(Some),
    ]
}

/// How the spec's text is damaged, if it is.
#[derive(Clone, Debug)]
enum Damage {
    None,
    /// Cut after this fraction (per mille) of its bytes.
    Cut(usize),
    /// This byte replaced, at this fraction (per mille).
    Byte(usize, u8),
    /// The whole text replaced by lists nested this deep.
    Deep(usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        8 => Just(Damage::None),
        1 => (0..1000usize).prop_map(Damage::Cut),
        1 => (0..1000usize, any::<u8>()).prop_map(|(at, b)| Damage::Byte(at, b)),
        1 => prop::sample::select(vec![129usize, 100_000]).prop_map(Damage::Deep),
    ]
}

/// A spec that runs: up to two inputs (`a`, `b`) and one or two outputs
/// (`o`, `p`) of small shapes, with fitting data and an empty body. Few
/// dtypes, so that the shared disk cache serves most compiles.
fn valid_spec() -> impl Strategy<Value = Value> {
    let small_shape = || prop::collection::vec(1..4u64, 0..3);
    let port_dtype = || prop::sample::select(vec!["float32", "int32"]);
    let inputs =
        prop::collection::vec((port_dtype(), small_shape()), 0..=2).prop_flat_map(|ports| {
            let data: Vec<_> = ports
                .iter()
                .map(|(_, s)| {
                    let n = s.iter().product::<u64>() as usize;
                    prop::collection::vec(-3i64..4, n..=n)
                })
                .collect();
            (Just(ports), data)
        });
    let outputs = prop::collection::vec(small_shape(), 1..=2);
    (inputs, outputs, prop::collection::vec(1..5u64, 1..=3)).prop_map(
        |((ins, data), outs, grid)| {
            let names = ["a", "b"];
            let inputs: Vec<Value> = ins
                .iter()
                .zip(names)
                .map(|((d, s), n)| json!([n, d, s]))
                .collect();
            let outputs: Vec<Value> = outs
                .iter()
                .zip(["o", "p"])
                .map(|(s, n)| json!([n, "float32", s]))
                .collect();
            let data: serde_json::Map<String, Value> = data
                .iter()
                .zip(names)
                .map(|(d, n)| (n.to_string(), json!(d)))
                .collect();
            json!({
                "name": "k", "inputs": inputs, "outputs": outputs, "source": "",
                "grid": grid, "data": data,
            })
        },
    )
}

/// One adversarial change to a valid spec.
#[derive(Clone, Debug)]
enum Mutation {
    /// Part `.0` (name, dtype, shape) of the first input (added if none).
    Input(usize, Value),
    /// The data of input `a` (added if there is no input).
    Data(Value),
    /// Part `.0` (name, dtype, shape) of the first output.
    Output(usize, Value),
    /// A top-level field set (or, for null, removed).
    Field(&'static str, Value),
}

/// A [name, dtype, shape] part: its index and an adversarial value.
fn part() -> impl Strategy<Value = (usize, Value)> {
    (0..3usize).prop_flat_map(|i| {
        let v = match i {
            0 => name().boxed(),
            1 => dtype().boxed(),
            _ => shape().boxed(),
        };
        (Just(i), v)
    })
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => part().prop_map(|(i, v)| Mutation::Input(i, v)),
        3 => shape().prop_flat_map(data).prop_map(Mutation::Data),
        2 => part().prop_map(|(i, v)| Mutation::Output(i, v)),
        1 => grid().prop_map(|g| Mutation::Field("grid", g)),
        1 => grid().prop_map(|g| Mutation::Field("threadgroup", g)),
        1 => views().prop_map(|v| Mutation::Field("views", v.unwrap_or(json!(null)))),
        1 => prop::sample::select(vec![
            json!([["N", 2_147_483_648u64]]),
            json!([["T", "float17"]]),
            json!([["N", 1], ["N", 2]]),
        ])
        .prop_map(|t| Mutation::Field("template", t)),
        1 => prop::sample::select(vec![json!(1e300), json!("x"), json!([1])])
            .prop_map(|v| Mutation::Field("init_value", v)),
        1 => prop::sample::select(vec![json!("for (;;) {"), json!("\u{0}"), json!(3)])
            .prop_map(|v| Mutation::Field("source", v)),
        1 => Just(Mutation::Field("atomic_output", json!(true))),
        1 => Just(Mutation::Field("grid", json!(null))),
        1 => name().prop_map(|n| Mutation::Field("name", n)),
    ]
}

fn apply(spec: &mut Value, m: &Mutation) {
    match m {
        Mutation::Input(i, v) => {
            let ports = spec["inputs"].as_array_mut().unwrap();
            if ports.is_empty() {
                ports.push(json!(["a", "float32", [1]]));
            }
            ports[0][*i] = v.clone();
        }
        Mutation::Output(i, v) => spec["outputs"][0][*i] = v.clone(),
        Mutation::Data(d) => {
            if spec["inputs"].as_array().unwrap().is_empty() {
                spec["inputs"] = json!([["a", "float32", [1]]]);
            }
            spec["data"]["a"] = d.clone();
        }
        Mutation::Field(field, v) if v.is_null() => {
            spec.as_object_mut().unwrap().remove(*field);
        }
        Mutation::Field(field, v) => spec[*field] = v.clone(),
    }
}

#[derive(Clone, Debug)]
struct Case {
    spec: Value,
    damage: Damage,
    out_dir: bool,
}

/// A valid spec with none, one or a few mutations (a third of the cases
/// are left valid and run), its text damaged or not, `--out-dir` or not.
fn case() -> impl Strategy<Value = Case> {
    let mutations = prop_oneof![
        1 => Just(Vec::new()),
        2 => prop::collection::vec(mutation(), 1..4),
    ];
    (valid_spec(), mutations, damage(), any::<bool>()).prop_map(
        |(mut spec, mutations, damage, out_dir)| {
            for m in &mutations {
                apply(&mut spec, m);
            }
            Case {
                spec,
                damage,
                out_dir,
            }
        },
    )
}

/// The spec file's text, damaged as the case says.
fn text(case: &Case) -> Vec<u8> {
    let mut text = serde_json::to_vec(&case.spec).unwrap();
    match case.damage {
        Damage::None => {}
        Damage::Cut(at) => text.truncate(text.len() * at / 1000),
        Damage::Byte(at, b) => {
            let i = (text.len() * at / 1000).min(text.len() - 1);
            text[i] = b;
        }
        Damage::Deep(depth) => {
            text = format!("{}1{}", "[".repeat(depth), "]".repeat(depth)).into_bytes();
        }
    }
    text
}

fn check(dir: &Path, cache: &Path, case: &Case, ran: &Cell<[u32; 2]>) -> Result<(), TestCaseError> {
    let text = text(case);
    let path = dir.join("spec.json");
    std::fs::write(&path, &text).unwrap();
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let mut args = vec!["run", path.to_str().unwrap(), "--device", "cpu"];
    if case.out_dir {
        args.extend(["--out-dir", out.to_str().unwrap()]);
    }
    let cache = cache.to_str().unwrap();
    let outcome = kernelkit_limited(
        &args,
        &[("KERNELKIT_CACHE", "disk"), ("KERNELKIT_CACHE_DIR", cache)],
    );
    let shown = String::from_utf8_lossy(&text[..text.len().min(1500)]).into_owned();
    let first = outcome.stderr.lines().next().unwrap_or_default();
    prop_assert!(
        outcome.code == 0 || outcome.code == 2,
        "exit {} for the spec {shown}\nstderr: {}",
        outcome.code,
        &outcome.stderr[..outcome.stderr.len().min(3000)]
    );
    let mut counts = ran.get();
    counts[usize::from(outcome.code == 2)] += 1;
    ran.set(counts);
    if outcome.code == 2 {
        prop_assert!(first.starts_with("kernelkit run: "), "{first} for {shown}");
        prop_assert!(outcome.stdout.is_empty(), "{}", outcome.stdout);
    } else {
        let result: Result<Value, _> = serde_json::from_str(&outcome.stdout);
        prop_assert!(result.is_ok(), "stdout is not JSON: {}", outcome.stdout);
    }
    if case.out_dir && out.exists() {
        let names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        prop_assert!(
            names.iter().all(|n| !n.ends_with(".tmp")),
            "temporary files left: {names:?}"
        );
        if outcome.code == 2 {
            prop_assert!(names.is_empty(), "a failed run published {names:?}");
        }
    }
    Ok(())
}

#[test]
fn run_exits_0_or_2_on_any_spec() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(48);
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    write_npy_files(dir.path());
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let ran = Cell::new([0, 0]);
    let result = runner.run(&case(), |case| check(dir.path(), cache.path(), &case, &ran));
    let [ok, failed] = ran.get();
    println!("{ok} runs succeeded, {failed} failed with exit code 2");
    if let Err(e) = result {
        panic!("{e}");
    }
}
