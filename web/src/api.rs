//! [`Spool`]: the class JavaScript uses. A thin shell: each method converts its
//! arguments at the boundary ([`crate::js`]), builds the core's operation and drives it
//! against IndexedDB with [`spool::run_async`]. No session rule lives here. The
//! resume-selection methods (ARCHITECTURE.md, "Resume selection") are in [`resume`], local branches (ARCHITECTURE.md, "Branches") in
//! [`branch`], turns in [`turns`], provider fork operations and capabilities (ARCHITECTURE.md, "Turns and provider forks")
//! in [`fork`], transcript imports in [`import`]. [`Spool::execute`] runs any core
//! `Command` given as data: the escape hatch for tooling.

mod branch;
mod fork;
mod import;
mod resume;
mod turns;

use std::rc::Rc;

use js_sys::Promise;
use serde::Serialize;
use spool::compaction::{
    self, CommitRequest, CompactRequest, CompactionResult, PersistRequest, Prepared, Summary,
};
use spool::{
    AppendRequest, Command, ContextState, Entry, Error, FinishStatus, Intent, IntentOutcome,
    ListFilter, NewContextState, Operation, Page, PageRequest, Session, SessionList,
    TruncateOutcome, UpdateRequest,
};
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
    /// The connection; replaced when another tab's schema change closed it.
    storage: Connection,
    /// Tells other tabs (and other `Spool`s on the same database) what changed.
    channel: Option<Rc<web_sys::BroadcastChannel>>,
    /// The `onChange` callback's listener, kept alive while it is set.
    on_change: std::cell::RefCell<Option<Listener>>,
}

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

    /// The name of the IndexedDB database.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.storage.borrow().name().to_owned()
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
    /// is the `next_cursor` of the previous page; `filter` (`{ agent_id?, status? }`)
    /// keeps only the sessions of that agent and/or in that state.
    #[wasm_bindgen(js_name = listSessions, unchecked_return_type = "Promise<SessionList>")]
    pub fn list_sessions(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] limit: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null")] cursor: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ListFilter | null")] filter: JsValue,
    ) -> Promise {
        self.run(list_sessions(&workspace, &limit, &cursor, filter))
    }

    /// Resolves to `{ session, created, rotated, archive }`: the session `key`, created
    /// when missing. `options.sessionId` (the identity if created) defaults to
    /// `crypto.randomUUID()`, `options.nowMs` to `Date.now()`.
    #[wasm_bindgen(js_name = getOrCreate, unchecked_return_type = "Promise<IntentOutcome>")]
    pub fn get_or_create(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CreateOptions")] options: JsValue,
    ) -> Promise {
        self.run(get_or_create(&workspace, &key, options))
    }

    /// Applies an intent to the session `key`: `"continue"` keeps it (creating it when
    /// missing), `"new_chat"` needs the key free (code `conflict`, message containing
    /// `session_key conflict`, otherwise), `"reset_same_key"` archives the old generation
    /// (see `listArchives`) and rotates the identity. `options.sessionId` is the identity
    /// of a created or reset session (default `crypto.randomUUID()`), `options.nowMs`
    /// defaults to `Date.now()`. Resolves to `{ session, created, rotated, archive }`.
    #[wasm_bindgen(js_name = applyIntent, unchecked_return_type = "Promise<IntentOutcome>")]
    pub fn apply_intent(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Intent")] intent: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CreateOptions")] options: JsValue,
    ) -> Promise {
        self.run(apply_intent(&workspace, &key, &intent, options))
    }

    /// Marks the session `key` as in use now (`updated_at`); a missing key rejects with
    /// `not_found`. `options.nowMs` defaults to `Date.now()`. Resolves to the session.
    #[wasm_bindgen(unchecked_return_type = "Promise<Session>")]
    pub fn resume(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(resume(&workspace, &key, options))
    }

    /// Changes the session's `model`, `channel`, `model_config` and `metadata` (`request`
    /// is the core's `UpdateRequest`; maps merge key by key, `null` removes a key;
    /// `expected_epoch` fences). `options.nowMs` defaults to `Date.now()`. Resolves to
    /// the session.
    #[wasm_bindgen(unchecked_return_type = "Promise<Session>")]
    pub fn update(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "UpdateRequest")] request: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(update(&workspace, &key, request, options))
    }

    /// Finishes the session `key` with `status` (`"done"` or `"failed"`): sets `ended_at`
    /// and `runtime_ms`. `options.nowMs` defaults to `Date.now()`; `options.expectedEpoch`
    /// fences. Resolves to the session.
    #[wasm_bindgen(unchecked_return_type = "Promise<Session>")]
    pub fn finish(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "FinishStatus")] status: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "FenceOptions")] options: JsValue,
    ) -> Promise {
        let status = js::choice(&status, "status");
        self.run(status.and_then(|status| finish(&workspace, &key, status, options)))
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

    /// Deletes the session `key` and everything it owns (transcript, summaries, context
    /// states). `options.expectedEpoch` fences. Resolves to `null`.
    #[wasm_bindgen(js_name = deleteSession, unchecked_return_type = "Promise<null>")]
    pub fn delete_session(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "EpochOptions")] options: JsValue,
    ) -> Promise {
        self.run(delete_session(&workspace, &key, options))
    }

    /// Deletes every session of `workspace` idle for more than `maxAgeMs`, with
    /// everything it owns. `options.nowMs` defaults to `Date.now()`. Resolves to how many.
    #[wasm_bindgen(js_name = pruneStale, unchecked_return_type = "Promise<number>")]
    pub fn prune_stale(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(js_name = "maxAgeMs", unchecked_param_type = "number")] max_age_ms: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(prune_stale(&workspace, &max_age_ms, options))
    }

    /// Keeps the `max` most recently updated sessions of `workspace` and deletes the
    /// rest with everything they own. Resolves to how many were deleted.
    #[wasm_bindgen(js_name = capEntries, unchecked_return_type = "Promise<number>")]
    pub fn cap_entries(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] max: JsValue,
    ) -> Promise {
        self.run(cap_entries(&workspace, &max))
    }

    /// Resolves to the number of transcript entries of the session `key`.
    #[wasm_bindgen(js_name = countEntries, unchecked_return_type = "Promise<number>")]
    pub fn count_entries(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
    ) -> Promise {
        self.run(count_entries(&workspace, &key))
    }

    /// Resolves to the transcript entry of the session `key` with `messageId`, or `null`.
    #[wasm_bindgen(js_name = getEntry, unchecked_return_type = "Promise<Entry | null>")]
    pub fn get_entry(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = "messageId", unchecked_param_type = "string")] message_id: JsValue,
    ) -> Promise {
        self.run(get_entry(&workspace, &key, &message_id))
    }

    /// Keeps the newest `maxMessages` entries of the session `key`. `options.nowMs`
    /// defaults to `Date.now()`; `options.expectedEpoch` fences. Resolves to
    /// `{ truncated, before_count, after_count }`.
    #[wasm_bindgen(unchecked_return_type = "Promise<TruncateOutcome>")]
    pub fn truncate(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = "maxMessages", unchecked_param_type = "number")]
        max_messages: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "FenceOptions")] options: JsValue,
    ) -> Promise {
        self.run(truncate(&workspace, &key, &max_messages, options))
    }

    /// Drops the last `turns` turns of the session `key`: every entry from the earliest
    /// of its last `turns` user messages on. `options.nowMs` defaults to `Date.now()`;
    /// `options.expectedEpoch` fences. Resolves to
    /// `{ truncated, before_count, after_count }`.
    #[wasm_bindgen(unchecked_return_type = "Promise<TruncateOutcome>")]
    pub fn rollback(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] turns: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "FenceOptions")] options: JsValue,
    ) -> Promise {
        self.run(rollback(&workspace, &key, &turns, options))
    }

    /// Resolves to the records of the archives the committed resets of the session
    /// `key` kept (key, session id, epoch, `archived_at`, counts), oldest first; see
    /// `listArchives` for the archives themselves.
    #[wasm_bindgen(
        js_name = listResetArchives,
        unchecked_return_type = "Promise<ArchivedReset[]>"
    )]
    pub fn list_reset_archives(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
    ) -> Promise {
        self.run(
            workspace_and_key(&workspace, &key)
                .map(|(workspace, key)| spool::list_reset_archives(&workspace, &key)),
        )
    }

    /// Saves a context state (`state` is the core's `NewContextState`) for the session
    /// `key`. `options.nowMs` defaults to `Date.now()`; `options.expectedEpoch` fences.
    /// Resolves to the stored state with its id.
    #[wasm_bindgen(js_name = saveState, unchecked_return_type = "Promise<ContextState>")]
    pub fn save_state(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "NewContextState")] state: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "FenceOptions")] options: JsValue,
    ) -> Promise {
        self.run(save_state(&workspace, &key, state, options))
    }

    /// Resolves to the context states of the session `key`, oldest first; only the valid
    /// ones unless `validOnly` is `false` (default `true`).
    #[wasm_bindgen(js_name = listStates, unchecked_return_type = "Promise<ContextState[]>")]
    pub fn list_states(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = "validOnly", unchecked_optional_param_type = "boolean")]
        valid_only: JsValue,
    ) -> Promise {
        self.run(list_states(&workspace, &key, &valid_only))
    }

    /// Invalidates the valid context states of the session `key` (only those of
    /// `stateKind` when given) with `reason`. `options.nowMs` defaults to `Date.now()`.
    /// Resolves to how many.
    #[wasm_bindgen(js_name = invalidateStates, unchecked_return_type = "Promise<number>")]
    pub fn invalidate_states(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] reason: JsValue,
        #[wasm_bindgen(js_name = "stateKind", unchecked_optional_param_type = "string | null")]
        state_kind: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(invalidate_states(
            &workspace,
            &key,
            &reason,
            &state_kind,
            options,
        ))
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

    /// Compacts the session `key` with the built-in summarizer when its transcript
    /// exceeds the window (`request` is the core's `CompactRequest`:
    /// `context_window_tokens`, optional `config`, `compaction_id`, `trigger_reason`,
    /// `flush_receipt_status`). `options.nowMs` defaults to `Date.now()`. Resolves to the
    /// `CompactionResult` (`summary_source` `fallback`, or `skipped` with `skip_reason`).
    #[wasm_bindgen(unchecked_return_type = "Promise<CompactionResult>")]
    pub fn compact(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "CompactRequest")] request: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(compact(&workspace, &key, request, options))
    }

    /// Phase one of a two-phase compaction: resolves to what to summarize (`input`), the
    /// `obligations` the summary must keep and the `preimage` to commit with; nothing is
    /// written. `skip_reason` says why no summary is needed, when none is.
    #[wasm_bindgen(js_name = prepareCompaction, unchecked_return_type = "Promise<Prepared>")]
    pub fn prepare_compaction(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "CompactRequest")] request: JsValue,
    ) -> Promise {
        self.run(prepare_compaction(&workspace, &key, request))
    }

    /// Phase two: commits `commit.summary_text` (an LLM's summary of the prepared input)
    /// with `commit.request` (the prepare's request) and `commit.preimage`. A transcript
    /// changed since the prepare writes nothing (`skip_reason` `stale_preimage`).
    /// `options.nowMs` defaults to `Date.now()`. Resolves to the `CompactionResult`
    /// (`summary_source` `llm`).
    #[wasm_bindgen(js_name = commitCompaction, unchecked_return_type = "Promise<CompactionResult>")]
    pub fn commit_compaction(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "CommitRequest")] commit: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(commit_compaction(&workspace, &key, commit, options))
    }

    /// Two-phase compaction with a JS summarizer: prepares, awaits
    /// `summarize(prepared)` (a string, or a promise of one) and commits it with the
    /// prepared preimage. When no summary is needed, `summarize` is not called and the
    /// result says why (`skip_reason`). A summarizer that throws, rejects or yields no
    /// string makes the call reject with `invalid_argument` (its message carries the
    /// summarizer's), and nothing is written. `options.nowMs` defaults to `Date.now()`.
    #[wasm_bindgen(js_name = compactWith, unchecked_return_type = "Promise<CompactionResult>")]
    pub fn compact_with(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "CompactRequest")] request: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Summarizer")] summarize: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        let tabs = self.tabs();
        let args = compact_with_args(&workspace, &key, request, summarize, options);
        future_to_promise(async move {
            let args = args.map_err(|e| js::error(&e))?;
            let result = compact_with(&tabs, args).await.map_err(|e| js::error(&e))?;
            js::to_js(&result).map_err(|e| js::error(&e))
        })
    }

    /// Stores a summary an agent produced itself (`persist` is the core's
    /// `PersistRequest`: `summary_text`, `kept_entries`, optional `compaction_id` and
    /// `trigger_reason`): the kept entries replace the last `kept_entries.length` active
    /// entries and the earlier ones move to the archive. An empty summary touches
    /// nothing. `options.nowMs` defaults to `Date.now()`. Resolves to the
    /// `CompactionResult` (`summary_source` `external`).
    #[wasm_bindgen(
        js_name = persistCompactionResult,
        unchecked_return_type = "Promise<CompactionResult>"
    )]
    pub fn persist_compaction_result(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "PersistRequest")] persist: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(persist_compaction_result(
            &workspace, &key, persist, options,
        ))
    }

    /// Resolves to the canonical transcript of the session `key`: the entries compactions
    /// archived and the active ones, in original order (the transcript as appended).
    #[wasm_bindgen(js_name = canonicalTranscript, unchecked_return_type = "Promise<Entry[]>")]
    pub fn canonical_transcript(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
    ) -> Promise {
        self.run(
            workspace_and_key(&workspace, &key)
                .map(|(workspace, key)| compaction::canonical_transcript(&workspace, &key)),
        )
    }

    /// Resolves to the compaction summaries of the session `key`, oldest first.
    #[wasm_bindgen(js_name = listSummaries, unchecked_return_type = "Promise<Summary[]>")]
    pub fn list_summaries(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
    ) -> Promise {
        self.run(
            workspace_and_key(&workspace, &key)
                .map(|(workspace, key)| compaction::list_summaries(&workspace, &key)),
        )
    }

    /// Resolves to the summaries of the degraded compactions of `workspace` (flush
    /// receipt `degraded_forensic`, no repair status yet), only `agentId`'s sessions when
    /// given.
    #[wasm_bindgen(
        js_name = listDegradedCompactions,
        unchecked_return_type = "Promise<Summary[]>"
    )]
    pub fn list_degraded_compactions(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(js_name = "agentId", unchecked_optional_param_type = "string | null")]
        agent_id: JsValue,
    ) -> Promise {
        self.run(list_degraded_compactions(&workspace, &agent_id))
    }

    /// Resolves to the entries the compaction `compactionId` of the session `key`
    /// archived (its pre-image), in original order.
    #[wasm_bindgen(js_name = compactionPreimage, unchecked_return_type = "Promise<Entry[]>")]
    pub fn compaction_preimage(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = "compactionId", unchecked_param_type = "string")]
        compaction_id: JsValue,
    ) -> Promise {
        self.run(compaction_preimage(&workspace, &key, &compaction_id))
    }

    /// Sets the repair status (e.g. `"repaired"`) of the compaction `compactionId` of the
    /// session `key`, which takes it off the degraded list. Resolves to the summary.
    #[wasm_bindgen(js_name = setRepairStatus, unchecked_return_type = "Promise<Summary>")]
    pub fn set_repair_status(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = "compactionId", unchecked_param_type = "string")]
        compaction_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] status: JsValue,
    ) -> Promise {
        self.run(amend_compaction(
            &workspace,
            &key,
            &compaction_id,
            &status,
            compaction::set_repair_status,
        ))
    }

    /// Back-fills the flush receipt of the compaction `compactionId` of the session `key`
    /// (`unknown`, `safe`, `unsafe` — stored as `degraded_forensic` —,
    /// `degraded_forensic`, `noop_no_memory` or `archive_only`). Resolves to the summary.
    #[wasm_bindgen(js_name = setFlushReceipt, unchecked_return_type = "Promise<Summary>")]
    pub fn set_flush_receipt(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = "compactionId", unchecked_param_type = "string")]
        compaction_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "FlushReceiptStatus")] status: JsValue,
    ) -> Promise {
        self.run(amend_compaction(
            &workspace,
            &key,
            &compaction_id,
            &status,
            compaction::set_flush_receipt,
        ))
    }

    /// Runs any core call given as data: `command` is the core's `Command` as JSON
    /// (`{ op: "append_entry", key, request, now_ms }`, the shape of the scenario vectors
    /// and of the WIT `execute`), in `workspace`. Resolves to the call's result as JSON.
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
        let tabs = self.tabs();
        let args = js::string(&workspace, "workspace")
            .and_then(|workspace| Ok((workspace, js::object::<Command>(command, "command")?)));
        future_to_promise(async move {
            let (workspace, command) = args.map_err(|e| js::error(&e))?;
            let value = tabs
                .drive(command.into_operation(&workspace))
                .await
                .and_then(|outcome| outcome)
                .map_err(|e| js::error(&e))?;
            js::to_js(&value).map_err(|e| js::error(&e))
        })
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
    fn run<T: Serialize + 'static>(&self, op: Result<Operation<T>, Error>) -> Promise {
        let tabs = self.tabs();
        future_to_promise(async move {
            let op = op.map_err(|e| js::error(&e))?;
            let value = tabs.drive(op).await.map_err(|e| js::error(&e))?;
            js::to_js(&value).map_err(|e| js::error(&e))
        })
    }

    /// What an operation needs to run among other tabs.
    fn tabs(&self) -> Driver {
        Driver {
            connection: Rc::clone(&self.storage),
            channel: self.channel.clone(),
        }
    }
}

/// Runs operations against the database, one at a time per workspace across tabs.
pub(crate) struct Driver {
    connection: Connection,
    channel: Option<Rc<web_sys::BroadcastChannel>>,
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
        let attempt = match turn.known() {
            Some(known) => storage.attempt_knowing(known),
            None => storage.attempt(),
        };
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

/// Options naming a created session's identity and the time.
const CREATE: &[&str] = &["sessionId", "nowMs"];
/// Options naming the time.
const TIME: &[&str] = &["nowMs"];
/// Options naming the time and a fence.
const FENCE: &[&str] = &["nowMs", "expectedEpoch"];
/// Options naming a fence.
const EPOCH: &[&str] = &["expectedEpoch"];

fn workspace_and_key(workspace: &JsValue, key: &JsValue) -> Result<(String, String), Error> {
    Ok((js::string(workspace, "workspace")?, js::string(key, "key")?))
}

fn create_session(
    workspace: &JsValue,
    key: &JsValue,
    options: JsValue,
) -> Result<Operation<Session>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let options = js::options(options, "options", CREATE)?;
    let session_id = options.session_id()?;
    Ok(spool::create_session(
        &workspace,
        &key,
        &session_id,
        options.now(),
    ))
}

fn get_session(workspace: &JsValue, key: &JsValue) -> Result<Operation<Option<Session>>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    Ok(spool::get_session(&workspace, &key))
}

fn append_entry(
    workspace: &JsValue,
    key: &JsValue,
    request: JsValue,
    options: JsValue,
) -> Result<Operation<Entry>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let request: AppendRequest = js::object(request, "request")?;
    let options = js::options(options, "options", TIME)?;
    Ok(spool::append_entry(
        &workspace,
        &key,
        request,
        options.now(),
    ))
}

fn read_page(
    workspace: &JsValue,
    key: &JsValue,
    request: JsValue,
) -> Result<Operation<Page>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let request: PageRequest = js::object(request, "request")?;
    Ok(spool::read_page(&workspace, &key, request))
}

fn list_sessions(
    workspace: &JsValue,
    limit: &JsValue,
    cursor: &JsValue,
    filter: JsValue,
) -> Result<Operation<SessionList>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let limit = js::limit(limit, "limit")?;
    let cursor = js::optional_string(cursor, "cursor")?;
    let filter: ListFilter = js::optional_object(filter, "filter")?;
    Ok(spool::list_sessions_where(
        &workspace,
        limit,
        cursor.as_deref(),
        filter,
    ))
}

fn get_or_create(
    workspace: &JsValue,
    key: &JsValue,
    options: JsValue,
) -> Result<Operation<IntentOutcome>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let options = js::options(options, "options", CREATE)?;
    let session_id = options.session_id()?;
    Ok(spool::get_or_create(
        &workspace,
        &key,
        &session_id,
        options.now(),
    ))
}

fn apply_intent(
    workspace: &JsValue,
    key: &JsValue,
    intent: &JsValue,
    options: JsValue,
) -> Result<Operation<IntentOutcome>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let intent: Intent = js::choice(intent, "intent")?;
    let options = js::options(options, "options", CREATE)?;
    let session_id = options.session_id()?;
    Ok(spool::apply_intent(
        &workspace,
        &key,
        intent,
        &session_id,
        options.now(),
    ))
}

fn resume(
    workspace: &JsValue,
    key: &JsValue,
    options: JsValue,
) -> Result<Operation<Session>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let options = js::options(options, "options", TIME)?;
    Ok(spool::resume(&workspace, &key, options.now()))
}

fn update(
    workspace: &JsValue,
    key: &JsValue,
    request: JsValue,
    options: JsValue,
) -> Result<Operation<Session>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let request: UpdateRequest = js::object(request, "request")?;
    let options = js::options(options, "options", TIME)?;
    Ok(spool::update(&workspace, &key, request, options.now()))
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

fn delete_session(
    workspace: &JsValue,
    key: &JsValue,
    options: JsValue,
) -> Result<Operation<()>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let options = js::options(options, "options", EPOCH)?;
    Ok(spool::delete_session(
        &workspace,
        &key,
        options.expected_epoch,
    ))
}

fn prune_stale(
    workspace: &JsValue,
    max_age_ms: &JsValue,
    options: JsValue,
) -> Result<Operation<u64>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let max_age_ms = js::count(max_age_ms, "maxAgeMs")?;
    let options = js::options(options, "options", TIME)?;
    Ok(spool::prune_stale(&workspace, max_age_ms, options.now()))
}

fn cap_entries(workspace: &JsValue, max: &JsValue) -> Result<Operation<u64>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let max = js::count(max, "max")?;
    Ok(spool::cap_entries(&workspace, max))
}

fn count_entries(workspace: &JsValue, key: &JsValue) -> Result<Operation<u64>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    Ok(spool::count_entries(&workspace, &key))
}

fn get_entry(
    workspace: &JsValue,
    key: &JsValue,
    message_id: &JsValue,
) -> Result<Operation<Option<Entry>>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let message_id = js::string(message_id, "messageId")?;
    Ok(spool::get_entry(&workspace, &key, &message_id))
}

fn truncate(
    workspace: &JsValue,
    key: &JsValue,
    max_messages: &JsValue,
    options: JsValue,
) -> Result<Operation<TruncateOutcome>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let max_messages = js::count(max_messages, "maxMessages")?;
    let options = js::options(options, "options", FENCE)?;
    Ok(spool::truncate(
        &workspace,
        &key,
        max_messages,
        options.expected_epoch,
        options.now(),
    ))
}

fn rollback(
    workspace: &JsValue,
    key: &JsValue,
    turns: &JsValue,
    options: JsValue,
) -> Result<Operation<TruncateOutcome>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let turns = js::count(turns, "turns")?;
    let options = js::options(options, "options", FENCE)?;
    Ok(spool::rollback(
        &workspace,
        &key,
        turns,
        options.expected_epoch,
        options.now(),
    ))
}

fn save_state(
    workspace: &JsValue,
    key: &JsValue,
    state: JsValue,
    options: JsValue,
) -> Result<Operation<ContextState>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let state: NewContextState = js::object(state, "state")?;
    let options = js::options(options, "options", FENCE)?;
    Ok(spool::save_state(
        &workspace,
        &key,
        state,
        options.expected_epoch,
        options.now(),
    ))
}

fn list_states(
    workspace: &JsValue,
    key: &JsValue,
    valid_only: &JsValue,
) -> Result<Operation<Vec<ContextState>>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let valid_only = js::flag(valid_only, "validOnly", true)?;
    Ok(spool::list_states(&workspace, &key, valid_only))
}

fn invalidate_states(
    workspace: &JsValue,
    key: &JsValue,
    reason: &JsValue,
    state_kind: &JsValue,
    options: JsValue,
) -> Result<Operation<u64>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let reason = js::string(reason, "reason")?;
    let state_kind = js::optional_string(state_kind, "stateKind")?;
    let options = js::options(options, "options", TIME)?;
    Ok(spool::invalidate_states(
        &workspace,
        &key,
        state_kind.as_deref(),
        &reason,
        options.now(),
    ))
}

fn compact(
    workspace: &JsValue,
    key: &JsValue,
    request: JsValue,
    options: JsValue,
) -> Result<Operation<CompactionResult>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let request: CompactRequest = js::object(request, "request")?;
    let options = js::options(options, "options", TIME)?;
    Ok(compaction::compact(
        &workspace,
        &key,
        request,
        options.now(),
    ))
}

fn prepare_compaction(
    workspace: &JsValue,
    key: &JsValue,
    request: JsValue,
) -> Result<Operation<Prepared>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let request: CompactRequest = js::object(request, "request")?;
    Ok(compaction::prepare_compaction(&workspace, &key, request))
}

fn commit_compaction(
    workspace: &JsValue,
    key: &JsValue,
    commit: JsValue,
    options: JsValue,
) -> Result<Operation<CompactionResult>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let commit: CommitRequest = js::object(commit, "commit")?;
    let options = js::options(options, "options", TIME)?;
    Ok(compaction::commit_compaction(
        &workspace,
        &key,
        commit,
        options.now(),
    ))
}

/// The checked arguments of `compactWith`.
struct CompactWith {
    workspace: String,
    key: String,
    request: CompactRequest,
    summarize: js_sys::Function,
    now_ms: u64,
}

fn compact_with_args(
    workspace: &JsValue,
    key: &JsValue,
    request: JsValue,
    summarize: JsValue,
    options: JsValue,
) -> Result<CompactWith, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let request: CompactRequest = js::object(request, "request")?;
    let summarize = js::function(summarize, "summarize")?;
    let options = js::options(options, "options", TIME)?;
    Ok(CompactWith {
        workspace,
        key,
        request,
        summarize,
        now_ms: options.now(),
    })
}

/// Prepare, summarize in JS, commit. The summarizer runs between the two operations, so
/// the commit's preimage check catches any write that lands while it thinks.
async fn compact_with(tabs: &Driver, args: CompactWith) -> Result<CompactionResult, Error> {
    let CompactWith {
        workspace,
        key,
        request,
        summarize,
        now_ms,
    } = args;
    let prepare = compaction::prepare_compaction(&workspace, &key, request.clone());
    // Two operations: no lock is held while the summarizer thinks.
    let prepared = tabs.drive(prepare).await?;
    // The summarizer is async, so the plan's two steps are taken apart here:
    // `Prepared::commit_with` says when it is asked.
    let summary_text = if prepared.needs_summary() {
        js::summarize(&summarize, &js::to_js(&prepared)?).await?
    } else {
        String::new()
    };
    let commit = prepared.commit(request, summary_text);
    let commit = compaction::commit_compaction(&workspace, &key, commit, now_ms);
    tabs.drive(commit).await
}

fn persist_compaction_result(
    workspace: &JsValue,
    key: &JsValue,
    persist: JsValue,
    options: JsValue,
) -> Result<Operation<CompactionResult>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let persist: PersistRequest = js::object(persist, "persist")?;
    let options = js::options(options, "options", TIME)?;
    Ok(compaction::persist_compaction_result(
        &workspace,
        &key,
        persist,
        options.now(),
    ))
}

fn list_degraded_compactions(
    workspace: &JsValue,
    agent_id: &JsValue,
) -> Result<Operation<Vec<Summary>>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let agent_id = js::optional_string(agent_id, "agentId")?;
    Ok(compaction::list_degraded_compactions(
        &workspace,
        agent_id.as_deref(),
    ))
}

fn compaction_preimage(
    workspace: &JsValue,
    key: &JsValue,
    compaction_id: &JsValue,
) -> Result<Operation<Vec<Entry>>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let compaction_id = js::string(compaction_id, "compactionId")?;
    Ok(compaction::compaction_preimage(
        &workspace,
        &key,
        &compaction_id,
    ))
}

/// `setRepairStatus` and `setFlushReceipt`: `amend` is the core operation.
fn amend_compaction(
    workspace: &JsValue,
    key: &JsValue,
    compaction_id: &JsValue,
    status: &JsValue,
    amend: fn(&str, &str, &str, &str) -> Operation<Summary>,
) -> Result<Operation<Summary>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let compaction_id = js::string(compaction_id, "compactionId")?;
    let status = js::string(status, "status")?;
    Ok(amend(&workspace, &key, &compaction_id, &status))
}
