//! The host's tests: the component under wasmtime on SQLite, and the `spool` CLI.
//!
//! One test binary, not one per file: each links wasmtime and cranelift (about 50 MB
//! with line tables), so thirty of them took 1.5 GB of disk and thirty links in every
//! build. Run one file's tests with its module name as the filter, e.g.
//! `cargo test -p spool-host --test suite bounded_memory::`. A new file must be listed
//! below, which `test_every_test_file_is_in_the_suite` checks.

mod common;
// At the root: its `conformance_tests!` names it as `$crate::conformance`.
#[path = "../../../tests/conformance/mod.rs"]
mod conformance;

mod bounded_memory;
mod cache;
mod cli;
mod cli_compaction;
mod cli_export;
mod cli_fork;
mod cli_import;
mod cli_index;
mod cli_lifecycle;
mod cli_postgres;
mod cli_product;
mod cli_resume;
mod cli_stream;
mod cli_usage;
mod compaction_api;
mod component_imports;
mod concurrency;
mod conformance_postgres;
mod conformance_sqlite;
mod damaged_data;
mod data_id_processes;
mod durability;
mod failure_surfaces;
mod foreign_db;
mod fork_api;
mod index_backfill_memory;
mod lifecycle_api;
mod migration_fixture;
mod order_processes;
mod postgres_failover;
mod postgres_processes;
mod postgres_restart;
mod reset_archives;
mod spool_api;
mod surfaces;
mod vectors_component;
mod workspace_isolation;

#[test]
fn test_every_test_file_is_in_the_suite() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite");
    let root = include_str!("main.rs");
    for file in std::fs::read_dir(&dir).expect("read tests/suite/") {
        let name = file.expect("a directory entry").file_name();
        let name = name.to_string_lossy();
        if let Some(module) = name.strip_suffix(".rs").filter(|m| *m != "main") {
            assert!(
                root.contains(&format!("\nmod {module};\n")),
                "tests/suite/{name} is not a module of tests/suite/main.rs: its tests never run"
            );
        }
    }
}
