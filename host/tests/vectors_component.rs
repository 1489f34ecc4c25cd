//! The scenario vectors run through the wasmtime component on SQLite.

#[path = "../../tests/vectors/mod.rs"]
mod vectors;

use serde_json::Value;
use spool::Command;
use spool_host::{Error, Instance, Runtime, SqliteStorage};

struct Component {
    instance: Instance,
    _dir: tempfile::TempDir,
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
        let spool = &mut self.instance;
        match command {
            Command::CreateSession {
                key,
                session_id,
                now_ms,
            } => json(spool.create_session(workspace, &key, &session_id, now_ms)),
            Command::GetSession { key } => json(spool.get_session(workspace, &key)),
            Command::AppendEntry {
                key,
                request,
                now_ms,
            } => json(spool.append_entry(workspace, &key, request, now_ms)),
            Command::ReadPage { key, request } => json(spool.read_page(workspace, &key, request)),
            Command::ListSessions { limit, cursor } => {
                json(spool.list_sessions(workspace, limit, cursor.as_deref()))
            }
            other => panic!("the vectors use a command this host does not map: {other:?}"),
        }
    }
}

fn fresh() -> Component {
    let dir = tempfile::tempdir().expect("temp dir");
    let storage = SqliteStorage::open(dir.path().join("vectors.db")).expect("open the database");
    let runtime = Runtime::shared().expect("load the component");
    Component {
        instance: runtime.instantiate(storage).expect("instantiate"),
        _dir: dir,
    }
}

#[test]
fn test_scenario_vectors_component() {
    let ran = block_on(vectors::run_all(|| async { fresh() }));
    assert!(ran >= 8, "only {ran} vectors ran");
}

/// Runs a future that never waits (every call here is synchronous).
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => panic!("a synchronous host never waits"),
    }
}
