//! The scenario vectors run by the native core on the in-memory storage.

use crate::vectors;

use serde_json::Value;
use spool::{Command, MemoryStorage};

/// Keeps reset archives in memory, like a host's archive store.
#[derive(Default)]
struct Archives(std::cell::RefCell<Vec<spool::ResetArchive>>);

impl spool::Archiver for Archives {
    fn write_archive(&self, _workspace: &str, archive: &spool::ResetArchive) -> Result<(), String> {
        self.0.borrow_mut().push(archive.clone());
        Ok(())
    }
}

struct Core(MemoryStorage, Archives);

impl vectors::VectorHost for Core {
    async fn exec(&mut self, workspace: &str, command: Command) -> Result<Value, vectors::Failure> {
        spool::execute_with(&self.0, &self.1, workspace, command).map_err(|e| vectors::Failure {
            code: e.code().to_owned(),
            message: e.to_string(),
        })
    }
}

#[test]
fn test_scenario_vectors_native_core() {
    let ran = vectors::block_on(vectors::run_all(|| async {
        Core(MemoryStorage::new(), Archives::default())
    }));
    assert_eq!(ran, vectors::all().len(), "the core runs every vector");
}

#[test]
fn test_every_vector_file_is_listed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("vectors dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = vectors::FILES
        .iter()
        .map(|(n, _)| (*n).to_owned())
        .collect();
    listed.sort();
    assert_eq!(
        on_disk, listed,
        "tests/vectors/mod.rs FILES must list every vector file"
    );
    let names: std::collections::HashSet<String> =
        vectors::all().into_iter().map(|v| v.name).collect();
    assert_eq!(names.len(), listed.len(), "vector names must be unique");
    assert!(names.iter().all(|n| n.starts_with("test_")));
}
