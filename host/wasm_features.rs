//! The features rustc's wasm32-unknown-unknown target enables, which binaryen's
//! `wasm-opt` must be told to accept: shared by `host/build.rs` (the component) and
//! `xtask` (the browser package).

/// `wasm-opt` flags, one per feature.
pub(crate) const WASM_FEATURES: &[&str] = &[
    "--enable-bulk-memory",
    "--enable-nontrapping-float-to-int",
    "--enable-sign-ext",
    "--enable-reference-types",
    "--enable-multivalue",
    "--enable-mutable-globals",
];
