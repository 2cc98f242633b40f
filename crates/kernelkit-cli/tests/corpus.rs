//! The corpus of real kernels (tests/corpus, see its README): every entry
//! runs through the built `kernelkit run` on the test device
//! (`KERNELKIT_TEST_DEVICE`, the CPU by default) and its outputs are compared
//! with the NumPy reference by the entry's rules.
//!
//! A ratchet keeps the suite honest while compatibility grows: the entries
//! known to fail on a backend are listed, each with the reason seen, in
//! `tests/corpus/known_failures/<backend>.txt`. The test fails when an entry
//! not on the list fails, and when an entry on the list passes (take it off
//! the list). It prints a table of every entry and the totals.
//!
//! Environment:
//! - `KERNELKIT_CORPUS_DIR`: the corpus folder (default: this crate's
//!   `tests/corpus`, else `crates/kernelkit-cli/tests/corpus` under the
//!   working directory, as on the GPU machine).
//! - `KERNELKIT_CORPUS_TEXTS`: a folder with `<entry>/source.metal` (and
//!   `header.metal`) for entries whose folder lacks them (see the README:
//!   the published texts are not committed).
//! - `KERNELKIT_CORPUS_REQUIRE_TEXTS=1`: fail, rather than skip, when no
//!   entry has its texts.
//! - `KERNELKIT_CORPUS_ONLY=a,b`: run only these entries (the ratchet then
//!   checks only them).
//! - `KERNELKIT_CORPUS_TIMEOUT`: seconds one run may take (default 120);
//!   a run past it is killed and counts as a failure ("timed out").
//! - `KERNELKIT_CORPUS_JOBS`: runs at once (default: up to 4).
//! - `KERNELKIT_CORPUS_RECORD=FILE`: also write the failures seen, in the
//!   known-failures format, to FILE (to update a list from a run elsewhere).
//! - `KERNELKIT_CORPUS_CACHE`: the runs' `KERNELKIT_CACHE` (default
//!   `memory`: each run compiles its kernel; `disk` with
//!   `KERNELKIT_CACHE_DIR` and `KERNELKIT_JIT=forbid` replays the corpus
//!   from an imported bundle, the GPU check's `i43_corpus_forbid`).

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kernelkit::spec_file::{npy, SpecFile};
use kernelkit::DType;
use serde_json::Value;

#[test]
fn real_kernels_match_their_references() {
    let corpus = corpus_dir();
    let device = common::test_device();
    let backend = device.split(':').next().unwrap_or("cpu").to_string();
    let mut names = entries(&corpus);
    if let Ok(only) = std::env::var("KERNELKIT_CORPUS_ONLY") {
        let only: Vec<&str> = only.split(',').map(str::trim).collect();
        names.retain(|n| only.contains(&n.as_str()));
    }
    assert!(
        !names.is_empty(),
        "no corpus entries in {}",
        corpus.display()
    );

    // The texts: all there, or none (then the test has nothing to run).
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| texts_dir(&corpus, n).is_none())
        .collect();
    if missing.len() == names.len() {
        let msg = format!(
            "no entry of {} has its source.metal: the published texts are not committed \
             (README: \"Texts\"); run `python3 tools/corpus_gen.py --extract DIR` or set \
             KERNELKIT_CORPUS_TEXTS",
            corpus.display()
        );
        assert!(
            std::env::var_os("KERNELKIT_CORPUS_REQUIRE_TEXTS").is_none(),
            "{msg}"
        );
        println!("skipped: {msg}");
        return;
    }
    assert!(
        missing.is_empty(),
        "entries without their texts (a partial text store): {missing:?}"
    );

    let known = known_failures(&corpus, &backend);
    let timeout = Duration::from_secs(
        std::env::var("KERNELKIT_CORPUS_TIMEOUT")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(120),
    );
    let jobs = std::env::var("KERNELKIT_CORPUS_JOBS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
                .min(4)
        })
        .max(1);

    let results: Mutex<BTreeMap<String, Result<(), String>>> = Mutex::new(BTreeMap::new());
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(name) = names.get(i) else { break };
                let outcome = run_entry(&corpus, name, &device, timeout);
                results.lock().unwrap().insert(name.clone(), outcome);
            });
        }
    });
    let results = results.into_inner().unwrap();

    let mut new_failures = Vec::new();
    let mut now_passing = Vec::new();
    let width = names.iter().map(|n| n.len()).max().unwrap_or(5);
    println!("\ncorpus on {device}:");
    println!("{:width$}  result  reason", "entry");
    for (name, outcome) in &results {
        let listed = known.get(name);
        let (word, reason) = match (outcome, listed) {
            (Ok(()), None) => ("pass", String::new()),
            (Ok(()), Some(_)) => {
                now_passing.push(name.clone());
                (
                    "PASS!",
                    "passes but is listed as a known failure".to_string(),
                )
            }
            (Err(r), Some(_)) => ("fail", r.clone()),
            (Err(r), None) => {
                new_failures.push(format!("{name}: {r}"));
                ("FAIL!", r.clone())
            }
        };
        println!("{name:width$}  {word:6}  {reason}");
    }
    let passed = results.values().filter(|r| r.is_ok()).count();
    println!(
        "\ncorpus totals on {device}: {passed} passed, {} failed, of {} ({} known failures listed)",
        results.len() - passed,
        results.len(),
        known.len()
    );
    if let Ok(path) = std::env::var("KERNELKIT_CORPUS_RECORD") {
        let mut text = format!("# failures seen on {device}\n");
        for (name, outcome) in &results {
            if let Err(r) = outcome {
                text.push_str(&format!("{name}: {r}\n"));
            }
        }
        std::fs::write(&path, text).expect("KERNELKIT_CORPUS_RECORD is writable");
    }
    let stale: Vec<&String> = known.keys().filter(|k| !names.contains(k)).collect();
    let all = std::env::var_os("KERNELKIT_CORPUS_ONLY").is_none();
    assert!(
        !all || stale.is_empty(),
        "known_failures/{backend}.txt lists entries that do not exist: {stale:?}"
    );
    assert!(
        new_failures.is_empty() && now_passing.is_empty(),
        "the corpus ratchet (known_failures/{backend}.txt) does not hold:\n\
         new failures (fix them, or list them with their reason):\n  {}\n\
         listed but passing now (take them off the list):\n  {}",
        new_failures.join("\n  "),
        now_passing.join("\n  ")
    );
}

/// The corpus folder.
fn corpus_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("KERNELKIT_CORPUS_DIR") {
        return PathBuf::from(dir);
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    if here.is_dir() {
        return here;
    }
    PathBuf::from("crates/kernelkit-cli/tests/corpus")
}

/// Entry folders (those with a check.json), sorted.
fn entries(corpus: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(corpus)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", corpus.display()))
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("check.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Where an entry's source.metal (and header.metal) are, if anywhere.
fn texts_dir(corpus: &Path, name: &str) -> Option<PathBuf> {
    let mut places = vec![corpus.join(name)];
    if let Some(dir) = std::env::var_os("KERNELKIT_CORPUS_TEXTS") {
        places.push(PathBuf::from(dir).join(name));
    }
    places
        .into_iter()
        .find(|p| p.join("source.metal").is_file())
}

/// `known_failures/<backend>.txt`: `entry: reason` per line, `#` comments.
fn known_failures(corpus: &Path, backend: &str) -> BTreeMap<String, String> {
    let path = corpus.join("known_failures").join(format!("{backend}.txt"));
    let Ok(text) = std::fs::read_to_string(&path) else {
        return BTreeMap::new();
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(':') {
            Some((n, r)) => (n.trim().to_string(), r.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect()
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs one entry; `Err` carries the one-line reason.
fn run_entry(corpus: &Path, name: &str, device: &str, timeout: Duration) -> Result<(), String> {
    let (dir, spec_path, _work) = stage(corpus, name)?;
    let out_dir = spec_path.with_file_name("out");
    run_binary(&spec_path, device, &out_dir, timeout)?;
    compare_all(&dir, &out_dir, name)
}

/// Compares every output of an entry's run with its reference.
fn compare_all(dir: &Path, out_dir: &Path, name: &str) -> Result<(), String> {
    let check = read_json(&dir.join("check.json"));
    let Value::Object(outputs) = &check["outputs"] else {
        panic!("{name}/check.json: no outputs");
    };
    for (out, want) in outputs {
        compare(out, want, dir, out_dir)?;
    }
    Ok(())
}

/// Bounds checks change no result (issue 45): every entry with its texts
/// runs with and without `kernelkit run --check-bounds`. Where the plain run
/// passes, the checked run must pass too (no false positive) and write the
/// same bytes; where they differ, a second plain run tells a kernel whose
/// results vary from run to run (atomics in float) from a changed result.
/// Prints each entry's times and the total slowdown (the checked run waits
/// for its launch and reads its record back; compiles included, as in a
/// user's run).
#[test]
fn checked_bounds_change_no_result() {
    let corpus = corpus_dir();
    let device = common::test_device();
    let mut names = entries(&corpus);
    if let Ok(only) = std::env::var("KERNELKIT_CORPUS_ONLY") {
        let only: Vec<&str> = only.split(',').map(str::trim).collect();
        names.retain(|n| only.contains(&n.as_str()));
    }
    names.retain(|n| texts_dir(&corpus, n).is_some());
    if names.is_empty() {
        let msg = "no corpus entry has its texts (README: \"Texts\")";
        assert!(
            std::env::var_os("KERNELKIT_CORPUS_REQUIRE_TEXTS").is_none(),
            "{msg}"
        );
        println!("skipped: {msg}");
        return;
    }
    let timeout = Duration::from_secs(
        std::env::var("KERNELKIT_CORPUS_TIMEOUT")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(120),
    );
    let (mut plain_total, mut checked_total) = (Duration::ZERO, Duration::ZERO);
    let mut wrong = Vec::new();
    let mut compared = 0usize;
    let mut near = 0usize;
    println!("\ncorpus with --check-bounds on {device}:");
    for name in &names {
        let (dir, spec_path, work) = match stage(&corpus, name) {
            Ok(staged) => staged,
            Err(r) => {
                println!("{name}: not compared ({r})");
                continue;
            }
        };
        let plain_out = work.path().join("plain");
        let started = Instant::now();
        if let Err(r) = run_binary(&spec_path, &device, &plain_out, timeout)
            .and_then(|()| compare_all(&dir, &plain_out, name))
        {
            println!("{name}: not compared (fails unchecked: {r})");
            continue;
        }
        let plain = started.elapsed();
        let checked_out = work.path().join("checked");
        let started = Instant::now();
        let checked = run_binary_with(
            &spec_path,
            &device,
            &checked_out,
            timeout,
            &["--check-bounds"],
        )
        .and_then(|()| compare_all(&dir, &checked_out, name));
        let checked_time = started.elapsed();
        compared += 1;
        plain_total += plain;
        checked_total += checked_time;
        let verdict = match checked {
            Err(r) => {
                wrong.push(format!("{name}: fails checked: {r}"));
                "FAILS CHECKED".to_string()
            }
            Ok(()) if same_files(&plain_out, &checked_out) => "same bytes".to_string(),
            Ok(()) => {
                near += 1;
                format!(
                    "passes its reference check; bytes differ, by at most {:.1e} relative \
                     (the compiler contracts a*b+c differently around the views)",
                    max_relative_difference(&dir, &plain_out, &checked_out)
                )
            }
        };
        println!(
            "{name}: {verdict}; {:.0} ms unchecked, {:.0} ms checked",
            plain.as_secs_f64() * 1e3,
            checked_time.as_secs_f64() * 1e3
        );
    }
    println!(
        "\n{compared} entries compared: {} byte-identical, {near} within their tolerance, {} \
         changed; {:.2} s unchecked, {:.2} s checked ({:.2}x)",
        compared - near - wrong.len(),
        wrong.len(),
        plain_total.as_secs_f64(),
        checked_total.as_secs_f64(),
        checked_total.as_secs_f64() / plain_total.as_secs_f64().max(1e-9)
    );
    assert!(
        wrong.is_empty(),
        "bounds checks changed results:\n  {}",
        wrong.join("\n  ")
    );
}

/// The largest relative difference between the float elements of an
/// entry's outputs in two output folders.
fn max_relative_difference(dir: &Path, a: &Path, b: &Path) -> f64 {
    let check = read_json(&dir.join("check.json"));
    let Value::Object(outputs) = &check["outputs"] else {
        return f64::NAN;
    };
    let mut worst = 0f64;
    for (out, want) in outputs {
        let dtype = want["dtype"].as_str().expect("dtype");
        let shape: Vec<usize> = want["shape"]
            .as_array()
            .expect("shape")
            .iter()
            .map(|d| d.as_u64().expect("extent") as usize)
            .collect();
        let declared = DType::from_name(dtype).expect("a dtype name");
        let read = |d: &Path| npy::read(&d.join(format!("{out}.npy")), out, declared, &shape);
        let (Ok(x), Ok(y)) = (read(a), read(b)) else {
            return f64::NAN;
        };
        for (p, q) in decode(&x, dtype).iter().zip(&decode(&y, dtype)) {
            if let (Elem::Float { value: p, .. }, Elem::Float { value: q, .. }) = (p, q) {
                if p != q {
                    worst = worst.max((p - q).abs() / p.abs().max(q.abs()).max(f64::MIN_POSITIVE));
                }
            }
        }
    }
    worst
}

/// Whether two output folders hold the same files, byte for byte.
fn same_files(a: &Path, b: &Path) -> bool {
    let list = |d: &Path| -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(d)
            .map(|it| {
                it.filter_map(|e| e.ok())
                    .map(|e| {
                        (
                            e.file_name().to_string_lossy().into_owned(),
                            std::fs::read(e.path()).unwrap_or_default(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let (x, y) = (list(a), list(b));
    !x.is_empty() && x == y
}

/// An entry's spec written whole (texts joined) into a temporary folder:
/// (the entry's folder, the spec's path, the folder, kept alive by the
/// caller).
fn stage(corpus: &Path, name: &str) -> Result<(PathBuf, PathBuf, tempfile::TempDir), String> {
    let dir = corpus.join(name);
    let check = read_json(&dir.join("check.json"));
    let texts = texts_dir(corpus, name).ok_or("no source.metal")?;
    let source = text(&texts.join("source.metal"), &check["source_sha256"])?;
    let header = match check["header_sha256"] {
        Value::Null => None,
        ref sha => Some(text(&texts.join("header.metal"), sha)?),
    };
    // call.json is the spec less its texts: with them, the library's reader
    // checks it and joins its `.npy` paths to the entry's folder, and its
    // writer gives the file `kernelkit run` reads from elsewhere.
    let Value::Object(mut call) = read_json(&dir.join("call.json")) else {
        panic!("{name}/call.json is not an object");
    };
    call.insert("source".into(), Value::String(source));
    if let Some(h) = header {
        call.insert("header".into(), Value::String(h));
    }
    let entry_dir = std::path::absolute(&dir).expect("an absolute entry folder");
    let spec = SpecFile::from_json(&Value::Object(call).to_string(), &entry_dir)
        .unwrap_or_else(|e| panic!("{name}/call.json: {e}"));

    let work = tempfile::tempdir().expect("a temporary folder");
    let spec_path = work.path().join("spec.json");
    std::fs::write(&spec_path, spec.to_json().expect("UTF-8 paths")).unwrap();
    Ok((dir, spec_path, work))
}

/// An entry's text, checked against the SHA-256 recorded when it was taken
/// from its repository: the test runs the published text, byte for byte.
fn text(path: &Path, sha: &Value) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let got = hex(&sha256(&bytes));
    let want = sha.as_str().unwrap_or_default();
    assert_eq!(
        got,
        want,
        "{} is not the published text (its SHA-256 differs from check.json)",
        path.display()
    );
    String::from_utf8(bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// `kernelkit run SPEC --device D --out-dir OUT`, killed after `timeout`.
fn run_binary(spec: &Path, device: &str, out: &Path, timeout: Duration) -> Result<(), String> {
    run_binary_with(spec, device, out, timeout, &[])
}

/// [`run_binary`] with more arguments (`--check-bounds`).
fn run_binary_with(
    spec: &Path,
    device: &str,
    out: &Path,
    timeout: Duration,
    extra: &[&str],
) -> Result<(), String> {
    let bin = std::env::var_os("KERNELKIT_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_kernelkit")));
    let mut child = Command::new(bin)
        .arg("run")
        .arg(spec)
        .args(["--device", device, "--out-dir"])
        .arg(out)
        .args(extra)
        .env(
            "KERNELKIT_CACHE",
            std::env::var_os("KERNELKIT_CORPUS_CACHE").unwrap_or_else(|| "memory".into()),
        )
        .env_remove("KERNELKIT_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the kernelkit binary starts");
    // Read stderr on a thread so a long compiler log cannot block the child.
    let mut stderr = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait().expect("waiting for kernelkit") {
            Some(status) => break Some(status),
            None if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    let stderr = reader.join().unwrap_or_default();
    match status {
        None => Err(format!("timed out after {} s", timeout.as_secs())),
        Some(s) if s.success() => Ok(()),
        Some(s) => Err(format!(
            "exit {}: {}",
            s.code().unwrap_or(-1),
            reason(&stderr)
        )),
    }
}

/// One line from a failed run's stderr: its first line without the
/// `kernelkit run: kernel `NAME`: ` prefix, and for a compile failure the
/// compiler's first error, which says more than the kernel's long name.
fn reason(stderr: &str) -> String {
    let first = stderr.lines().next().unwrap_or("").trim();
    let first = match first.split_once("`: ") {
        Some((head, rest)) if head.starts_with("kernelkit run: kernel `") => rest,
        _ => first,
    };
    let error = stderr
        .lines()
        .skip(1)
        .find(|l| l.contains("error:") || l.contains("error "))
        .map(|l| l.trim());
    match error {
        Some(e) if first.contains("failed to compile") || first.contains("compile") => {
            let compiler = first.split(" failed to compile").next().unwrap_or(first);
            let compiler = compiler.split(" = ").next().unwrap_or(compiler);
            shorten(&format!("{compiler} compile error: {e}"))
        }
        _ => shorten(first),
    }
}

fn shorten(line: &str) -> String {
    const MAX: usize = 220;
    if line.len() <= MAX {
        return line.to_string();
    }
    let mut end = MAX;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &line[..end])
}

/// One output against its expected file, by its rule.
fn compare(out: &str, want: &Value, dir: &Path, out_dir: &Path) -> Result<(), String> {
    let dtype = want["dtype"].as_str().expect("dtype");
    let shape: Vec<usize> = want["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("extent") as usize)
        .collect();
    // Both files are read as the declared output: a file of another dtype
    // or shape is an error that says so.
    let declared = DType::from_name(dtype).expect("a dtype name");
    let read = |path: &Path| npy::read(path, out, declared, &shape).map_err(|e| e.to_string());
    let expected = read(&dir.join(want["file"].as_str().expect("file")))?;
    let got = read(&out_dir.join(format!("{out}.npy")))?;
    let g = decode(&got, dtype);
    let e = decode(&expected, dtype);
    check_rule(&want["rule"], dtype, &g, &e).map_err(|r| format!("`{out}`: {r}"))
}

/// An element, decoded for comparison: floats as f64 (with the f32 bits for
/// ulp distances), integers exactly.
#[derive(Clone, Copy, Debug)]
enum Elem {
    Float { value: f64, bits32: Option<u32> },
    Int(i128),
}

impl Elem {
    fn sort_key(&self) -> f64 {
        match *self {
            Elem::Float { value, .. } => value,
            Elem::Int(i) => i as f64,
        }
    }
}

impl std::fmt::Display for Elem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Elem::Float { value, .. } => write!(f, "{value:e}"),
            Elem::Int(i) => write!(f, "{i}"),
        }
    }
}

fn dtype_size(dtype: &str) -> usize {
    match dtype {
        "bool" | "uint8" | "int8" => 1,
        "uint16" | "int16" | "float16" | "bfloat16" => 2,
        "uint32" | "int32" | "float32" => 4,
        "uint64" | "int64" | "float64" => 8,
        other => panic!("dtype {other} is not used by the corpus"),
    }
}

fn decode(bytes: &[u8], dtype: &str) -> Vec<Elem> {
    let w = dtype_size(dtype);
    bytes
        .chunks_exact(w)
        .map(|c| {
            let float = |value: f64| Elem::Float {
                value,
                bits32: None,
            };
            match dtype {
                "bool" | "uint8" => Elem::Int(c[0].into()),
                "int8" => Elem::Int((c[0] as i8).into()),
                "uint16" => Elem::Int(u16::from_le_bytes([c[0], c[1]]).into()),
                "int16" => Elem::Int(i16::from_le_bytes([c[0], c[1]]).into()),
                "uint32" => Elem::Int(u32::from_le_bytes(c.try_into().unwrap()).into()),
                "int32" => Elem::Int(i32::from_le_bytes(c.try_into().unwrap()).into()),
                "uint64" => Elem::Int(u64::from_le_bytes(c.try_into().unwrap()).into()),
                "int64" => Elem::Int(i64::from_le_bytes(c.try_into().unwrap()).into()),
                "float16" => float(half::f16::from_le_bytes([c[0], c[1]]).to_f64()),
                "bfloat16" => float(half::bf16::from_le_bytes([c[0], c[1]]).to_f64()),
                "float32" => {
                    let bits = u32::from_le_bytes(c.try_into().unwrap());
                    Elem::Float {
                        value: f32::from_bits(bits).into(),
                        bits32: Some(bits),
                    }
                }
                "float64" => float(f64::from_le_bytes(c.try_into().unwrap())),
                other => panic!("dtype {other}"),
            }
        })
        .collect()
}

/// f32 bits on a line where adjacent floats are adjacent integers (-0 = +0).
fn ordered(bits: u32) -> i64 {
    if bits & 0x8000_0000 != 0 {
        -i64::from(bits & 0x7fff_ffff)
    } else {
        i64::from(bits)
    }
}

fn check_rule(rule: &Value, dtype: &str, got: &[Elem], want: &[Elem]) -> Result<(), String> {
    let kind = rule["kind"].as_str().expect("rule kind");
    if kind == "multiset" {
        let sorted = |v: &[Elem]| {
            let mut v = v.to_vec();
            v.sort_by(|a, b| a.sort_key().total_cmp(&b.sort_key()));
            v
        };
        return check_rule(&rule["inner"], dtype, &sorted(got), &sorted(want))
            .map_err(|r| format!("as a multiset (sorted): {r}"));
    }
    let ok = |g: &Elem, w: &Elem| -> bool {
        match (kind, g, w) {
            ("exact", Elem::Int(a), Elem::Int(b)) => a == b,
            ("exact", Elem::Float { value: a, .. }, Elem::Float { value: b, .. }) => {
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
            }
            (
                "ulp",
                Elem::Float {
                    value: a,
                    bits32: Some(x),
                },
                Elem::Float {
                    value: b,
                    bits32: Some(y),
                },
            ) => {
                if a.is_nan() || b.is_nan() {
                    return a.is_nan() && b.is_nan();
                }
                let max = rule["max_ulp"].as_i64().expect("max_ulp");
                (ordered(*x) - ordered(*y)).abs() <= max
            }
            ("close", Elem::Float { value: a, .. }, Elem::Float { value: b, .. }) => {
                if a.is_nan() || b.is_nan() {
                    return a.is_nan() && b.is_nan();
                }
                if a.is_infinite() || b.is_infinite() {
                    return a == b;
                }
                let rtol = rule["rtol"].as_f64().expect("rtol");
                let atol = rule["atol"].as_f64().expect("atol");
                (a - b).abs() <= atol + rtol * b.abs()
            }
            ("close", Elem::Int(a), Elem::Int(b)) => {
                let atol = rule["atol"].as_f64().expect("atol");
                ((a - b).abs() as f64) <= atol
            }
            _ => panic!("rule {kind} does not apply to {dtype}"),
        }
    };
    let bad: Vec<usize> = (0..got.len()).filter(|&i| !ok(&got[i], &want[i])).collect();
    match bad.first() {
        None => Ok(()),
        Some(&i) => Err(format!(
            "{} of {} elements differ ({kind}); first at flat index {i}: got {}, expected {}",
            bad.len(),
            got.len(),
            got[i],
            want[i]
        )),
    }
}

// SHA-256 (FIPS 180-4), for the texts' checksums. The round constants are
// the first 32 bits of the fractional parts of the cube roots of the first
// 64 primes, the initial state those of the square roots of the first 8;
// both are computed here and the known digests below check them.

fn primes(n: usize) -> Vec<u32> {
    let mut out = Vec::with_capacity(n);
    let mut k = 2u32;
    while out.len() < n {
        if (2..k)
            .take_while(|d| d * d <= k)
            .all(|d| !k.is_multiple_of(d))
        {
            out.push(k);
        }
        k += 1;
    }
    out
}

/// The first 32 bits of the fractional part of `p^(1/root)`, exactly: the
/// f64 estimate is corrected with integer arithmetic.
fn frac_root_bits(p: u32, root: u32) -> u32 {
    // x = floor(p^(1/root) * 2^32) is the largest x with x^root <= p * 2^(32*root).
    let target = u128::from(p) << (32 * root);
    let pow = |x: u128| (0..root).fold(1u128, |acc, _| acc * x);
    let mut x = (f64::from(p).powf(1.0 / f64::from(root)) * 4_294_967_296.0) as u128;
    while pow(x) > target {
        x -= 1;
    }
    while pow(x + 1) <= target {
        x += 1;
    }
    x as u32
}

fn sha256(data: &[u8]) -> [u8; 32] {
    let ps = primes(64);
    let k: Vec<u32> = ps.iter().map(|&p| frac_root_bits(p, 3)).collect();
    let mut h: Vec<u32> = ps[..8].iter().map(|&p| frac_root_bits(p, 2)).collect();
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in msg.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, c) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes(c.try_into().unwrap());
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let mut v: [u32; 8] = h.clone().try_into().unwrap();
        for i in 0..64 {
            let [a, b, c, d, e, f, g, hh] = v;
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(k[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            v = [t1.wrapping_add(t2), a, b, c, d.wrapping_add(t1), e, f, g];
        }
        for (x, y) in h.iter_mut().zip(v) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 32];
    for (i, x) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn sha256_matches_known_digests() {
    assert_eq!(
        hex(&sha256(b"")),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(
        hex(&sha256(b"abc")),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    // Two blocks (56 bytes of message: the length no longer fits the first).
    assert_eq!(
        hex(&sha256(
            b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
        )),
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    );
}

#[test]
fn rules_compare_as_documented() {
    let f = |v: f32| Elem::Float {
        value: v.into(),
        bits32: Some(v.to_bits()),
    };
    let next = |v: f32| f32::from_bits(v.to_bits() + 1);
    let ulp2 = serde_json::json!({"kind": "ulp", "max_ulp": 2});
    let one = 1.0f32;
    assert!(check_rule(&ulp2, "float32", &[f(next(next(one)))], &[f(one)]).is_ok());
    assert!(check_rule(&ulp2, "float32", &[f(next(next(next(one))))], &[f(one)]).is_err());
    assert!(check_rule(&ulp2, "float32", &[f(-0.0)], &[f(0.0)]).is_ok());
    assert!(check_rule(&ulp2, "float32", &[f(f32::NAN)], &[f(f32::NAN)]).is_ok());
    assert!(check_rule(&ulp2, "float32", &[f(f32::NAN)], &[f(1.0)]).is_err());
    let exact = serde_json::json!({"kind": "exact"});
    assert!(check_rule(&exact, "int32", &[Elem::Int(3)], &[Elem::Int(3)]).is_ok());
    assert!(check_rule(&exact, "int32", &[Elem::Int(3)], &[Elem::Int(4)]).is_err());
    let close = serde_json::json!({"kind": "close", "rtol": 1e-2, "atol": 0.0});
    assert!(check_rule(&close, "float16", &[f(1.009)], &[f(1.0)]).is_ok());
    assert!(check_rule(&close, "float16", &[f(1.02)], &[f(1.0)]).is_err());
    let multi = serde_json::json!({"kind": "multiset", "inner": {"kind": "exact"}});
    let ints = |v: &[i128]| v.iter().map(|&i| Elem::Int(i)).collect::<Vec<_>>();
    assert!(check_rule(&multi, "int32", &ints(&[3, 1, 2]), &ints(&[1, 2, 3])).is_ok());
    assert!(check_rule(&multi, "int32", &ints(&[3, 1, 1]), &ints(&[1, 2, 3])).is_err());
}
