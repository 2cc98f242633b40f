//! `kernelkit tune` and `precompile --tune` on the CPU: the ranking names
//! every configuration (a failing one with its error), the record lands in
//! the store, and a signed bundle carries it to another store, where
//! `tune` finds the choice without timing (`tunes=0 tune_hits=1
//! tune_launches=0`).

use std::path::Path;
use std::process::Command;

fn kernelkit(store: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kernelkit"));
    cmd.env("KERNELKIT_CACHE", "disk")
        .env("KERNELKIT_CACHE_DIR", store)
        .env_remove("KERNELKIT_REMOTE_CACHE");
    cmd
}

fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn counter(text: &str, name: &str) -> u64 {
    let line = text.lines().find(|l| l.starts_with("cache:")).unwrap();
    line.split_whitespace()
        .find_map(|f| f.strip_prefix(&format!("{name}=")))
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn tuned_records_travel_in_bundles() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::fs::write(
        d.join("spec.json"),
        format!(
            r#"{{"name": "tiled", "inputs": [["inp", "float32", [4096]]], "outputs": [["out", "float32", [4096]]],
 "source": "// {nanos}\nuint base = thread_position_in_grid.x * TILE; for (int k = 0; k < TILE; k++) {{ uint i = base + k; if (i < inp_shape[0]) out[i] = inp[i] * 3.0f; }}",
 "grid": [4096, 1, 1]}}"#
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("spec.configs.json"),
        r#"[{"threadgroup": [64], "template": {"TILE": 1}},
            {"threadgroup": [64], "template": {"TILE": 4}, "grid": [1024]},
            {"threadgroup": [1073741824], "template": {"TILE": 1}}]"#,
    )
    .unwrap();
    let (a, b) = (d.join("a"), d.join("b"));
    let pre = ok(kernelkit(&a)
        .args(["precompile", "--tune", "--device", "cpu"])
        .arg(d.join("spec.json")));
    assert!(pre.contains("tuned, chose"), "{pre}");
    assert_eq!(counter(&pre, "tunes"), 1);

    let ranking = ok(kernelkit(&a)
        .args(["tune", "--device", "cpu", "--configs"])
        .arg(d.join("spec.configs.json"))
        .arg(d.join("spec.json")));
    assert!(ranking.contains("failed:"), "{ranking}");
    assert!(ranking.contains("<- chosen"), "{ranking}");
    assert_eq!(counter(&ranking, "tunes"), 0, "{ranking}");

    ok(kernelkit(&a)
        .args(["cache", "keygen", "--out"])
        .arg(d.join("key")));
    ok(kernelkit(&a)
        .args(["cache", "export", "--out"])
        .arg(d.join("bundle"))
        .arg("--signing-key")
        .arg(d.join("key")));
    ok(kernelkit(&b)
        .args(["cache", "import", "--trusted-keys"])
        .arg(d.join("key.pub"))
        .arg(d.join("bundle")));
    let there = ok(kernelkit(&b)
        .args(["tune", "--device", "cpu", "--configs"])
        .arg(d.join("spec.configs.json"))
        .arg(d.join("spec.json")));
    assert_eq!(
        (
            counter(&there, "tunes"),
            counter(&there, "tune_hits"),
            counter(&there, "tune_launches")
        ),
        (0, 1, 0),
        "{there}"
    );
}
