//! Floors only look down: every path in the library names an item of its
//! own floor or of one below (DESIGN.md, "Layers"). The checker
//! (`crates/floors`) resolves `use` trees, `super::`, aliases, re-exports
//! and paths inside macros, and its own tests plant a violation of each
//! kind; here it runs on this crate with the floor table below.

use std::path::Path;

/// The floors, bottom first, and the modules on each.
const FLOORS: &[(&str, &[&str])] = &[
    // Element types, errors, configuration, counters, lock primitives.
    (
        "base",
        &["dtype", "error", "options", "config", "stats", "sync"],
    ),
    // Pure source generation, with its own vocabulary.
    ("codegen", &["codegen"]),
    // Compile, load, memory and launch per device kind, on borrowed
    // descriptions.
    ("backend", &["backend"]),
    // The module resolver: memory, artifact tiers, the module key.
    ("cache", &["cache"]),
    // Devices, streams, arrays and one call's device work.
    ("device", &["device", "array"]),
    // Kernels, the variant cache, calls.
    ("kernel", &["kernel"]),
    // What sits on top of kernels: spec files, interop adapters, the
    // compile worker's entry point.
    ("api", &["spec_file", "interop", "compile_worker"]),
];

#[test]
fn no_module_imports_from_a_floor_above() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let report = floors::check(&src, &floors::Floors::new(FLOORS)).expect("the crate parses");
    println!("{report}");
    assert!(report.unassigned.is_empty(), "{report}");
    assert!(report.violations.is_empty(), "{report}");
    // The check saw the crate (not an empty tree).
    assert!(report.modules > 50 && report.resolved > 1000, "{report}");
}
