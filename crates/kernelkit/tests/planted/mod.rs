//! The planted-bug corpus of bounds checks and its correct controls (see
//! `tests/bounds_planted.rs`).

pub mod cases;
pub mod controls;
