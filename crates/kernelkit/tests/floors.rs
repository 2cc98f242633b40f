//! Floors only look down: every path in the library names an item of its
//! own floor or of one below (docs/design.md, "The floors"). The checker
//! (`crates/floors`) resolves `use` trees, `super::`, aliases, re-exports
//! and paths inside macros, and its own tests plant a violation of each
//! kind; here it runs on this crate with the floor table below, unit tests
//! included (a low floor's test that sets its case up through a floor above
//! ties the two together; such tests live in `tests/`).

use std::path::Path;

include!("common/floors_table.rs");

#[test]
fn no_module_imports_from_a_floor_above() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let floors = floors::Floors::new(FLOORS).including_tests();
    let report = floors::check(&src, &floors).expect("the crate parses");
    println!("{report}");
    assert!(report.unassigned.is_empty(), "{report}");
    assert!(report.violations.is_empty(), "{report}");
    // The check saw the crate (not an empty tree).
    assert!(report.modules > 50 && report.resolved > 1000, "{report}");
}
