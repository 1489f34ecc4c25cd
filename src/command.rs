//! Every API call as data: what the scenario vectors are written in, and what lets any
//! host replay a call without knowing its Rust signature.

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::model::{AppendRequest, PageRequest};
use crate::op::Operation;

/// One API call with its arguments (the workspace travels beside it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Command {
    /// [`crate::create_session`].
    CreateSession {
        /// Session key.
        key: String,
        /// Identity of the new session.
        session_id: String,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::get_session`].
    GetSession {
        /// Session key.
        key: String,
    },
    /// [`crate::append_entry`].
    AppendEntry {
        /// Session key.
        key: String,
        /// The entry.
        request: AppendRequest,
        /// Current time.
        now_ms: u64,
    },
    /// [`crate::read_page`].
    ReadPage {
        /// Session key.
        key: String,
        /// The page.
        request: PageRequest,
    },
    /// [`crate::list_sessions`].
    ListSessions {
        /// Page size.
        limit: u32,
        /// Cursor of the previous page.
        #[serde(default)]
        cursor: Option<String>,
    },
}

fn json<T: Serialize>(value: T) -> Result<serde_json::Value, Error> {
    serde_json::to_value(value)
        .map_err(|e| Error::internal(format!("result does not serialize: {e}")))
}

impl Command {
    /// The operation that performs this call in `workspace`, with its result as JSON.
    pub fn into_operation(self, workspace: &str) -> Operation<Result<serde_json::Value, Error>> {
        match self {
            Command::CreateSession {
                key,
                session_id,
                now_ms,
            } => crate::create_session(workspace, &key, &session_id, now_ms).map(json),
            Command::GetSession { key } => crate::get_session(workspace, &key).map(json),
            Command::AppendEntry {
                key,
                request,
                now_ms,
            } => crate::append_entry(workspace, &key, request, now_ms).map(json),
            Command::ReadPage { key, request } => {
                crate::read_page(workspace, &key, request).map(json)
            }
            Command::ListSessions { limit, cursor } => {
                crate::list_sessions(workspace, limit, cursor.as_deref()).map(json)
            }
        }
    }
}

/// Runs a command against a synchronous storage.
pub fn execute<S: crate::Storage + ?Sized>(
    storage: &S,
    workspace: &str,
    command: Command,
) -> Result<serde_json::Value, Error> {
    crate::op::run(storage, command.into_operation(workspace))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_unknown_fields_are_rejected_not_ignored() {
        let misspelt = r#"{"op":"append_entry","key":"k","now_ms":1,
            "request":{"role":"user","content":"x","tokenCount":3}}"#;
        assert!(serde_json::from_str::<Command>(misspelt).is_err());
        let extra = r#"{"op":"get_session","key":"k","bogus":1}"#;
        assert!(serde_json::from_str::<Command>(extra).is_err());
        let good = r#"{"op":"append_entry","key":"k","now_ms":1,
            "request":{"role":"user","content":"x","token_count":3}}"#;
        let Ok(Command::AppendEntry { request, .. }) = serde_json::from_str::<Command>(good) else {
            panic!("a well-formed call parses");
        };
        assert_eq!(request.token_count, Some(3));
    }
}
