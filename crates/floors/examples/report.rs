//! Prints the floors report of a crate:
//! `cargo run -p floors --example report -- SRC [--tests]` (`--tests` holds
//! unit tests to the floors too).
// The same table as the check in CI.
include!("../../kernelkit/tests/common/floors_table.rs");

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tests = args.iter().any(|a| a == "--tests");
    let src = args
        .iter()
        .find(|a| *a != "--tests")
        .cloned()
        .unwrap_or_else(|| "crates/kernelkit/src".into());
    let floors = floors::Floors::new(FLOORS);
    let floors = if tests {
        floors.including_tests()
    } else {
        floors
    };
    match floors::check(std::path::Path::new(&src), &floors) {
        Ok(report) => print!("{report}"),
        Err(e) => eprintln!("{e}"),
    }
}
