//! `spool._native`: the native host ([`spool_host::Spool`]) as a Python extension
//! module, for the `spool` package (`python/spool/`).
//!
//! The binding is thin: it opens a [`Spool`] and runs any call of the operation table
//! given as JSON (`Native.call(name, args)`), filling in what the table says a host
//! fills in (`now_ms` from the clock, fresh ids), and hands the result back as JSON.
//! A refusal or failure raises `NativeError(code, message)` with the host's reason
//! code; the Python layer turns it into the exception class of that code. Every call
//! releases the GIL while it runs. The session rules all stay in the component.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use serde::Deserialize;
use serde_json::{Map, Value};
use spool_host::{Durability, Spool};

pyo3::create_exception!(
    _native,
    NativeError,
    pyo3::exceptions::PyException,
    "A failed call: `args` is `(code, message)`, the host's reason code and its detail."
);

/// A failure on its way to Python: the reason code and the message.
struct Failure {
    code: String,
    message: String,
}

impl From<spool_host::Error> for Failure {
    fn from(error: spool_host::Error) -> Self {
        Failure {
            code: error.code().to_owned(),
            message: error.message(),
        }
    }
}

impl Failure {
    fn invalid(message: String) -> Self {
        Failure {
            code: "invalid_argument".to_owned(),
            message,
        }
    }

    fn into_py(self) -> PyErr {
        NativeError::new_err((self.code, self.message))
    }
}

/// One open database and workspace: a `spool_host::Spool` behind a lock, so that the
/// handle can be shared between Python threads (one call at a time runs on it).
#[pyclass(module = "spool._native", frozen)]
struct Native {
    spool: Mutex<Spool>,
}

impl Native {
    fn spool(&self) -> std::sync::MutexGuard<'_, Spool> {
        // A panic cannot leave the handle half-changed: every call is one commit.
        self.spool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn run(&self, name: &str, args: &str, result: bool) -> Result<Option<String>, Failure> {
        let call = spool::ops::Call::named(name)
            .ok_or_else(|| Failure::invalid(format!("`{name}` is not a Spool call")))?;
        let mut args = match serde_json::from_str::<Value>(args) {
            Ok(Value::Object(args)) => args,
            Ok(_) => return Err(Failure::invalid("a call's arguments are an object".into())),
            Err(e) => return Err(Failure::invalid(format!("arguments: {e}"))),
        };
        let mut spool = self.spool();
        fill(&mut spool, call, &mut args);
        args.insert("op".to_owned(), Value::String(name.to_owned()));
        let args = Value::Object(args);
        let command = match spool::Command::deserialize(&args) {
            Ok(command) => command,
            // The core's own reading of the text, for its message (what does not parse).
            Err(_) => {
                let e = match spool::Command::from_json(&args.to_string()) {
                    Err(e) => e,
                    Ok(_) => spool::Error::internal("a call parses as text only".to_owned()),
                };
                return Err(Failure {
                    code: e.code().to_owned(),
                    message: e.to_string(),
                });
            }
        };
        let value = spool.execute(&command)?;
        Ok(result.then(|| value.to_string()))
    }
}

/// Fills in what the table says a host fills in for `call` where the caller left it
/// out ([`spool::ops::Call::fill_in`]): `now_ms` from the handle's clock, every other a
/// fresh id.
fn fill(spool: &mut Spool, call: &spool::ops::Call, args: &mut Map<String, Value>) {
    let Ok(()) = call.fill_in(args, |field| {
        Ok::<_, std::convert::Infallible>(match field {
            "now_ms" => Value::from(spool.now_ms()),
            _ => Value::from(spool.fresh_id()),
        })
    });
}

#[pymethods]
impl Native {
    /// Opens `database` (a SQLite file, created if needed, or a `postgres://` URL;
    /// `None`: a private in-memory database) in `workspace`.
    #[new]
    #[pyo3(signature = (database, workspace, durability = "full", archive_dir = None))]
    fn new(
        py: Python<'_>,
        database: Option<PathBuf>,
        workspace: String,
        durability: &str,
        archive_dir: Option<PathBuf>,
    ) -> PyResult<Self> {
        let durability = match durability {
            "full" => Durability::Full,
            "normal" => Durability::Normal,
            other => {
                return Err(Failure::invalid(format!(
                    "durability is \"full\" or \"normal\", not {other:?}"
                ))
                .into_py());
            }
        };
        let mut builder = Spool::builder().workspace(workspace).durability(durability);
        if let Some(database) = database {
            builder = builder.database(database);
        }
        if let Some(dir) = archive_dir {
            builder = builder.archive_dir(dir);
        }
        let spool = py
            .detach(|| builder.open())
            .map_err(|e| Failure::from(e).into_py())?;
        Ok(Native {
            spool: Mutex::new(spool),
        })
    }

    /// The workspace this handle acts in.
    #[getter]
    fn workspace(&self) -> String {
        self.spool().workspace().to_owned()
    }

    /// Runs the table call `name` with `args` (a JSON object: the call's fields, those
    /// the host fills in optional) and returns its result as JSON text (`None` with
    /// `result=False`: the caller does not read it).
    #[pyo3(signature = (name, args, result = true))]
    fn call(
        &self,
        py: Python<'_>,
        name: &str,
        args: &str,
        result: bool,
    ) -> PyResult<Option<String>> {
        py.detach(|| self.run(name, args, result))
            .map_err(Failure::into_py)
    }

    /// Compacts the session under `key` with `summarize`: a callable taking the
    /// prepared plan (JSON text) and returning the summary text. It is not called when
    /// no summary is needed; when it raises, nothing is written and its exception
    /// propagates. `request` is the compaction request as JSON text.
    fn compact_with(
        &self,
        py: Python<'_>,
        key: &str,
        request: &str,
        summarize: Py<PyAny>,
    ) -> PyResult<String> {
        let request = serde_json::from_str(request)
            .map_err(|e| Failure::invalid(format!("request: {e}")).into_py())?;
        let outcome = py.detach(|| {
            let mut spool = self.spool();
            spool.compact_with(key, request, |prepared| {
                let plan = serde_json::to_string(prepared).map_err(|e| {
                    Failure {
                        code: "internal".into(),
                        message: format!("the plan does not serialize: {e}"),
                    }
                    .into_py()
                })?;
                Python::attach(|py| {
                    summarize
                        .call1(py, PyTuple::new(py, [plan])?)?
                        .extract::<String>(py)
                })
            })
        });
        match outcome {
            Ok(result) => serde_json::to_string(&result).map_err(|e| {
                Failure {
                    code: "internal".into(),
                    message: format!("a result does not serialize: {e}"),
                }
                .into_py()
            }),
            Err(spool_host::CompactWithError::Summarizer(e)) => Err(e),
            Err(spool_host::CompactWithError::Spool(e)) => Err(Failure::from(e).into_py()),
        }
    }

    /// Every call of the table: `(name, [field, …], [filled field, …])`.
    #[staticmethod]
    fn calls() -> Vec<(&'static str, Vec<&'static str>, Vec<&'static str>)> {
        spool::ops::CALLS
            .iter()
            .map(|call| {
                (
                    call.name,
                    call.fields.iter().map(|f| f.name).collect(),
                    call.fills.to_vec(),
                )
            })
            .collect()
    }
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Native>()?;
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    Ok(())
}
