//! [`Spool`]: the class JavaScript uses. A thin shell: each method converts its
//! arguments at the boundary ([`crate::js`]), builds the core's operation and drives it
//! against IndexedDB with [`spool::run_async`]. No session rule lives here.
//!
//! The methods of the core's operation table are derived from it, one per call, in
//! [`calls`]: `spool.jsName(workspace, args)`. Here are the methods that are not plain
//! table calls: opening, change notifications and closing, `archiveSession` (a
//! `finish` with status `done`), `listArchives` (reads the archives' bodies),
//! `compactWith` (the summary from a JS function, in `compact`, with the `compaction`
//! feature), transcript parsing (`import`, with the `import` feature) and
//! [`Spool::execute`], which runs any core `Command` given as data: the escape hatch for
//! tooling.

mod calls;
#[cfg(feature = "compaction")]
mod compact;
#[cfg(feature = "import")]
mod import;

pub use calls::{js_names, spool_calls};

use calls::Fill;

use std::rc::Rc;

use js_sys::Promise;
use serde::Serialize;
use spool::{Error, FinishStatus, Operation, Session};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::idb::IdbStorage;
use crate::js;

/// A Spool store kept in one IndexedDB database.
///
/// Open it with `await Spool.open(dbName)`. Every method returns a promise; a failure
/// rejects it with an `Error` whose `message` says what went wrong and whose `code` is
/// the reason code (`not_found`, `conflict`, `invalid_argument`, `stale_epoch`, `unknown`,
/// `corruption`, `storage` or `internal`). Records use the same `snake_case` fields as the
/// CLI's JSON.
#[wasm_bindgen]
pub struct Spool {
    /// The connection; replaced when another tab's schema change closed it.
    storage: Connection,
    /// Tells other tabs (and other `Spool`s on the same database) what changed.
    channel: Option<Rc<web_sys::BroadcastChannel>>,
    /// The `onChange` callback's listener, kept alive while it is set.
    on_change: std::cell::RefCell<Option<Listener>>,
    /// The `onProgress` callback.
    on_progress: Progress,
}

/// The `onProgress` callback, shared with the running operations.
type Progress = Rc<std::cell::RefCell<Option<js_sys::Function>>>;

/// The database connection a `Spool` and its running operations share.
type Connection = Rc<std::cell::RefCell<Rc<IdbStorage>>>;

/// A `message` listener on the change channel.
type Listener = Closure<dyn FnMut(web_sys::MessageEvent)>;

impl std::fmt::Debug for Spool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spool")
            .field("storage", &self.storage)
            .finish()
    }
}

#[wasm_bindgen]
impl Spool {
    /// Opens the IndexedDB database `dbName`, creating it (or upgrading its schema) when
    /// needed.
    pub async fn open(
        #[wasm_bindgen(js_name = "dbName", unchecked_param_type = "string")] db_name: JsValue,
    ) -> Result<Spool, JsValue> {
        let name = js::string(&db_name, "dbName").map_err(|e| js::error(&e))?;
        let storage = IdbStorage::open(&name).await.map_err(|e| {
            js::error(&Error::Storage {
                cause: e.to_string(),
            })
        })?;
        let channel = web_sys::BroadcastChannel::new(&crate::tabs::channel_name(&name))
            .ok()
            .map(Rc::new);
        Ok(Spool {
            storage: Rc::new(std::cell::RefCell::new(Rc::new(storage))),
            channel,
            on_change: std::cell::RefCell::new(None),
            on_progress: Progress::default(),
        })
    }

    /// Calls `callback({ workspace })` whenever another tab (or another `Spool` on the same
    /// database in this page) has written to `workspace`, so a view can refresh; `null`
    /// stops. Writes from this instance do not call it.
    #[wasm_bindgen(js_name = onChange)]
    pub fn on_change(
        &self,
        #[wasm_bindgen(unchecked_param_type = "((change: { workspace: string }) => void) | null")]
        callback: JsValue,
    ) -> Result<(), JsValue> {
        let Some(channel) = &self.channel else {
            return Ok(());
        };
        if callback.is_null() || callback.is_undefined() {
            channel.set_onmessage(None);
            self.on_change.borrow_mut().take();
            return Ok(());
        }
        let callback: js_sys::Function = callback
            .dyn_into()
            .map_err(|_| js::error(&Error::invalid("callback", "must be a function or null")))?;
        let listener = Listener::new(move |event: web_sys::MessageEvent| {
            let _ = callback.call1(&JsValue::UNDEFINED, &event.data());
        });
        channel.set_onmessage(Some(listener.as_ref().unchecked_ref()));
        *self.on_change.borrow_mut() = Some(listener);
        Ok(())
    }

    /// Calls `callback({ workspace, phase, done, total })` while a long call of this
    /// instance runs (a compaction's passes `compact: plan` and `compact: read`, a
    /// reset's `reset: archive`), at most once per page of entries it reads: `done` of
    /// `total` entries (`total` 0: not known). `null` stops. The callback runs inside
    /// the call: keep it quick; what it throws is ignored.
    #[wasm_bindgen(js_name = onProgress)]
    pub fn on_progress(
        &self,
        #[wasm_bindgen(unchecked_param_type = "((progress: Progress) => void) | null")]
        callback: JsValue,
    ) -> Result<(), JsValue> {
        let callback = if callback.is_null() || callback.is_undefined() {
            None
        } else {
            Some(callback.dyn_into::<js_sys::Function>().map_err(|_| {
                js::error(&Error::invalid("callback", "must be a function or null"))
            })?)
        };
        *self.on_progress.borrow_mut() = callback;
        Ok(())
    }

    /// The name of the IndexedDB database.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.storage.borrow().name().to_owned()
    }

    /// `finish(workspace, key, "done", options)`.
    #[wasm_bindgen(js_name = archiveSession, unchecked_return_type = "Promise<Session>")]
    pub fn archive_session(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "FenceOptions")] options: JsValue,
    ) -> Promise {
        self.run(finish(&workspace, &key, FinishStatus::Done, options))
    }

    /// Resolves to the archives the committed resets of the session `key` in
    /// `workspace` kept (the old generation's key, session id, epoch, canonical
    /// transcript and summaries), oldest first. A key never reset has none; a reset that
    /// failed or was interrupted adds none. A recorded archive that is missing or not
    /// the one recorded rejects with `corruption`.
    #[wasm_bindgen(js_name = listArchives, unchecked_return_type = "Promise<ResetArchive[]>")]
    pub fn list_archives(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
    ) -> Promise {
        let tabs = self.tabs();
        let args = workspace_and_key(&workspace, &key);
        future_to_promise(async move {
            let (workspace, key) = args.map_err(|e| js::error(&e))?;
            let records = tabs
                .drive(spool::list_reset_archives(&workspace, &key))
                .await
                .map_err(|e| js::error(&e))?;
            let storage = tabs.storage().await.map_err(|e| js::error(&e))?;
            let archives = storage
                .recorded_archives(&workspace, &key, &records)
                .await
                .map_err(|e| js::error(&e))?;
            js::to_js(&archives).map_err(|e| js::error(&e))
        })
    }

    /// Runs any core call given as data: `command` is the core's `Command` as JSON
    /// (`{ op: "append_entry", key, request, now_ms }`, the shape of the scenario vectors
    /// and of `spool call`), in `workspace`. Resolves to the call's result as JSON.
    ///
    /// The escape hatch for tooling (replaying recorded calls, scripts, calls this class
    /// has no method for yet): the command is checked as strictly as any argument
    /// (unknown fields reject with `invalid_argument`), but nothing is defaulted — `now_ms`
    /// and every id must be given — and the result is typed only as `unknown`. Prefer the
    /// typed methods.
    #[wasm_bindgen(unchecked_return_type = "Promise<unknown>")]
    pub fn execute(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Command")] command: JsValue,
    ) -> Promise {
        // The call is found by its `op` and read like its typed method's arguments (the
        // same rules, without defaults), not through `Command`'s own deserializer: that
        // would be a second reader of every call in the module.
        let call = js::string(&workspace, "workspace").and_then(|workspace| {
            let mut command =
                js::object::<serde_json::Map<String, serde_json::Value>>(command, "command")?;
            match command.remove("op") {
                Some(serde_json::Value::String(op)) => Ok((workspace, op, command)),
                _ => Err(Error::invalid("op", "missing: the call's name, a string")),
            }
        });
        match call {
            Ok((workspace, op, args)) => self.call_named(&op, &workspace, args, Fill::Nothing),
            Err(e) => self.run::<()>(Err(e)),
        }
    }

    /// Closes the database connection; later calls reject with code `storage`.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn close(&self) -> Promise {
        self.storage.borrow().close();
        if let Some(channel) = &self.channel {
            channel.set_onmessage(None);
            channel.close();
        }
        self.on_change.borrow_mut().take();
        Promise::resolve(&JsValue::UNDEFINED)
    }
}

impl Spool {
    /// Drives `op` against the database; the promise settles with its JS result or error.
    ///
    /// The result becomes a JS value inside the operation, so that one driver and one
    /// promise adapter serve every result type: instantiated per type, they were a
    /// sixth of the module.
    fn run<T: Serialize + 'static>(&self, op: Result<Operation<T>, Error>) -> Promise {
        self.run_js(op.map(|op| op.map(|value| js::to_js(&value))))
    }

    /// [`run`](Self::run) of an operation whose result is already a JS value.
    fn run_js(&self, op: Result<Operation<Result<JsValue, Error>>, Error>) -> Promise {
        let tabs = self.tabs();
        future_to_promise(async move {
            let op = op.map_err(|e| js::error(&e))?;
            tabs.drive(op)
                .await
                .and_then(|value| value)
                .map_err(|e| js::error(&e))
        })
    }

    /// What an operation needs to run among other tabs.
    fn tabs(&self) -> Driver {
        Driver {
            connection: Rc::clone(&self.storage),
            channel: self.channel.clone(),
            progress: Rc::clone(&self.on_progress),
        }
    }
}

/// Runs operations against the database, one at a time per workspace across tabs.
pub(crate) struct Driver {
    connection: Connection,
    channel: Option<Rc<web_sys::BroadcastChannel>>,
    progress: Progress,
}

impl Driver {
    /// The open connection: when another tab's schema change (or a deletion) closed the
    /// current one, the database is opened again first. A database now newer than this
    /// build (another tab runs a newer Spool) fails with `storage`: reload the page.
    async fn storage(&self) -> Result<Rc<IdbStorage>, Error> {
        let current = Rc::clone(&self.connection.borrow());
        if !current.superseded() {
            return Ok(current);
        }
        let reopened = IdbStorage::open(current.name())
            .await
            .map_err(|e| Error::Storage {
                cause: format!(
                    "the database was changed by another tab and cannot be opened again \
                 (reload the page if a newer Spool upgraded it): {e}"
                ),
            })?;
        let reopened = Rc::new(reopened);
        crate::tabs::forget(reopened.name());
        *self.connection.borrow_mut() = Rc::clone(&reopened);
        Ok(reopened)
    }

    /// Drives `op` under the workspace's Web Lock, its reads and commit sharing one
    /// transaction where IndexedDB allows; tells other tabs when it wrote.
    pub(crate) async fn drive<T: 'static>(&self, op: Operation<T>) -> Result<T, Error> {
        let workspace = op.workspace().to_owned();
        let storage = self.storage().await?;
        let lock =
            crate::tabs::Workspace::named(crate::tabs::lock_name(storage.name(), &workspace));
        let turn = lock.enter().await.map_err(|e| Error::Storage {
            cause: format!("waiting for the workspace lock: {}", js::describe(&e)),
        })?;
        let mut attempt = match turn.known() {
            Some(known) => storage.attempt_knowing(known),
            None => storage.attempt(),
        };
        attempt.report_to(self.progress.borrow().clone());
        let result = spool::run_async(&attempt, op).await;
        if attempt.wrote()
            && let Some(channel) = &self.channel
        {
            turn.wrote(Rc::clone(channel), workspace);
        }
        drop(attempt);
        drop(turn);
        result
    }
}

/// Options naming the time and a fence.
const FENCE: &[&str] = &["nowMs", "expectedEpoch"];

fn workspace_and_key(workspace: &JsValue, key: &JsValue) -> Result<(String, String), Error> {
    Ok((js::string(workspace, "workspace")?, js::string(key, "key")?))
}

fn finish(
    workspace: &JsValue,
    key: &JsValue,
    status: FinishStatus,
    options: JsValue,
) -> Result<Operation<Session>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let options = js::options(options, "options", FENCE)?;
    Ok(spool::finish(
        &workspace,
        &key,
        status,
        options.expected_epoch,
        options.now(),
    ))
}
