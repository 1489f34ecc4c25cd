//! Where each session of a parsed log goes, and how it joins the session it comes from:
//! the same plan for every host, so the CLI and the browser import a log alike.

use serde::{Deserialize, Serialize};

use super::{ImportFormat, ImportedSession};

/// The longest provider session id used in a key as is.
pub const MAX_PROVIDER_ID_BYTES: usize = 128;

/// One session of a log, ready to import.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedSession {
    /// The key to import it under: `import:<agent type>:<provider session id>`.
    pub key: String,
    /// Why `key` is not that verbatim (the id was too long or held other characters).
    #[serde(default)]
    pub key_note: Option<String>,
    /// How it joins the session it comes from, when it does.
    #[serde(default)]
    pub link: Option<PlannedLink>,
    /// Why a session that names another (`fork_of`) is imported standalone.
    #[serde(default)]
    pub link_note: Option<String>,
    /// Where its entries are cut into import calls ([`super::slices`]): the end index
    /// of each slice, in order (`[0]` for a session without entries).
    pub slice_ends: Vec<usize>,
    /// The session.
    pub session: ImportedSession,
}

/// How a planned session joins another one (which comes earlier in the plan, or was
/// imported before). Applied only when the session is created: an existing session keeps
/// its place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PlannedLink {
    /// A rewound turn: first branch `parent_key` (`branch`) sharing its canonical history
    /// strictly before `before_message_id` (all of it when `None`), then import.
    Branch {
        /// The session it branches from.
        parent_key: String,
        /// The parent's first message after the fork point, if it has one.
        before_message_id: Option<String>,
    },
    /// A sub-agent: imported as a child of `parent_key` (`import_session` with it as
    /// `parent_key`), with no history of its parent.
    Child {
        /// The session that spawned it.
        parent_key: String,
        /// The parent's tool call that started it, when the log says.
        tool_call_id: Option<String>,
    },
}

/// A parsed log with its sessions planned: what a host imports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportPlan {
    /// What the parser read, its `sessions` moved to `sessions` (so empty here).
    pub log: super::ImportedLog,
    /// The sessions in the order to import them ([`plan`]).
    pub sessions: Vec<PlannedSession>,
}

impl ImportPlan {
    /// Plans every session of `log`.
    pub fn of(mut log: super::ImportedLog) -> ImportPlan {
        let sessions = plan(log.format, std::mem::take(&mut log.sessions));
        ImportPlan { log, sessions }
    }
}

/// `import:<agent type>:<provider session id>`, or, when the id is longer than
/// [`MAX_PROVIDER_ID_BYTES`] or holds other characters than ASCII letters, digits, `-`,
/// `_`, `.` and `@`, `import:<agent type>:<`[`super::sanitize_id`]`>` with the reason.
pub fn session_key(format: ImportFormat, provider_id: &str) -> (String, Option<String>) {
    let agent = format.agent_type();
    let clean = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@');
    let key = format!("import:{agent}:{provider_id}");
    let problem = if provider_id.len() > MAX_PROVIDER_ID_BYTES {
        Some(format!(
            "the provider session id is {} bytes long (more than {MAX_PROVIDER_ID_BYTES})",
            provider_id.len()
        ))
    } else if !provider_id.chars().all(clean) {
        Some("the provider session id holds characters other than ASCII letters, digits, `-`, `_`, `.` and `@`".to_owned())
    } else {
        crate::validate::session_key(&key)
            .err()
            .map(|e| e.to_string())
    };
    let Some(problem) = problem else {
        return (key, None);
    };
    (
        format!("import:{agent}:{}", super::sanitize_id(provider_id)),
        Some(format!(
            "{problem}; stored under a sanitized key with a hash of the id"
        )),
    )
}

/// The plan of a log's sessions: each with its key, its link and its slices, a session
/// after the one it branches from or was spawned by when both are in the log.
///
/// - A branch (`fork_of`) links to its parent when the parent is in `sessions` and holds
///   `after_message_id`; otherwise it is standalone and `link_note` says why.
/// - A sub-agent (`spawned_by`) links to the key of its parent's provider session
///   whether or not the parent is in `sessions` (a sub-agent file is parsed alone): the
///   host imports the parent first, or falls back to a standalone import.
pub fn plan(format: ImportFormat, sessions: Vec<ImportedSession>) -> Vec<PlannedSession> {
    let mut planned: Vec<PlannedSession> = Vec::with_capacity(sessions.len());
    let key_of = |id: &str| session_key(format, id).0;
    for session in &sessions {
        // A Spool export goes back under its own key.
        let (key, key_note) = match &session.exported {
            Some(export) => (export.session.key.clone(), None),
            None => session_key(format, &session.provider_session_id),
        };
        let (link, link_note) = if let Some(fork) = &session.fork_of {
            match sessions
                .iter()
                .find(|s| s.provider_session_id == fork.provider_session_id)
            {
                None => (
                    None,
                    Some(format!(
                        "its parent session {} is not in the log",
                        fork.provider_session_id
                    )),
                ),
                Some(parent) => match parent
                    .entries
                    .iter()
                    .position(|e| e.message_id == fork.after_message_id)
                {
                    None => (
                        None,
                        Some(format!(
                            "its parent does not hold message {}",
                            fork.after_message_id
                        )),
                    ),
                    Some(at) => (
                        Some(PlannedLink::Branch {
                            parent_key: key_of(&fork.provider_session_id),
                            before_message_id: parent
                                .entries
                                .get(at + 1)
                                .map(|e| e.message_id.clone()),
                        }),
                        None,
                    ),
                },
            }
        } else if let Some(spawn) = &session.spawned_by {
            (
                Some(PlannedLink::Child {
                    parent_key: key_of(&spawn.provider_session_id),
                    tool_call_id: spawn.tool_call_id.clone(),
                }),
                None,
            )
        } else {
            (None, None)
        };
        let mut slice_ends = Vec::new();
        let mut end = 0;
        for slice in super::slices(&session.entries) {
            end += slice.len();
            slice_ends.push(end);
        }
        planned.push(PlannedSession {
            key,
            key_note,
            link,
            link_note,
            slice_ends,
            session: session.clone(),
        });
    }
    // Parents first: a stable order where every linked session follows its parent when
    // the parent is planned too (links form a forest, so this terminates).
    let mut ordered: Vec<PlannedSession> = Vec::with_capacity(planned.len());
    while !planned.is_empty() {
        let ready = planned
            .iter()
            .position(|p| {
                let parent = match &p.link {
                    Some(PlannedLink::Branch { parent_key, .. })
                    | Some(PlannedLink::Child { parent_key, .. }) => parent_key,
                    None => return true,
                };
                parent == &p.key || !planned.iter().any(|q| &q.key == parent)
            })
            .unwrap_or(0);
        ordered.push(planned.remove(ready));
    }
    ordered
}

#[cfg(test)]
#[path = "tests/plan.rs"]
mod tests;
