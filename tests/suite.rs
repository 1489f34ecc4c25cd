//! The core's integration tests, as one test binary: thirty binaries, each linking the
//! core, took 600 MB of disk and thirty links in every build. Each `tests/NAME.rs` is
//! the module `NAME`: run one file's tests with `cargo test -p spool --test suite NAME::`.
//! Cargo does not find these files on its own (`autotests = false`): a new one must be
//! listed below, which `test_every_test_file_is_in_the_suite` checks.

// Shared by several modules, and named `$crate::…` by their macros: at the root.
#[path = "conformance/mod.rs"]
mod conformance;
mod support;
#[path = "vectors/mod.rs"]
mod vectors;

mod bounded;
mod branch_interleavings;
mod branch_props;
mod compaction_detectors;
mod compaction_ops;
mod compaction_pure;
mod conformance_memory;
mod continuity;
mod crash_points;
mod data_ids;
mod edit_message;
mod hosts;
mod import;
mod import_claude;
mod import_codex;
mod import_gemini;
mod import_opencode;
mod import_pi;
mod import_spool;
mod key_tags;
mod lifecycle;
mod limits;
mod message_index;
mod migration;
mod model;
mod operations;
mod order;
mod provider_fork;
mod provider_fork_props;
mod resume_props;
mod stored_data;
mod streaming;
mod ts_declarations;
mod ts_table;
mod usage;
mod vectors_core;
mod workspace_isolation;

#[test]
fn test_every_test_file_is_in_the_suite() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let root = include_str!("suite.rs");
    for file in std::fs::read_dir(&dir).expect("read tests/") {
        let name = file.expect("a directory entry").file_name();
        let name = name.to_string_lossy();
        if let Some(module) = name.strip_suffix(".rs").filter(|m| *m != "suite") {
            assert!(
                root.contains(&format!("\nmod {module};\n")),
                "tests/{name} is not a module of tests/suite.rs: its tests never run"
            );
        }
    }
}
