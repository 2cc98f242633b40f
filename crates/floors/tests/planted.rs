//! Planted violations: each way a path can reach an upper floor must be
//! found, and a crate that only looks down must pass.

use std::path::Path;

use floors::{check, Floors, Report};

/// Writes `files` (relative path, text) under a new temporary `src/` and
/// checks it against three floors: `low` < `mid` < `high`.
fn run(files: &[(&str, &str)]) -> Report {
    run_with(files, false)
}

/// [`run`], with unit tests held to the floors when `tests` is set.
fn run_with(files: &[(&str, &str)], tests: bool) -> Report {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    for (path, text) in files {
        let p = src.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
    let floors = Floors::new(&[
        ("low", &["low", "util"]),
        ("mid", &["mid"]),
        ("high", &["high"]),
    ]);
    let floors = if tests {
        floors.including_tests()
    } else {
        floors
    };
    check(Path::new(&src), &floors).unwrap()
}

const LIB: &str = "pub mod low; pub mod mid; pub mod high; pub mod util;\n\
                   pub use high::Top; pub use low::Base;\n";
const HIGH: &str = "pub struct Top; pub fn top() {} pub mod inner { pub struct Deep; }\n";
const MID: &str = "pub struct Middle;\n";
const UTIL: &str = "pub fn helper() {}\n";

fn crate_with_low(low: &str) -> Report {
    run(&[
        ("lib.rs", LIB),
        ("low.rs", low),
        ("mid.rs", MID),
        ("high/mod.rs", HIGH),
        ("util.rs", UTIL),
    ])
}

fn assert_one_up(report: &Report, path: &str, to: &str) {
    assert_eq!(report.violations.len(), 1, "{report}");
    let v = &report.violations[0];
    assert_eq!(v.path, path, "{report}");
    assert_eq!(v.to.0, to, "{report}");
    assert_eq!(v.from.1, "low");
}

#[test]
fn a_crate_that_looks_down_passes() {
    let report = crate_with_low(
        "use crate::util::helper;\nuse super::util;\npub struct Base;\n\
         pub fn f() { helper(); util::helper(); crate::util::helper(); let _ = std::mem::size_of::<u8>(); }\n",
    );
    assert!(report.violations.is_empty(), "{report}");
    assert!(report.unassigned.is_empty(), "{report}");
    assert!(report.resolved >= 3, "{report}");
}

#[test]
fn a_plain_use_is_found() {
    let r = crate_with_low("use crate::high::Top;\npub struct Base;\n");
    assert_one_up(&r, "crate::high::Top", "high");
}

#[test]
fn a_use_group_is_found() {
    let r = crate_with_low("use crate::{util, mid::Middle};\npub struct Base;\n");
    assert_one_up(&r, "crate::mid::Middle", "mid");
}

#[test]
fn super_paths_are_found() {
    let r = crate_with_low("pub struct Base;\npub fn f() { super::high::top(); }\n");
    assert_one_up(&r, "super::high::top", "high");
}

#[test]
fn a_re_export_at_the_root_is_followed() {
    // `crate::Top` is `high::Top`, re-exported by lib.rs.
    let r = crate_with_low("pub struct Base;\npub fn f() -> crate::Top { crate::Top }\n");
    assert_eq!(r.violations.len(), 2, "{r}");
    assert!(r.violations.iter().all(|v| v.to.0 == "high"), "{r}");
}

#[test]
fn an_alias_is_followed() {
    let r = crate_with_low(
        "use crate::high as h;\npub struct Base;\npub fn f() { let _ = h::inner::Deep; }\n",
    );
    // The `use` itself names the module `high`, and the path through the
    // alias names `high::inner`.
    assert_eq!(r.violations.len(), 2, "{r}");
    assert!(r.violations.iter().any(|v| v.to.0 == "high::inner"), "{r}");
}

#[test]
fn a_path_inside_a_macro_is_found() {
    let r = crate_with_low(
        "pub struct Base;\npub fn f() { let v = vec![crate::mid::Middle]; drop(v); }\n",
    );
    assert_one_up(&r, "crate::mid::Middle", "mid");
}

#[test]
fn a_path_in_a_type_position_is_found() {
    let r = crate_with_low("pub struct Base { pub m: Option<crate::mid::Middle> }\n");
    assert_one_up(&r, "crate::mid::Middle", "mid");
}

#[test]
fn a_re_export_inside_a_lower_module_is_followed() {
    // `util` re-exports a high item; low names it through util.
    let r = run(&[
        ("lib.rs", LIB),
        (
            "low.rs",
            "pub struct Base;\npub fn f() { crate::util::top(); }\n",
        ),
        ("mid.rs", MID),
        ("high/mod.rs", HIGH),
        ("util.rs", "pub use crate::high::top;\n"),
    ]);
    // Two: util's own re-export looks up, and low's path resolves to high.
    assert_eq!(r.violations.len(), 2, "{r}");
    assert!(
        r.violations
            .iter()
            .any(|v| v.from.0 == "low" && v.to.0 == "high"),
        "{r}"
    );
}

#[test]
fn test_code_is_exempt_and_other_cfgs_are_not() {
    let r = crate_with_low(
        "pub struct Base;\n\
         #[cfg(test)]\nmod tests { use crate::high::Top; #[test] fn t() { let _ = Top; } }\n\
         #[cfg(all(test, unix))]\nfn only_in_tests() { crate::high::top(); }\n\
         #[cfg(unix)]\nfn not_a_test() { crate::high::top(); }\n",
    );
    assert_one_up(&r, "crate::high::top", "high");
}

#[test]
fn test_code_counts_when_tests_are_included() {
    let low = "pub struct Base;\n\
               #[cfg(test)]\nmod tests { use crate::high::Top; #[test] fn t() { let _ = Top; } }\n\
               #[cfg(all(test, unix))]\nfn only_in_tests() { crate::mid::Middle; }\n\
               #[cfg(test)]\nmod file_tests;\n";
    let files = [
        ("lib.rs", LIB),
        ("low.rs", low),
        (
            "low/file_tests.rs",
            "fn t() { super::super::high::top(); }\n",
        ),
        ("mid.rs", MID),
        ("high/mod.rs", HIGH),
        ("util.rs", UTIL),
    ];
    let exempt = run_with(&files, false);
    assert!(exempt.violations.is_empty(), "{exempt}");
    let held = run_with(&files, true);
    let up = |from: &str, to: &str| {
        held.violations
            .iter()
            .any(|v| v.from.0 == from && v.to.0 == to)
    };
    assert!(up("low::tests", "high"), "{held}");
    assert!(up("low", "mid"), "{held}");
    assert!(up("low::file_tests", "high"), "{held}");
}

#[test]
fn modules_on_no_floor_are_listed() {
    let r = run(&[
        ("lib.rs", "pub mod low; pub mod stray;\n"),
        ("low.rs", "pub struct Base;\n"),
        ("stray.rs", "pub struct S;\n"),
    ]);
    assert_eq!(r.unassigned, vec!["stray".to_string()], "{r}");
}

#[test]
fn nested_files_and_path_attributes_are_read() {
    let r = run(&[
        ("lib.rs", "pub mod low; pub mod high;\n"),
        (
            "low.rs",
            "pub mod deep;\n#[path = \"odd_name.rs\"]\npub mod odd;\n",
        ),
        ("low/deep.rs", "pub fn f() { super::super::high::top(); }\n"),
        ("odd_name.rs", "pub fn g() { crate::high::top(); }\n"),
        ("high.rs", "pub fn top() {}\n"),
    ]);
    assert_eq!(r.violations.len(), 2, "{r}");
    let from: Vec<&str> = r.violations.iter().map(|v| v.from.0.as_str()).collect();
    assert!(
        from.contains(&"low::deep") && from.contains(&"low::odd"),
        "{r}"
    );
}
