//! Writing an imported session: one commit per call, idempotent by message id.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ImportFormat, ImportedSession};
use crate::error::Error;
use crate::keys;
use crate::model::{AppendRequest, Session};
use crate::op::{Io, OpResult, Operation};
use crate::resume::RunRecord;
use crate::session::{Loaded, Stored, load, write_appended};
use crate::storage::Batch;
use crate::transcript::{check_append, entry_clock, in_base, stage_entry};
use crate::validate;

/// The most entries one [`import_session`] call writes; a host imports a longer
/// session in slices of at most this many entries, in order.
pub const MAX_IMPORT_ENTRIES: usize = 1000;

/// One parsed session (or a slice of its entries, in order) to write under `key`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportRequest {
    /// The session key to write into.
    pub key: String,
    /// The identity of the session if the import creates it.
    pub session_id: String,
    /// The log's format (its agent type names the run record and thread binding).
    pub format: ImportFormat,
    /// The parsed session.
    pub session: ImportedSession,
}

/// What [`import_session`] did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportOutcome {
    /// Whether the session was created.
    pub created: bool,
    /// Entries written.
    pub imported: u64,
    /// Entries skipped because the session already held their message id.
    pub already_present: u64,
    /// The session after the import.
    pub session: Session,
}

/// Writes a parsed session under `request.key` in one commit: creates the session if
/// needed, appends every entry whose message id it does not hold yet (entry times are
/// the log's, kept non-decreasing so transcript order is log order), records the
/// provider session as a `done` run (agent type, project = last path segment of the cwd,
/// task `import`) and binds it as the session's `<agent>_thread_id`, so resume selection
/// and thread plans can use it. A branch session (`fork_of`) gets neither. Importing the
/// same session again writes nothing.
pub fn import_session(
    workspace: &str,
    request: ImportRequest,
    now_ms: u64,
) -> Operation<ImportOutcome> {
    if let Err(e) = validate::workspace(workspace).and_then(|()| check(&request)) {
        return Operation::failed(workspace, e);
    }
    Operation::new(workspace, move |io| {
        let request = request.clone();
        async move { write(&io, request, now_ms).await }
    })
}

fn check(request: &ImportRequest) -> Result<(), Error> {
    validate::session_key(&request.key)?;
    validate::session_id(&request.session_id)?;
    let s = &request.session;
    validate::id("provider_session_id", &s.provider_session_id)?;
    if s.entries.len() > MAX_IMPORT_ENTRIES {
        return Err(Error::invalid(
            "entries",
            format!(
                "holds {} entries; one import call writes at most {MAX_IMPORT_ENTRIES}",
                s.entries.len()
            ),
        ));
    }
    for e in &s.entries {
        check_append(&e.clone().into())?;
    }
    for (field, value) in [("model", &s.model), ("version", &s.version)] {
        if let Some(v) = value {
            validate::id(field, v)?;
        }
    }
    Ok(())
}

impl From<super::ImportedEntry> for AppendRequest {
    fn from(e: super::ImportedEntry) -> Self {
        AppendRequest {
            role: e.role,
            content: e.content,
            token_count: None,
            message_id: Some(e.message_id),
            tool_calls: e.tool_calls,
            tool_call_id: e.tool_call_id,
            turn_id: None,
            turn_usage: e.turn_usage,
            expected_epoch: None,
        }
    }
}

/// The project a cwd names: its last path segment.
fn project_of(cwd: Option<&str>) -> String {
    cwd.and_then(|c| {
        c.trim_end_matches(['/', '\\'])
            .rsplit(['/', '\\'])
            .next()
            .filter(|s| !s.is_empty())
    })
    .map_or_else(|| "unknown".to_owned(), |p| p.chars().take(128).collect())
}

async fn write(io: &Io, request: ImportRequest, now_ms: u64) -> OpResult<ImportOutcome> {
    let agent = request.format.agent_type();
    let imported = &request.session;
    let loaded: Option<Loaded> = load(io, &request.key).await?;
    let created = loaded.is_none();
    let start = imported
        .started_at
        .max(imported.entries.first().map_or(0, |e| e.created_at));
    let mut session = match &loaded {
        Some(l) => l.session.clone(),
        None => Session::new(
            &request.key,
            &request.session_id,
            if start > 0 { start } else { now_ms },
        ),
    };
    let sid = session.session_id.clone();
    // Entries only ever move forward in time: start from the session's entry clock.
    let mut clock = match &loaded {
        Some(l) => entry_clock(io, l).await?,
        None => 0,
    };
    let mut staged = Batch::default();
    let mut count = 0u64;
    let mut present = 0u64;
    let mut seen = std::collections::BTreeSet::new();
    for entry in &imported.entries {
        let stored = io
            .get(keys::message(&sid, &entry.message_id))
            .await?
            .is_some()
            || match &loaded {
                Some(l) => in_base(io, l, &entry.message_id).await?,
                None => false,
            };
        if !seen.insert(entry.message_id.as_str()) || stored {
            present += 1;
            continue;
        }
        let before = session.updated_at;
        stage_entry(
            &mut staged,
            &mut session,
            &mut clock,
            entry.clone().into(),
            entry.created_at,
        )?;
        session.updated_at = before.max(clock);
        count += 1;
    }
    let first_import = created || !session.metadata.contains_key("import");
    if count == 0 && !first_import {
        return Ok(ImportOutcome {
            created,
            imported: 0,
            already_present: present,
            session,
        });
    }
    if session.model.is_none() {
        session.model.clone_from(&imported.model);
    }
    session.metadata.insert(
        "import".into(),
        json!({
            "format": request.format,
            "provider_session_id": imported.provider_session_id,
            "fork_of": imported.fork_of,
            "cwd": imported.cwd,
            "version": imported.version,
            "git_branch": imported.git_branch,
        }),
    );
    let mut batch = Batch::default();
    if imported.fork_of.is_none() {
        session.model_config.insert(
            crate::threads::binding_key(agent),
            Value::String(imported.provider_session_id.clone()),
        );
        let run = RunRecord {
            agent_type: agent.to_owned(),
            project_id: project_of(imported.cwd.as_deref()),
            session_id: imported.provider_session_id.clone(),
            status: "done".into(),
            updated_at: session.updated_at,
            task_id: "import".into(),
            role_session_id: None,
            workspace_path: imported.cwd.clone(),
            run_mode: Some("import".into()),
            metadata: Default::default(),
        };
        crate::roles::stage_run(io, &mut batch, &run).await?;
    }
    match &loaded {
        Some(old) => write_appended(&mut batch, old, &session, clock)?,
        None => {
            let record_key = keys::session(&session.key);
            let bytes = Stored::encode(&session, &Default::default(), &[], Some(clock))?;
            batch.require_absent(record_key.clone());
            batch.put(record_key, bytes.clone());
            batch.put(keys::recency(session.updated_at, &session.key), bytes);
        }
    }
    batch.extend(staged);
    io.commit(batch).await?;
    Ok(ImportOutcome {
        created,
        imported: count,
        already_present: present,
        session,
    })
}
