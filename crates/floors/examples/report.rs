//! Prints the floors report of a crate: `cargo run -p floors --example report -- SRC`.
fn main() {
    let src = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "crates/kernelkit/src".into());
    let floors = floors::Floors::new(&[
        (
            "base",
            &["dtype", "error", "sync", "stats", "options", "config"],
        ),
        ("codegen", &["codegen"]),
        ("backend", &["backend"]),
        ("cache", &["cache"]),
        ("device", &["device", "array"]),
        ("kernel", &["kernel"]),
        ("interop", &["interop"]),
        // The spec file format: builds kernels, calls and input arrays.
        ("spec_file", &["spec_file"]),
    ]);
    match floors::check(std::path::Path::new(&src), &floors) {
        Ok(report) => print!("{report}"),
        Err(e) => eprintln!("{e}"),
    }
}
