//! The component shell: wit-bindgen exports over the core, storage over the WIT imports.
//!
//! This is the only file that sees generated types; everything else speaks core types.

use crate::model::{
    AppendRequest, Entry, Order, Page, PageRequest, Role, Session, SessionList, SessionStatus,
};
use crate::storage::{
    Batch, KeyRange, Kv, Mutation, Precondition, RangeQuery, Storage, StorageError,
};

wit_bindgen::generate!({
    world: "spool",
    path: "wit",
});

use exports::spool::engine::api as wit;
use spool::engine::{storage as host, types};

/// The host's storage, reached through the WIT imports.
struct HostStorage;

fn from_wit_error(error: types::StorageError) -> StorageError {
    match error {
        types::StorageError::Conflict(index) => StorageError::Conflict(index),
        types::StorageError::Backend(cause) => StorageError::Backend(cause),
    }
}

fn to_wit_range(range: KeyRange) -> types::KeyRange {
    types::KeyRange {
        start: range.start,
        end: range.end,
    }
}

fn to_wit_kv(kv: Kv) -> types::Kv {
    types::Kv {
        key: kv.key,
        value: kv.value,
    }
}

impl Storage for HostStorage {
    fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        host::get(workspace, key).map_err(from_wit_error)
    }

    fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        let query = types::RangeQuery {
            range: to_wit_range(query.range.clone()),
            limit: query.limit,
            reverse: query.reverse,
        };
        host::range(workspace, &query)
            .map(|pairs| {
                pairs
                    .into_iter()
                    .map(|kv| Kv {
                        key: kv.key,
                        value: kv.value,
                    })
                    .collect()
            })
            .map_err(from_wit_error)
    }

    fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError> {
        let batch = types::Batch {
            preconditions: batch
                .preconditions
                .into_iter()
                .map(|p| match p {
                    Precondition::Absent(key) => types::Precondition::Absent(key),
                    Precondition::Equals(kv) => types::Precondition::Equals(to_wit_kv(kv)),
                })
                .collect(),
            mutations: batch
                .mutations
                .into_iter()
                .map(|m| match m {
                    Mutation::Put(kv) => types::Mutation::Put(to_wit_kv(kv)),
                    Mutation::Delete(key) => types::Mutation::Delete(key),
                    Mutation::DeleteRange(range) => {
                        types::Mutation::DeleteRange(to_wit_range(range))
                    }
                })
                .collect(),
        };
        host::commit(workspace, &batch).map_err(from_wit_error)
    }
}

fn to_wit_error(error: crate::Error) -> wit::Error {
    use crate::Error as E;
    let code = match &error {
        E::NotFound { .. } => wit::ErrorCode::NotFound,
        E::Conflict { .. } => wit::ErrorCode::Conflict,
        E::InvalidArgument { .. } => wit::ErrorCode::InvalidArgument,
        E::StaleEpoch { .. } => wit::ErrorCode::StaleEpoch,
        E::Corruption { .. } => wit::ErrorCode::Corruption,
        E::Storage { .. } => wit::ErrorCode::Storage,
        _ => wit::ErrorCode::Internal,
    };
    wit::Error {
        code,
        message: error.to_string(),
    }
}

fn to_wit_session(s: Session) -> wit::Session {
    wit::Session {
        key: s.key,
        session_id: s.session_id,
        agent_id: s.agent_id,
        status: match s.status {
            SessionStatus::Running => wit::SessionStatus::Running,
            SessionStatus::Done => wit::SessionStatus::Done,
            SessionStatus::Failed => wit::SessionStatus::Failed,
        },
        epoch: s.epoch,
        created_at: s.created_at,
        updated_at: s.updated_at,
        entry_count: s.entry_count,
        last_entry_id: s.last_entry_id,
        total_tokens: s.total_tokens,
    }
}

fn to_wit_role(role: Role) -> wit::Role {
    match role {
        Role::User => wit::Role::User,
        Role::Assistant => wit::Role::Assistant,
        Role::Tool => wit::Role::Tool,
        Role::System => wit::Role::System,
    }
}

fn from_wit_role(role: wit::Role) -> Role {
    match role {
        wit::Role::User => Role::User,
        wit::Role::Assistant => Role::Assistant,
        wit::Role::Tool => Role::Tool,
        wit::Role::System => Role::System,
    }
}

fn to_wit_entry(e: Entry) -> wit::Entry {
    wit::Entry {
        id: e.id,
        message_id: e.message_id,
        role: to_wit_role(e.role),
        content: e.content,
        created_at: e.created_at,
        token_count: e.token_count,
        tool_calls: e.tool_calls.map(|v| v.to_string()),
        tool_call_id: e.tool_call_id,
        turn_id: e.turn_id,
    }
}

fn from_wit_append(r: wit::AppendRequest) -> Result<AppendRequest, crate::Error> {
    let tool_calls = r
        .tool_calls
        .map(|text| {
            serde_json::from_str(&text)
                .map_err(|e| crate::Error::invalid("tool_calls", format!("is not JSON: {e}")))
        })
        .transpose()?;
    Ok(AppendRequest {
        role: from_wit_role(r.role),
        content: r.content,
        token_count: r.token_count,
        message_id: r.message_id,
        tool_calls,
        tool_call_id: r.tool_call_id,
        turn_id: r.turn_id,
        expected_epoch: r.expected_epoch,
    })
}

fn to_wit_page(p: Page) -> wit::Page {
    wit::Page {
        entries: p.entries.into_iter().map(to_wit_entry).collect(),
        next_cursor: p.next_cursor,
    }
}

fn to_wit_list(l: SessionList) -> wit::SessionList {
    wit::SessionList {
        sessions: l.sessions.into_iter().map(to_wit_session).collect(),
        next_cursor: l.next_cursor,
    }
}

struct Component;

impl wit::Guest for Component {
    fn create_session(
        workspace: String,
        key: String,
        session_id: String,
        now_ms: u64,
    ) -> Result<wit::Session, wit::Error> {
        crate::run(
            &HostStorage,
            crate::create_session(&workspace, &key, &session_id, now_ms),
        )
        .map(to_wit_session)
        .map_err(to_wit_error)
    }

    fn get_session(workspace: String, key: String) -> Result<Option<wit::Session>, wit::Error> {
        crate::run(&HostStorage, crate::get_session(&workspace, &key))
            .map(|s| s.map(to_wit_session))
            .map_err(to_wit_error)
    }

    fn append_entry(
        workspace: String,
        key: String,
        request: wit::AppendRequest,
        now_ms: u64,
    ) -> Result<wit::Entry, wit::Error> {
        let request = from_wit_append(request).map_err(to_wit_error)?;
        crate::run(
            &HostStorage,
            crate::append_entry(&workspace, &key, request, now_ms),
        )
        .map(to_wit_entry)
        .map_err(to_wit_error)
    }

    fn read_page(
        workspace: String,
        key: String,
        request: wit::PageRequest,
    ) -> Result<wit::Page, wit::Error> {
        let request = PageRequest {
            order: match request.order {
                wit::Order::OldestFirst => Order::OldestFirst,
                wit::Order::NewestFirst => Order::NewestFirst,
            },
            cursor: request.cursor,
            limit: request.limit,
        };
        crate::run(&HostStorage, crate::read_page(&workspace, &key, request))
            .map(to_wit_page)
            .map_err(to_wit_error)
    }

    fn list_sessions(
        workspace: String,
        limit: u32,
        cursor: Option<String>,
    ) -> Result<wit::SessionList, wit::Error> {
        crate::run(
            &HostStorage,
            crate::list_sessions(&workspace, limit, cursor.as_deref()),
        )
        .map(to_wit_list)
        .map_err(to_wit_error)
    }
}

export!(Component);
