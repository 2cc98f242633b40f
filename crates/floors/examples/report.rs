//! Prints the floors report of a crate: `cargo run -p floors --example report -- SRC`.
// The same table as the check in CI.
include!("../../kernelkit/tests/common/floors_table.rs");

fn main() {
    let src = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "crates/kernelkit/src".into());
    let floors = floors::Floors::new(FLOORS);
    match floors::check(std::path::Path::new(&src), &floors) {
        Ok(report) => print!("{report}"),
        Err(e) => eprintln!("{e}"),
    }
}
