//! The line a benchmark prints for each figure, which `cargo xtask bench` collects into
//! its closing table (see `xtask/src/bench.rs`):
//!
//! `figure<TAB>name<TAB>value<TAB>unit<TAB>goal`, goal one of `>= X`, `<= X` or `-`.

/// Prints one figure line; `goal` is `">= 0.9"`, `"<= 200"` or `"-"` (none).
pub(crate) fn figure(name: &str, value: f64, unit: &str, goal: &str) {
    debug_assert!(!name.contains(['\t', '\n']) && !unit.contains(['\t', '\n']));
    println!("figure\t{name}\t{value}\t{unit}\t{goal}");
}
