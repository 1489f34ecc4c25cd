//! [`Spool`]: the class JavaScript uses. A thin shell: each method converts its
//! arguments at the boundary ([`crate::js`]), builds the core's operation and drives it
//! against IndexedDB with [`spool::run_async`]. No session rule lives here.

use std::rc::Rc;

use js_sys::Promise;
use serde::Serialize;
use spool::{AppendRequest, Entry, Error, Operation, Page, PageRequest, Session, SessionList};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::idb::IdbStorage;
use crate::js;

/// A Spool store kept in one IndexedDB database.
///
/// Open it with `await Spool.open(dbName)`. Every method returns a promise; a failure
/// rejects it with an `Error` whose `message` says what went wrong and whose `code` is
/// the reason code (`not_found`, `conflict`, `invalid_argument`, `stale_epoch`,
/// `corruption`, `storage` or `internal`). Records use the same `snake_case` fields as the
/// CLI's JSON.
#[wasm_bindgen]
pub struct Spool {
    storage: Rc<IdbStorage>,
}

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
        Ok(Spool {
            storage: Rc::new(storage),
        })
    }

    /// The name of the IndexedDB database.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.storage.name().to_owned()
    }

    /// Creates the session `key` in `workspace`. `options.sessionId` defaults to
    /// `crypto.randomUUID()`, `options.nowMs` to `Date.now()`. Resolves to the session.
    #[wasm_bindgen(js_name = createSession, unchecked_return_type = "Promise<Session>")]
    pub fn create_session(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CreateOptions")] options: JsValue,
    ) -> Promise {
        self.run(create_session(&workspace, &key, options))
    }

    /// Resolves to the session `key` of `workspace`, or `null` when there is none.
    #[wasm_bindgen(js_name = getSession, unchecked_return_type = "Promise<Session | null>")]
    pub fn get_session(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
    ) -> Promise {
        self.run(get_session(&workspace, &key))
    }

    /// Appends `request` (the core's `AppendRequest`: `role`, `content`, optional
    /// `token_count`, `message_id`, `tool_calls`, `tool_call_id`, `turn_id`,
    /// `expected_epoch`) to the session `key`. `options.nowMs` defaults to `Date.now()`.
    /// Resolves to the stored entry.
    #[wasm_bindgen(js_name = appendEntry, unchecked_return_type = "Promise<Entry>")]
    pub fn append_entry(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "AppendRequest")] request: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "AppendOptions")] options: JsValue,
    ) -> Promise {
        self.run(append_entry(&workspace, &key, request, options))
    }

    /// Reads one page of the transcript of the session `key`: `request` is
    /// `{ order: "oldest_first" | "newest_first", cursor?, limit }`, where `cursor` is the
    /// `next_cursor` of the previous page read in the same order.
    #[wasm_bindgen(js_name = readPage, unchecked_return_type = "Promise<Page>")]
    pub fn read_page(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "PageRequest")] request: JsValue,
    ) -> Promise {
        self.run(read_page(&workspace, &key, request))
    }

    /// Lists up to `limit` sessions of `workspace`, most recently updated first; `cursor`
    /// is the `next_cursor` of the previous page.
    #[wasm_bindgen(js_name = listSessions, unchecked_return_type = "Promise<SessionList>")]
    pub fn list_sessions(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] limit: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null")] cursor: JsValue,
    ) -> Promise {
        self.run(list_sessions(&workspace, &limit, &cursor))
    }

    /// Closes the database connection; later calls reject with code `storage`.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn close(&self) -> Promise {
        self.storage.close();
        Promise::resolve(&JsValue::UNDEFINED)
    }
}

impl Spool {
    /// Drives `op` against the database; the promise settles with its JS result or error.
    fn run<T: Serialize + 'static>(&self, op: Result<Operation<T>, Error>) -> Promise {
        let storage = Rc::clone(&self.storage);
        future_to_promise(async move {
            let op = op.map_err(|e| js::error(&e))?;
            let value = spool::run_async(&*storage, op)
                .await
                .map_err(|e| js::error(&e))?;
            js::to_js(&value).map_err(|e| js::error(&e))
        })
    }
}

fn create_session(
    workspace: &JsValue,
    key: &JsValue,
    options: JsValue,
) -> Result<Operation<Session>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let key = js::string(key, "key")?;
    let options: js::CreateOptions = js::options(options, "options", &["sessionId", "nowMs"])?;
    let session_id = match options.session_id {
        Some(id) => id,
        None => js::random_uuid()?,
    };
    let now_ms = options.now_ms.unwrap_or_else(js::now_ms);
    Ok(spool::create_session(&workspace, &key, &session_id, now_ms))
}

fn get_session(workspace: &JsValue, key: &JsValue) -> Result<Operation<Option<Session>>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let key = js::string(key, "key")?;
    Ok(spool::get_session(&workspace, &key))
}

fn append_entry(
    workspace: &JsValue,
    key: &JsValue,
    request: JsValue,
    options: JsValue,
) -> Result<Operation<Entry>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let key = js::string(key, "key")?;
    let request: AppendRequest = js::object(request, "request")?;
    let options: js::AppendOptions = js::options(options, "options", &["nowMs"])?;
    let now_ms = options.now_ms.unwrap_or_else(js::now_ms);
    Ok(spool::append_entry(&workspace, &key, request, now_ms))
}

fn read_page(
    workspace: &JsValue,
    key: &JsValue,
    request: JsValue,
) -> Result<Operation<Page>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let key = js::string(key, "key")?;
    let request: PageRequest = js::object(request, "request")?;
    Ok(spool::read_page(&workspace, &key, request))
}

fn list_sessions(
    workspace: &JsValue,
    limit: &JsValue,
    cursor: &JsValue,
) -> Result<Operation<SessionList>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let limit = js::limit(limit, "limit")?;
    let cursor = js::optional_string(cursor, "cursor")?;
    Ok(spool::list_sessions(&workspace, limit, cursor.as_deref()))
}
