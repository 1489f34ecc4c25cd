//! The WIT boundary: the generated bindings, the storage and archive imports served
//! from a [`spool::Storage`] and a [`spool::Archiver`], and the API exports called with
//! core types.
//!
//! This is the only file that sees generated types; everything else speaks core types.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;

use spool::{
    ArchiveInProgress, ArchivePart, Archiver, Batch, Op, Progress, RangeQuery, ResetArchive,
    Storage,
};
use wasmtime::Store;
use wasmtime::component::{
    ComponentExportIndex, ComponentNamedList, ComponentType, HasSelf, Instance, InstancePre, Lift,
    Linker, Lower, TypedFunc,
};

use crate::error::Error;

#[allow(missing_docs, unreachable_pub, clippy::all)]
mod bindings {
    wasmtime::component::bindgen!({
        world: "spool",
        path: "../wit",
        imports: { default: trappable },
    });
}

use bindings::exports::spool::engine::api as wit;
use bindings::spool::engine::{
    archive as host_archive, progress as host_progress, storage as host, types,
};

/// What a host does with the progress a call reports: the workspace and how far.
pub type ProgressSink = Box<dyn FnMut(&str, &Progress) + Send>;

/// The data of a store: the storage and archive store the component's imports reach,
/// and its limits.
pub struct HostState {
    pub(crate) storage: Box<dyn Storage + Send>,
    pub(crate) archiver: Box<dyn Archiver + Send>,
    /// The reset archive the guest is handing over, part by part.
    pub(crate) archive: ArchiveInProgress,
    pub(crate) limits: crate::runtime::GuestLimits,
    /// Where reported progress goes (nowhere by default).
    pub(crate) progress: Option<ProgressSink>,
}

impl host_progress::Host for HostState {
    fn report(
        &mut self,
        workspace: String,
        phase: String,
        done: u64,
        total: u64,
    ) -> wasmtime::Result<()> {
        if let Some(sink) = &mut self.progress {
            sink(&workspace, &Progress { phase, done, total });
        }
        Ok(())
    }
}

impl host_archive::Host for HostState {
    fn begin_reset_archive(
        &mut self,
        workspace: String,
        head: host_archive::ArchiveHead,
    ) -> wasmtime::Result<Result<(), String>> {
        let head = ResetArchive {
            session_key: head.session_key,
            session_id: head.session_id,
            epoch: head.epoch,
            archived_at: head.archived_at,
            transcript_entries: Vec::new(),
            summaries: Vec::new(),
        };
        Ok(self
            .archive
            .handle(&*self.archiver, &workspace, ArchivePart::Begin(head)))
    }

    fn append_reset_archive(
        &mut self,
        workspace: String,
        entries: String,
    ) -> wasmtime::Result<Result<(), String>> {
        // JSON that does not decode is reported as an unwritten archive (the reset still
        // completes), never as a trap.
        let part = serde_json::from_str(&entries)
            .map(ArchivePart::Entries)
            .map_err(|e| format!("reset archive entries are not valid JSON: {e}"));
        Ok(part.and_then(|part| self.archive.handle(&*self.archiver, &workspace, part)))
    }

    fn finish_reset_archive(
        &mut self,
        workspace: String,
        summaries: String,
    ) -> wasmtime::Result<Result<(), String>> {
        let part = serde_json::from_str(&summaries)
            .map(ArchivePart::Finish)
            .map_err(|e| format!("reset archive summaries are not valid JSON: {e}"));
        Ok(part.and_then(|part| self.archive.handle(&*self.archiver, &workspace, part)))
    }
}

impl types::Host for HostState {}

impl host::Host for HostState {
    fn get(
        &mut self,
        workspace: String,
        key: Vec<u8>,
    ) -> wasmtime::Result<Result<types::Lookup, types::StorageError>> {
        let value = self.storage.get(&workspace, &key);
        if let Ok(Some(value)) = &value {
            self.limits.read_bytes += value.len() as u64;
        }
        Ok(value
            .map(|value| types::Lookup { value })
            .map_err(Wit::into_wit))
    }

    fn range(
        &mut self,
        workspace: String,
        query: types::RangeQuery,
    ) -> wasmtime::Result<Result<Vec<types::Kv>, types::StorageError>> {
        let query = match RangeQuery::from_wit(query, "query") {
            Ok(query) => query,
            Err(e) => return Ok(Err(types::StorageError::Backend(e.to_string()))),
        };
        let pairs = self.storage.range(&workspace, &query);
        if let Ok(pairs) = &pairs {
            let bytes = pairs
                .iter()
                .map(|kv| kv.key.len() + kv.value.len())
                .sum::<usize>();
            self.limits.read_bytes += bytes as u64;
        }
        Ok(pairs.map(Wit::into_wit).map_err(Wit::into_wit))
    }

    fn commit(
        &mut self,
        workspace: String,
        batch: types::Batch,
    ) -> wasmtime::Result<Result<(), types::StorageError>> {
        let batch = match Batch::from_wit(batch, "batch") {
            Ok(batch) => batch,
            Err(e) => return Ok(Err(types::StorageError::Backend(e.to_string()))),
        };
        Ok(self
            .storage
            .commit(&workspace, batch)
            .map_err(Wit::into_wit))
    }
}

/// The component's imports, served by [`HostState`].
pub(crate) fn linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    bindings::Spool::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |state| state)?;
    Ok(linker)
}

/// The interface every call is exported from.
const API: &str = "spool:engine/api@0.1.0";

/// A component linked against [`HostState`], ready to instantiate cheaply, with the
/// export index of every call (looked up once).
#[derive(Clone)]
pub(crate) struct Pre {
    pre: InstancePre<HostState>,
    calls: HashMap<&'static str, ComponentExportIndex>,
}

impl Pre {
    pub(crate) fn new(pre: InstancePre<HostState>) -> Result<Self, Error> {
        let component = pre.component();
        let missing = |name: &str| Error::Wasm {
            context: "the component does not match this host".into(),
            message: format!("it exports no `{name}`"),
            backtrace: None,
        };
        let (_, api) = component
            .get_export(None, API)
            .ok_or_else(|| missing(API))?;
        let mut calls = HashMap::new();
        for &name in spool::ops::NAMES
            .iter()
            .chain(&["parse_import", "parse_import_slice"])
        {
            let export = name.replace('_', "-");
            let (_, index) = component
                .get_export(Some(&api), &export)
                .ok_or_else(|| missing(&export))?;
            calls.insert(name, index);
        }
        Ok(Pre { pre, calls })
    }

    pub(crate) fn instantiate(&self, store: &mut Store<HostState>) -> wasmtime::Result<Exports> {
        let instance = self.pre.instantiate(&mut *store)?;
        Ok(Exports {
            instance,
            calls: self.calls.clone(),
            typed: RefCell::default(),
        })
    }
}

/// One instance's exported API.
pub struct Exports {
    instance: Instance,
    calls: HashMap<&'static str, ComponentExportIndex>,
    /// The table calls' typed functions, type-checked once per instance (each is a
    /// `TypedFunc` of its call's own parameter and result types).
    typed: RefCell<HashMap<&'static str, Box<dyn Any + Send>>>,
}

/// A failure of the host's side of a call to the export `name`.
fn failed(name: &str, message: &str) -> Error {
    Error::Wasm {
        context: format!("the component failed in `{}`", name.replace('_', "-")),
        message: message.into(),
        backtrace: None,
    }
}

/// A trap (or a type mismatch) in the call to the export `name`.
fn trapped(name: &str, error: &wasmtime::Error) -> Error {
    Error::wasm(
        format!("the component failed in `{}`", name.replace('_', "-")),
        error,
    )
}

/// What a typed export returns: the component's answer or its refusal.
type Answer<T> = (Result<T, wit::Error>,);

impl Exports {
    /// The function exported as `name`, typed as taking `P` and answering `R`.
    fn typed<P, R>(
        &self,
        store: &mut Store<HostState>,
        name: &str,
    ) -> Result<TypedFunc<P, Answer<R>>, Error>
    where
        P: ComponentNamedList + Lower,
        R: ComponentType + Lift + 'static,
    {
        let index = self
            .calls
            .get(name)
            .ok_or_else(|| failed(name, "no such export"))?;
        let func = self
            .instance
            .get_func(&mut *store, index)
            .ok_or_else(|| failed(name, "the export is not a function"))?;
        func.typed::<P, Answer<R>>(&*store)
            .map_err(|e| trapped(name, &e))
    }

    /// Calls the export `name` with `params`; a trap is the outer error, the
    /// component's refusal the inner one.
    fn invoke<P, R>(&self, store: &mut Store<HostState>, name: &str, params: P) -> Result<R, Error>
    where
        P: ComponentNamedList + Lower,
        R: ComponentType + Lift + 'static,
    {
        let typed = self.typed::<P, R>(store, name)?;
        let (answer,) = typed
            .call(&mut *store, params)
            .map_err(|e| trapped(name, &e))?;
        answer.map_err(from_wit_error)
    }

    /// [`invoke`](Self::invoke) for a table call, whose typed function is checked once.
    fn call<P, R>(
        &self,
        store: &mut Store<HostState>,
        name: &'static str,
        params: P,
    ) -> Result<R, Error>
    where
        P: ComponentNamedList + Lower + Send + 'static,
        R: ComponentType + Lift + Send + 'static,
    {
        let known = self
            .typed
            .borrow()
            .get(name)
            .and_then(|f| f.downcast_ref::<TypedFunc<P, Answer<R>>>().copied());
        let typed = match known {
            Some(typed) => typed,
            None => {
                let typed = self.typed::<P, R>(store, name)?;
                self.typed.borrow_mut().insert(name, Box::new(typed));
                typed
            }
        };
        let (answer,) = typed
            .call(&mut *store, params)
            .map_err(|e| trapped(name, &e))?;
        answer.map_err(from_wit_error)
    }

    /// `parse-import`: the core's `ImportedLog` as JSON text.
    pub(crate) fn parse_import(
        &self,
        store: &mut Store<HostState>,
        format: &str,
        text: &str,
    ) -> Result<String, Error> {
        self.invoke(store, "parse_import", (format, text))
    }

    /// `parse-import-slice`: the slice's `ImportedLog` and the next cursor, as JSON text.
    pub(crate) fn parse_import_slice(
        &self,
        store: &mut Store<HostState>,
        format: &str,
        cursor: &str,
        text: &str,
        last: bool,
    ) -> Result<(String, String), Error> {
        self.invoke(store, "parse_import_slice", (format, cursor, text, last))
    }
}

spool::wit_map!();

/// A call the native host can make through the component's typed export: every
/// [`spool::ops`] struct is one.
pub trait Call: Op {
    #[doc(hidden)]
    fn call(
        self,
        exports: &Exports,
        store: &mut Store<HostState>,
        workspace: &str,
    ) -> Result<Self::Output, Error>;
}

macro_rules! calls {
    // One entry of the table (see `for_each_op!`).
    ($( $(#[$doc:meta])* $name:ident $js:ident $Op:ident {
        $( $(#[$attr:meta])* $field:ident : $ty:ty ),* $(,)? }
        $(fills($($fill:ident $(. $sub:ident)?),* $(,)?))? -> $out:ty = $f:path; )*) => {$(
        impl Call for spool::ops::$Op {
            fn call(
                self,
                exports: &Exports,
                store: &mut Store<HostState>,
                workspace: &str,
            ) -> Result<$out, Error> {
                let spool::ops::$Op { $($field),* } = self;
                let answer: <$out as Wit>::W = exports.call::<
                    (String, $(<$ty as Wit>::W,)*),
                    <$out as Wit>::W,
                >(store, stringify!($name), (workspace.to_owned(), $(Wit::into_wit($field),)*))?;
                <$out as Wit>::from_wit(answer, "result").map_err(|e| {
                    Error::spool(
                        spool::ErrorCode::Internal,
                        format!(
                            "the component returned a result of `{}` that does not decode: {e}",
                            stringify!($name)
                        ),
                    )
                })
            }
        }
    )*};
}

spool::for_each_op!(calls);

macro_rules! execute {
    // One entry of the table (see `for_each_op!`).
    ($( $(#[$doc:meta])* $name:ident $js:ident $Op:ident {
        $( $(#[$attr:meta])* $field:ident : $ty:ty ),* $(,)? }
        $(fills($($fill:ident $(. $sub:ident)?),* $(,)?))? -> $out:ty = $f:path; )*) => {
        impl crate::runtime::Instance {
            /// Runs `command` (any API call given as data, e.g. parsed from JSON with
            /// [`spool::Command::from_json`]) in `workspace` through the component's
            /// typed export for its call, and returns the result as JSON (the core's
            /// result type, serialized). A refusal keeps the core's reason code and
            /// message.
            pub fn execute(
                &mut self,
                workspace: &str,
                command: &spool::Command,
            ) -> Result<serde_json::Value, Error> {
                let value = match command.clone() {
                    $( spool::Command::$Op { $($field),* } => {
                        serde_json::to_value(self.call(workspace, spool::ops::$Op { $($field),* })?)
                    } )*
                    other => {
                        return Err(Error::spool(
                            spool::ErrorCode::InvalidArgument,
                            format!("`{}` has no typed export", other.name()),
                        ));
                    }
                };
                value.map_err(|e| {
                    Error::spool(
                        spool::ErrorCode::Internal,
                        format!("a result does not serialize: {e}"),
                    )
                })
            }
        }
    };
}

spool::for_each_op!(execute);

fn from_wit_error(error: wit::Error) -> Error {
    // An enum's conversion never fails.
    let code = spool::ErrorCode::from_wit(error.code, "code").unwrap_or(spool::ErrorCode::Internal);
    Error::spool(code, error.message)
}
