//! The WIT boundary: the generated bindings, the storage imports served from a
//! [`spool::Storage`], and the API exports called with core types.
//!
//! This is the only file that sees generated types; everything else speaks core types.

use spool::{
    AppendRequest, Batch, Entry, KeyRange, Kv, Mutation, Order, Page, PageRequest, Precondition,
    RangeQuery, Role, Session, SessionList, SessionStatus, Storage, StorageError,
};
use wasmtime::component::{HasSelf, InstancePre, Linker};
use wasmtime::{Store, StoreLimits};

use crate::error::Error;

#[allow(missing_docs, unreachable_pub, clippy::all)]
mod bindings {
    wasmtime::component::bindgen!({
        world: "spool",
        path: "../wit",
        imports: { default: trappable },
    });
}

use bindings::exports::spool::engine::api;
use bindings::spool::engine::{storage as host, types};

/// The data of a store: the storage the component's imports reach, and its limits.
pub(crate) struct HostState {
    pub(crate) storage: Box<dyn Storage + Send>,
    pub(crate) limits: StoreLimits,
}

impl types::Host for HostState {}

impl host::Host for HostState {
    fn get(
        &mut self,
        workspace: String,
        key: Vec<u8>,
    ) -> wasmtime::Result<Result<Option<Vec<u8>>, types::StorageError>> {
        Ok(self
            .storage
            .get(&workspace, &key)
            .map_err(to_wit_storage_error))
    }

    fn range(
        &mut self,
        workspace: String,
        query: types::RangeQuery,
    ) -> wasmtime::Result<Result<Vec<types::Kv>, types::StorageError>> {
        let query = RangeQuery {
            range: from_wit_range(query.range),
            limit: query.limit,
            reverse: query.reverse,
        };
        Ok(self
            .storage
            .range(&workspace, &query)
            .map(|pairs| {
                pairs
                    .into_iter()
                    .map(|kv| types::Kv {
                        key: kv.key,
                        value: kv.value,
                    })
                    .collect()
            })
            .map_err(to_wit_storage_error))
    }

    fn commit(
        &mut self,
        workspace: String,
        batch: types::Batch,
    ) -> wasmtime::Result<Result<(), types::StorageError>> {
        Ok(self
            .storage
            .commit(&workspace, from_wit_batch(batch))
            .map_err(to_wit_storage_error))
    }
}

fn to_wit_storage_error(error: StorageError) -> types::StorageError {
    match error {
        StorageError::Conflict(index) => types::StorageError::Conflict(index),
        StorageError::Backend(cause) => types::StorageError::Backend(cause),
    }
}

fn from_wit_range(range: types::KeyRange) -> KeyRange {
    KeyRange {
        start: range.start,
        end: range.end,
    }
}

fn from_wit_kv(kv: types::Kv) -> Kv {
    Kv {
        key: kv.key,
        value: kv.value,
    }
}

fn from_wit_batch(batch: types::Batch) -> Batch {
    Batch {
        preconditions: batch
            .preconditions
            .into_iter()
            .map(|p| match p {
                types::Precondition::Absent(key) => Precondition::Absent(key),
                types::Precondition::Equals(kv) => Precondition::Equals(from_wit_kv(kv)),
            })
            .collect(),
        mutations: batch
            .mutations
            .into_iter()
            .map(|m| match m {
                types::Mutation::Put(kv) => Mutation::Put(from_wit_kv(kv)),
                types::Mutation::Delete(key) => Mutation::Delete(key),
                types::Mutation::DeleteRange(range) => Mutation::DeleteRange(from_wit_range(range)),
            })
            .collect(),
    }
}

/// The component's imports, served by [`HostState`].
pub(crate) fn linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    bindings::Spool::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |state| state)?;
    Ok(linker)
}

/// A component linked against [`HostState`], ready to instantiate cheaply.
#[derive(Clone)]
pub(crate) struct Pre(bindings::SpoolPre<HostState>);

impl Pre {
    pub(crate) fn new(pre: InstancePre<HostState>) -> wasmtime::Result<Self> {
        bindings::SpoolPre::new(pre).map(Pre)
    }

    pub(crate) fn instantiate(&self, store: &mut Store<HostState>) -> wasmtime::Result<Exports> {
        self.0.instantiate(store).map(Exports)
    }
}

/// One instance's exported API, called with core types.
pub(crate) struct Exports(bindings::Spool);

/// What a call returned: the trap/runtime failure is the outer error, the component's
/// refusal the inner one.
type Call<T> = wasmtime::Result<Result<T, api::Error>>;

fn finish<T, U>(
    name: &str,
    call: Call<T>,
    convert: impl FnOnce(T) -> Result<U, Error>,
) -> Result<U, Error> {
    match call {
        Ok(Ok(value)) => convert(value),
        Ok(Err(error)) => Err(from_wit_error(error)),
        Err(trap) => Err(Error::wasm(
            format!("the component failed in `{name}`"),
            &trap,
        )),
    }
}

impl Exports {
    fn api(&self) -> &api::Guest {
        self.0.spool_engine_api()
    }

    pub(crate) fn create_session(
        &self,
        store: &mut Store<HostState>,
        workspace: &str,
        key: &str,
        session_id: &str,
        now_ms: u64,
    ) -> Result<Session, Error> {
        let call = self
            .api()
            .call_create_session(store, workspace, key, session_id, now_ms);
        finish("create-session", call, |s| Ok(from_wit_session(s)))
    }

    pub(crate) fn get_session(
        &self,
        store: &mut Store<HostState>,
        workspace: &str,
        key: &str,
    ) -> Result<Option<Session>, Error> {
        let call = self.api().call_get_session(store, workspace, key);
        finish("get-session", call, |s| Ok(s.map(from_wit_session)))
    }

    pub(crate) fn append_entry(
        &self,
        store: &mut Store<HostState>,
        workspace: &str,
        key: &str,
        request: AppendRequest,
        now_ms: u64,
    ) -> Result<Entry, Error> {
        let request = to_wit_append(request);
        let call = self
            .api()
            .call_append_entry(store, workspace, key, &request, now_ms);
        finish("append-entry", call, from_wit_entry)
    }

    pub(crate) fn read_page(
        &self,
        store: &mut Store<HostState>,
        workspace: &str,
        key: &str,
        request: PageRequest,
    ) -> Result<Page, Error> {
        let request = api::PageRequest {
            order: match request.order {
                Order::OldestFirst => api::Order::OldestFirst,
                Order::NewestFirst => api::Order::NewestFirst,
            },
            cursor: request.cursor,
            limit: request.limit,
        };
        let call = self.api().call_read_page(store, workspace, key, &request);
        finish("read-page", call, |page| {
            Ok(Page {
                entries: page
                    .entries
                    .into_iter()
                    .map(from_wit_entry)
                    .collect::<Result<_, _>>()?,
                next_cursor: page.next_cursor,
            })
        })
    }

    pub(crate) fn list_sessions(
        &self,
        store: &mut Store<HostState>,
        workspace: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<SessionList, Error> {
        let call = self
            .api()
            .call_list_sessions(store, workspace, limit, cursor);
        finish("list-sessions", call, |list| {
            Ok(SessionList {
                sessions: list.sessions.into_iter().map(from_wit_session).collect(),
                next_cursor: list.next_cursor,
            })
        })
    }
}

fn from_wit_error(error: api::Error) -> Error {
    let code = match error.code {
        api::ErrorCode::NotFound => "not_found",
        api::ErrorCode::Conflict => "conflict",
        api::ErrorCode::InvalidArgument => "invalid_argument",
        api::ErrorCode::StaleEpoch => "stale_epoch",
        api::ErrorCode::Corruption => "corruption",
        api::ErrorCode::Storage => "storage",
        api::ErrorCode::Internal => "internal",
    };
    Error::Spool {
        code: code.to_owned(),
        message: error.message,
    }
}

fn from_wit_session(s: api::Session) -> Session {
    Session {
        key: s.key,
        session_id: s.session_id,
        agent_id: s.agent_id,
        status: match s.status {
            api::SessionStatus::Running => SessionStatus::Running,
            api::SessionStatus::Done => SessionStatus::Done,
            api::SessionStatus::Failed => SessionStatus::Failed,
        },
        epoch: s.epoch,
        created_at: s.created_at,
        updated_at: s.updated_at,
        entry_count: s.entry_count,
        last_entry_id: s.last_entry_id,
        total_tokens: s.total_tokens,
    }
}

fn to_wit_role(role: Role) -> api::Role {
    match role {
        Role::User => api::Role::User,
        Role::Assistant => api::Role::Assistant,
        Role::Tool => api::Role::Tool,
        Role::System => api::Role::System,
    }
}

fn from_wit_role(role: api::Role) -> Role {
    match role {
        api::Role::User => Role::User,
        api::Role::Assistant => Role::Assistant,
        api::Role::Tool => Role::Tool,
        api::Role::System => Role::System,
    }
}

fn to_wit_append(r: AppendRequest) -> api::AppendRequest {
    api::AppendRequest {
        role: to_wit_role(r.role),
        content: r.content,
        token_count: r.token_count,
        message_id: r.message_id,
        tool_calls: r.tool_calls.map(|v| v.to_string()),
        tool_call_id: r.tool_call_id,
        turn_id: r.turn_id,
        expected_epoch: r.expected_epoch,
    }
}

fn from_wit_entry(e: api::Entry) -> Result<Entry, Error> {
    let tool_calls = e
        .tool_calls
        .map(|text| {
            serde_json::from_str(&text).map_err(|err| Error::Spool {
                code: "internal".to_owned(),
                message: format!(
                    "the component returned tool calls of entry {} that are not JSON: {err}",
                    e.id
                ),
            })
        })
        .transpose()?;
    Ok(Entry {
        id: e.id,
        message_id: e.message_id,
        role: from_wit_role(e.role),
        content: e.content,
        created_at: e.created_at,
        token_count: e.token_count,
        tool_calls,
        tool_call_id: e.tool_call_id,
        turn_id: e.turn_id,
    })
}
