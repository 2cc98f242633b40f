//! Signed bundles between two machine layouts, through the `kernelkit`
//! binary: `precompile` fills a store on the "build machine" (its own
//! `HOME`, working directory and `KERNELKIT_CACHE_DIR`), `cache export`
//! signs a bundle of it, `cache import` adds it to an empty store on the
//! "node" (another `HOME`, user directory and working directory), and a
//! fresh `kernelkit run` of every kernel there hits the store and compiles
//! nothing. Bad bundles are refused whole and leave the node's store empty.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;

/// One machine's layout.
struct Layout {
    home: PathBuf,
    cwd: PathBuf,
    store: PathBuf,
}

impl Layout {
    fn new(root: &Path, user: &str, cwd: &str, store: &str) -> Layout {
        let l = Layout {
            home: root.join("home").join(user),
            cwd: root.join(cwd),
            store: root.join(store),
        };
        std::fs::create_dir_all(&l.home).unwrap();
        std::fs::create_dir_all(&l.cwd).unwrap();
        l
    }

    /// `kernelkit ARGS` as a process of this machine (nothing inherited
    /// from the caller's kernelkit settings).
    fn kernelkit(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kernelkit"));
        cmd.args(args)
            .current_dir(&self.cwd)
            .env("HOME", &self.home)
            .env("USER", self.home.file_name().unwrap())
            .env("KERNELKIT_CACHE", "disk")
            .env("KERNELKIT_CACHE_DIR", &self.store)
            .env("CXX", "c++")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("KERNELKIT_TRUSTED_KEYS")
            .env_remove("KERNELKIT_CACHE_MAX_BYTES")
            .env_remove("KERNELKIT_BUNDLE_MAX_BYTES")
            .env_remove("KERNELKIT_LOG");
        cmd
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.kernelkit(args).output().unwrap();
        assert!(out.status.success(), "kernelkit {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The store's lifetime counters from `cache stats`.
    fn lifetime(&self) -> (u64, u64, u64) {
        let stats = self.ok(&["cache", "stats"]);
        let line = stats
            .lines()
            .find_map(|l| l.strip_prefix("since last clear: "))
            .unwrap_or_else(|| panic!("{stats}"));
        let get = |name: &str| -> u64 {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                .unwrap()
                .parse()
                .unwrap()
        };
        (get("hits"), get("misses"), get("writes"))
    }

    fn entries(&self) -> usize {
        let list = self.ok(&["cache", "list"]);
        list.lines()
            .last()
            .and_then(|l| l.strip_suffix(" entries"))
            .unwrap_or_else(|| panic!("{list}"))
            .parse()
            .unwrap()
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Writes the spec of a kernel `name` that adds `k` to its input.
fn spec(dir: &Path, name: &str, k: i32, header: &str) -> PathBuf {
    let path = dir.join(format!("{name}.json"));
    let value = json!({
        "name": name,
        "inputs": [["a", "float32", [8]]],
        "outputs": [["out", "float32", [8]]],
        "header": header,
        "source": format!("uint i = thread_position_in_grid.x; out[i] = a[i] + {k};"),
        "grid": [8, 1, 1],
        "threadgroup": [8, 1, 1],
        "data": {"a": [0, 1, 2, 3, 4, 5, 6, 7]}
    });
    std::fs::write(&path, value.to_string()).unwrap();
    path
}

const KERNELS: [&str; 3] = ["add_one", "add_two", "add_three"];

/// The build machine: precompiles three portable kernels and one whose
/// header includes a file in the home directory, exports a signed bundle.
/// Returns (bundle, public key file).
fn build_machine(root: &Path) -> (PathBuf, PathBuf) {
    let a = Layout::new(root, "alice", "a/work", "a/home/alice/.cache/kernelkit");
    let mut specs: Vec<PathBuf> = KERNELS
        .iter()
        .enumerate()
        .map(|(k, name)| spec(&a.cwd, name, k as i32 + 1, ""))
        .collect();
    let params = a.home.join("params.h");
    std::fs::write(&params, "#define LOCAL_K 4\n").unwrap();
    // Old enough that the compile's dependency list takes it.
    std::fs::File::options()
        .write(true)
        .open(&params)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(60))
        .unwrap();
    specs.push(spec(
        &a.cwd,
        "add_local",
        4,
        &format!("#include \"{}\"\n", params.display()),
    ));
    let mut args = vec!["precompile", "--device", "cpu"];
    args.extend(specs.iter().map(|p| p.to_str().unwrap()));
    let out = a.ok(&args);
    assert!(out.contains("precompiled 4 of 4 specs"), "{out}");
    assert_eq!(a.entries(), 4);
    let key = root.join("a/signing.key");
    a.ok(&["cache", "keygen", "--out", key.to_str().unwrap()]);
    let bundle = root.join("a/kernels.kkb");
    let out = a.ok(&[
        "cache",
        "export",
        "--out",
        bundle.to_str().unwrap(),
        "--signing-key",
        key.to_str().unwrap(),
    ]);
    assert!(
        out.contains("exported 3 entries") && out.contains("1 left out as local"),
        "{out}"
    );
    assert!(out.contains("in the home directory"), "{out}");
    (bundle, root.join("a/signing.key.pub"))
}

/// A node with its own layout, trusting `public`.
fn node(root: &Path, name: &str, public: &Path) -> Layout {
    let b = Layout::new(
        root,
        name,
        &format!("{name}/srv"),
        &format!("{name}/var/kernelkit"),
    );
    let etc = root.join(name).join("etc");
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::copy(public, etc.join("trusted_keys")).unwrap();
    b
}

fn import(node: &Layout, root: &Path, name: &str, bundle: &Path) -> Output {
    let trusted = root.join(name).join("etc/trusted_keys");
    node.kernelkit(&["cache", "import", bundle.to_str().unwrap()])
        .env("KERNELKIT_TRUSTED_KEYS", trusted)
        .output()
        .unwrap()
}

#[test]
fn a_bundle_imported_under_another_layout_hits_for_every_kernel() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let (bundle, public) = build_machine(root);
    let b = node(root, "bob", &public);
    let out = import(&b, root, "bob", &bundle);
    let printed = text(&out);
    assert!(out.status.success(), "{printed}");
    assert!(printed.contains("imported 3 entries"), "{printed}");
    // Fresh processes on the node: every kernel hits, nothing compiles.
    for (k, name) in KERNELS.iter().enumerate() {
        let spec = spec(&b.cwd, name, k as i32 + 1, "");
        let result = b.ok(&["run", spec.to_str().unwrap(), "--device", "cpu"]);
        let expected: Vec<f64> = (0..8).map(|i| (i + k + 1) as f64).collect();
        let v: serde_json::Value = serde_json::from_str(&result).unwrap();
        let data: Vec<f64> = v["outputs"]["out"]["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(data, expected, "{name}");
    }
    assert_eq!(
        b.lifetime(),
        (3, 0, 3),
        "hits, misses, writes: the imports are the only writes"
    );
    // Imported files are the store's own: mode 0600.
    for entry in b.ok(&["cache", "list"]).lines().skip(1) {
        if let Some(key) = entry.split_whitespace().find(|w| w.len() == 32) {
            let path = b.store.join(&key[..2]).join(format!("{key}.kka"));
            let mode = std::os::unix::fs::PermissionsExt::mode(
                &std::fs::metadata(&path).unwrap().permissions(),
            );
            assert_eq!(mode & 0o777, 0o600, "{}", path.display());
        }
    }
}

#[test]
fn bad_bundles_and_other_compilers_import_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let (bundle, public) = build_machine(root);
    let bytes = std::fs::read(&bundle).unwrap();
    let bad = root.join("bad.kkb");
    let mut cut = bytes.clone();
    cut.truncate(bytes.len() / 2);
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 3] ^= 0x10;
    for (what, b) in [("truncated", cut), ("one bit flipped", flipped)] {
        std::fs::write(&bad, &b).unwrap();
        let n = node(root, "carol", &public);
        let out = import(&n, root, "carol", &bad);
        assert_eq!(out.status.code(), Some(1), "{what}: {}", text(&out));
        assert!(
            text(&out).contains("refused, nothing imported"),
            "{what}: {}",
            text(&out)
        );
        assert_eq!(n.entries(), 0, "{what}");
    }
    // A bundle over KERNELKIT_BUNDLE_MAX_BYTES: refused before it is read.
    let n = node(root, "carol", &public);
    let out = n
        .kernelkit(&["cache", "import", bundle.to_str().unwrap()])
        .env(
            "KERNELKIT_TRUSTED_KEYS",
            root.join("carol/etc/trusted_keys"),
        )
        .env("KERNELKIT_BUNDLE_MAX_BYTES", "1K")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("over the 1024-byte limit")
            && text(&out).contains("KERNELKIT_BUNDLE_MAX_BYTES"),
        "{}",
        text(&out)
    );
    assert_eq!(n.entries(), 0);
    // A key the node does not trust.
    let n = node(root, "dave", &public);
    let other = root.join("other.key");
    n.ok(&["cache", "keygen", "--out", other.to_str().unwrap()]);
    std::fs::copy(
        root.join("other.key.pub"),
        root.join("dave/etc/trusted_keys"),
    )
    .unwrap();
    let out = import(&n, root, "dave", &bundle);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("not among the trusted keys"),
        "{}",
        text(&out)
    );
    assert_eq!(n.entries(), 0);
    // Another C++ compiler configuration (here: another CXX command, part
    // of the compiler identity): every entry skipped with a count.
    if Command::new("g++").arg("--version").output().is_ok() {
        let n = node(root, "erin", &public);
        let out = n
            .kernelkit(&["cache", "import", bundle.to_str().unwrap()])
            .env("KERNELKIT_TRUSTED_KEYS", root.join("erin/etc/trusted_keys"))
            .env("CXX", "g++")
            .output()
            .unwrap();
        let printed = text(&out);
        assert!(out.status.success(), "{printed}");
        assert!(
            printed.contains("imported 0 entries")
                && printed.contains("3 skipped for another compiler"),
            "{printed}"
        );
        assert_eq!(n.entries(), 0);
    } else {
        eprintln!("skipped the other-compiler case: no g++ on the PATH");
    }
}

#[test]
fn bundle_commands_refuse_the_fleet_tier() {
    let root = tempfile::tempdir().unwrap();
    let machine = Layout::new(root.path(), "builder", "work", "store");
    let key = root.path().join("k");
    for args in [
        vec![
            "cache",
            "keygen",
            "--remote",
            "--out",
            key.to_str().unwrap(),
        ],
        vec!["cache", "import", "--remote", key.to_str().unwrap()],
    ] {
        let out = machine.kernelkit(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("drop --remote"),
            "{args:?}: {}",
            text(&out)
        );
    }
    assert!(!key.exists(), "no key was made");
}

/// A manifest recorded by `kernelkit run` (`KERNELKIT_RECORD`) precompiled
/// for a portable CPU level into a bundle (`precompile --manifest`), listed
/// without importing (`cache inspect`), imported on a node, and run there
/// with no compiler and JIT forbidden.
#[test]
fn a_recorded_manifest_precompiles_into_a_portable_bundle_that_runs_without_a_compiler() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let build = Layout::new(root, "builder", "work", "build-store");
    let specs: Vec<PathBuf> = (0..3)
        .map(|k| spec(&build.cwd, &format!("rec{k}"), k, ""))
        .collect();
    let manifest = root.join("manifest.jsonl");
    for s in &specs {
        let out = build
            .kernelkit(&["run", s.to_str().unwrap()])
            .env("KERNELKIT_RECORD", &manifest)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
    }
    assert_eq!(
        std::fs::read_to_string(&manifest).unwrap().lines().count(),
        3
    );
    // The line a CPU run that copied a strided input records: read, and
    // nothing to build for the CPU (it copies on the host).
    let mut recorded = std::fs::read_to_string(&manifest).unwrap();
    recorded.push_str(
        "{\"arch\":\"native\",\"backend\":\"cpu\",\"builtin\":\"strided_copy\",\
         \"function\":\"kk_gather\"}\n",
    );
    std::fs::write(&manifest, recorded).unwrap();
    let key = root.join("ci.key");
    build.ok(&["cache", "keygen", "--out", key.to_str().unwrap()]);
    let bundle = root.join("cpu.kkb");
    let made = build.ok(&[
        "precompile",
        "--manifest",
        manifest.to_str().unwrap(),
        "--device",
        "cpu",
        "--target",
        "x86-64-v2",
        "--out",
        bundle.to_str().unwrap(),
        "--signing-key",
        key.to_str().unwrap(),
    ]);
    assert!(made.contains("3 entries, 0 failed"), "{made}");
    let listed = build.ok(&["cache", "inspect", bundle.to_str().unwrap()]);
    assert_eq!(
        listed
            .lines()
            .filter(|l| l.starts_with("code\tcpu\tx86-64-v2\t"))
            .count(),
        3,
        "{listed}"
    );
    let public = root.join("ci.key.pub");
    let node = node(root, "node", &public);
    let out = import(&node, root, "node", &bundle);
    assert!(out.status.success(), "{}", text(&out));
    for s in &specs {
        let out = node
            .kernelkit(&["run", s.to_str().unwrap()])
            .env("KERNELKIT_JIT", "forbid")
            .env("CXX", "/nonexistent/c++")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
    }
}

/// A manifest precompiled for a GPU architecture with NVRTC alone (no GPU)
/// carries kernelkit's strided-copy kernel for each CUDA target, code and
/// PTX, beside the variants, whether or not the manifest names it; `cache
/// inspect` lists it. Needs NVRTC (`KERNELKIT_NVRTC_PATH`, as
/// scripts/test.sh gives the nojit_cuda test); skips without it.
#[test]
fn a_cuda_bundle_carries_kernelkits_strided_copy_kernel() {
    if std::env::var_os("KERNELKIT_NVRTC_PATH").is_none() {
        println!("skipped: no KERNELKIT_NVRTC_PATH (scripts/test.sh names NVRTC 12.8)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let build = Layout::new(root, "builder", "work", "build-store");
    let spec = spec(&build.cwd, "rec_cuda", 1, "");
    let manifest = root.join("manifest.jsonl");
    let out = build
        .kernelkit(&["run", spec.to_str().unwrap()])
        .env("KERNELKIT_RECORD", &manifest)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let key = root.join("ci.key");
    build.ok(&["cache", "keygen", "--out", key.to_str().unwrap()]);
    let bundle = root.join("cuda.kkb");
    let made = build.ok(&[
        "precompile",
        "--manifest",
        manifest.to_str().unwrap(),
        "--arch",
        "sm_90a",
        "--ptx",
        "--out",
        bundle.to_str().unwrap(),
        "--signing-key",
        key.to_str().unwrap(),
    ]);
    assert!(made.contains("kernelkit's strided_copy"), "{made}");
    assert!(made.contains("4 entries, 0 failed"), "{made}");
    let listed = build.ok(&["cache", "inspect", bundle.to_str().unwrap()]);
    for prefix in ["code\tcuda\tsm_90a\t", "ptx\tcuda\tcompute_90\t"] {
        let rows: Vec<&str> = listed.lines().filter(|l| l.starts_with(prefix)).collect();
        assert_eq!(rows.len(), 2, "{listed}");
        assert_eq!(
            rows.iter()
                .filter(|l| l.contains("\tkernelkit_strided_copy\tkk_gather\t"))
                .count(),
            1,
            "{listed}"
        );
    }
}
