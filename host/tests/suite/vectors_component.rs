//! The scenario vectors run through the wasmtime component on SQLite, and on
//! PostgreSQL (straight and through PgBouncer): every `spool::Command` through its
//! typed WIT export (`Instance::execute`).

#[path = "../../../tests/vectors/mod.rs"]
mod vectors;

use serde_json::Value;
use spool::Command;
use spool_host::{ArchiveDir, Error, Instance, PostgresStorage, Runtime, SqliteStorage};

use crate::common::postgres::{self as server, Via};

struct Component {
    instance: Instance,
    _dir: Option<tempfile::TempDir>,
}

fn json<T: serde::Serialize>(result: Result<T, Error>) -> Result<Value, vectors::Failure> {
    match result {
        Ok(value) => Ok(serde_json::to_value(value).expect("results serialize")),
        Err(e) => Err(vectors::Failure {
            code: e.code().to_owned(),
            message: e.to_string(),
        }),
    }
}

impl vectors::VectorHost for Component {
    async fn exec(&mut self, workspace: &str, command: Command) -> Result<Value, vectors::Failure> {
        json(self.instance.execute(workspace, &command))
    }
}

fn fresh() -> Component {
    let dir = tempfile::tempdir().expect("temp dir");
    let storage = SqliteStorage::open(dir.path().join("vectors.db")).expect("open the database");
    let archives = ArchiveDir::new(dir.path().join("archives"));
    let runtime = Runtime::shared().expect("load the component");
    Component {
        instance: runtime.instantiate(storage, archives).expect("instantiate"),
        _dir: Some(dir),
    }
}

/// A fresh database on the server, its archives kept in it.
fn fresh_postgres(via: Via) -> Component {
    let url = server::url(&server::fresh_database("vectors"), via);
    let storage = PostgresStorage::connect(&url).expect("connect");
    let archives = storage.archives();
    let runtime = Runtime::shared().expect("load the component");
    Component {
        instance: runtime.instantiate(storage, archives).expect("instantiate"),
        _dir: None,
    }
}

#[test]
fn test_scenario_vectors_component() {
    let ran = vectors::block_on(vectors::run_all(|| async { fresh() }));
    assert_eq!(ran, vectors::FILES.len(), "only {ran} vectors ran");
}

#[test]
fn test_scenario_vectors_component_postgres() {
    for via in [Via::Direct, Via::Pooler] {
        let ran = vectors::block_on(vectors::run_all(|| async move { fresh_postgres(via) }));
        assert_eq!(
            ran,
            vectors::FILES.len(),
            "only {ran} vectors ran ({via:?})"
        );
    }
}
