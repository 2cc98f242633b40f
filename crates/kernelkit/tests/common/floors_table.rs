// The floor table of the kernelkit crate: included by tests/floors.rs
// (the check CI runs) and by crates/floors/examples/report.rs.

/// The floors, bottom first, and the modules on each.
const FLOORS: &[(&str, &[&str])] = &[
    // Element types, errors, configuration, counters, lock primitives,
    // NVTX ranges.
    (
        "base",
        &["dtype", "error", "config", "stats", "sync", "nvtx"],
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
    ("api", &["spec_file", "interop", "compile_worker", "manifest"]),
];
