//! Writing an imported session: one commit per call, idempotent by message id.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ImportFormat, ImportedSession};
use crate::engine::error::Error;
use crate::engine::op::{Io, OpResult, Operation};
use crate::engine::validate;
use crate::resume::rules::RunRecord;
use crate::session::{Identity, Loaded, Stored, Tail, load};
use crate::storage::Batch;
use crate::storage::entry_record::{decode_entry, encode_entry};
use crate::storage::keys;
use crate::storage::record;
use crate::transcript::{Staging, check_append, entry_clock, in_base, stage_entry};
use crate::types::{AppendRequest, BranchLineage, Session, SessionStatus, TurnUsage};

/// The most entries one [`import_session`] call writes; a host imports a longer
/// session in slices of at most this many entries, in order ([`slices`]).
pub const MAX_IMPORT_ENTRIES: usize = 1000;

/// About the most bytes of entries (content and tool calls) one slice of [`slices`]
/// holds, so that its commit stays within [`crate::MAX_BATCH_BYTES`] (an entry larger
/// than this is a slice of its own; content is cut to
/// [`crate::validate::MAX_CONTENT_BYTES`] on import).
pub const MAX_IMPORT_SLICE_BYTES: usize = 8 * 1024 * 1024;

/// Cuts a session's entries into the slices a host imports one [`import_session`] call
/// at a time, in order: at most [`MAX_IMPORT_ENTRIES`] entries and about
/// [`MAX_IMPORT_SLICE_BYTES`] each. No entries make one empty slice (the call still
/// creates the session).
pub fn slices(entries: &[super::ImportedEntry]) -> Vec<&[super::ImportedEntry]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0usize);
    for (i, entry) in entries.iter().enumerate() {
        let size = entry.content.len().min(validate::MAX_CONTENT_BYTES)
            + entry.tool_calls.as_ref().map_or(0, |c| c.to_string().len());
        if i > start && (i - start == MAX_IMPORT_ENTRIES || bytes + size > MAX_IMPORT_SLICE_BYTES) {
            out.push(&entries[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < entries.len() || out.is_empty() {
        out.push(&entries[start..]);
    }
    out
}

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
    /// The key of the session to link a new session to as its parent (a sub-agent's
    /// parent, a rewind's main session): it must exist. Ignored when the session exists.
    #[serde(default)]
    pub parent_key: Option<String>,
    /// The price table the cost estimates of the entries' usage are taken at; `None`:
    /// the built-in one ([`crate::usage::PriceTable::builtin`]). A Spool export's
    /// entries add no estimate (the export's costs are restored as they were).
    #[serde(default)]
    pub prices: Option<crate::usage::PriceTable>,
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
    /// Entries already held whose usage the log now reports differently (a response
    /// that was still streaming when the log was last imported): their usage was
    /// rewritten and the session's token counters moved by the difference.
    #[serde(default)]
    pub usage_updated: u64,
    /// Entries that did not fit Spool's limits as they were: written cut (with a
    /// marker) or left out, each with why. The others are imported all the same.
    #[serde(default)]
    pub adjusted: Vec<AdjustedEntry>,
    /// The provider session id as recorded when it is not a valid id (over
    /// [`validate::MAX_ID_BYTES`] bytes, or holding control or invisible characters):
    /// [`super::sanitize_id`] of it. No run row or thread binding is written then, as
    /// no provider would resume that id.
    #[serde(default)]
    pub sanitized_provider_session_id: Option<String>,
    /// The session after the import.
    pub session: Session,
}

/// An imported entry that did not fit Spool's limits as it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdjustedEntry {
    /// Its message id ([`crate::engine::validate::quote`]d when it is itself the problem).
    pub message_id: String,
    /// `truncated` (written with its content, or its tool calls' inputs, cut and
    /// marked) or `skipped` (not written).
    pub action: String,
    /// Why.
    pub reason: String,
}

/// What an over-long imported content or tool input is replaced by (after the content's
/// first bytes): says that it was cut and how long it was.
fn cut_marker(len: usize) -> String {
    format!("\n[spool import: cut to fit the limit; the original was {len} bytes]")
}

/// An imported entry as an append, cut to fit the limits when its content or tool calls
/// are too large; `Err` with why when it cannot be written even so.
fn fit(entry: &super::ImportedEntry) -> Result<(AppendRequest, Option<String>), String> {
    let mut request: AppendRequest = entry.clone().into();
    let mut note = Vec::new();
    let len = request.content.len();
    if len > validate::MAX_CONTENT_BYTES {
        let marker = cut_marker(len);
        let mut cut = validate::MAX_CONTENT_BYTES - marker.len();
        while !request.content.is_char_boundary(cut) {
            cut -= 1;
        }
        request.content.truncate(cut);
        request.content.push_str(&marker);
        note.push(format!(
            "content of {len} bytes cut to {}",
            request.content.len()
        ));
    }
    if let Some(calls) = &mut request.tool_calls
        && validate::tool_calls(calls).is_err()
    {
        let size = calls.to_string().len();
        if let Value::Array(items) = calls {
            for input in items.iter_mut().filter_map(|c| c.get_mut("input")) {
                *input = Value::String(cut_marker(input.to_string().len()).trim().to_owned());
            }
        }
        note.push(format!(
            "tool calls of {size} bytes of JSON: inputs replaced by a marker"
        ));
    }
    validate::count("created_at", entry.created_at)
        .and_then(|()| check_append(&request))
        .map_err(|e| e.to_string())?;
    Ok((request, (!note.is_empty()).then(|| note.join("; "))))
}

/// Writes a parsed session under `request.key` in one commit: creates the session if
/// needed, appends every entry whose message id it does not hold yet (entry times are
/// the log's, kept non-decreasing so transcript order is log order), records the
/// provider session as a `done` run (agent type, project = last path segment of the cwd,
/// task `import`) and binds it as the session's `<agent>_thread_id`, so resume selection
/// and thread plans can use it. A branch session (`fork_of`) or a sub-agent's
/// (`spawned_by`) gets neither. The session the log first goes into takes the log's
/// times and is `done`, ended at its newest entry (later as the log grows). A new session
/// with `parent_key` is linked as that session's child. Importing the same session again
/// writes nothing.
///
/// An entry the session already holds (same message id in its own identity) whose
/// imported `turn_usage` differs from the stored one gets the imported usage written in
/// place (same position, the rest of the entry unchanged), and the session's input,
/// output and cache counters move by the difference (never below 0): a log re-imported
/// after it grew gives the same figures as a fresh import. An entry held only in a
/// branch's shared history is not rewritten.
///
/// A Spool export ([`super::ImportedSession::exported`]) gets no run row or binding of
/// its own; a session it creates takes the exported record's fields (see
/// `restore::adopt`), status included, and is linked to the exported parent key when this
/// database holds that session; and a session it created (in this call or an earlier one)
/// takes each exported compaction, in order, once the entries it archived are written:
/// the same summary record (under this session's identity), the same active/archived
/// split.
pub fn import_session(
    workspace: &str,
    request: ImportRequest,
    now_ms: u64,
) -> Operation<ImportOutcome> {
    check!(
        workspace,
        validate::now_ms(now_ms)
            .and_then(|()| validate::workspace(workspace))
            .and_then(|()| check(&request))
    );
    Operation::new(workspace, move |io| {
        let request = request.clone();
        async move { write(&io, request, now_ms).await }
    })
}

fn check(request: &ImportRequest) -> Result<(), Error> {
    validate::session_key(&request.key)?;
    validate::session_id(&request.session_id)?;
    if let Some(parent) = &request.parent_key {
        validate::session_key(parent)?;
        if *parent == request.key {
            return Err(Error::invalid("parent_key", "is the session's own key"));
        }
    }
    let s = &request.session;
    if s.provider_session_id.is_empty() {
        return Err(Error::invalid("provider_session_id", "must not be empty"));
    }
    validate::count("started_at", s.started_at)?;
    if s.entries.len() > MAX_IMPORT_ENTRIES {
        return Err(Error::invalid(
            "entries",
            format!(
                "holds {} entries; one import call writes at most {MAX_IMPORT_ENTRIES}",
                s.entries.len()
            ),
        ));
    }
    for (field, value) in [("model", &s.model), ("version", &s.version)] {
        if let Some(v) = value {
            validate::id(field, v)?;
        }
    }
    for (field, value) in [("cwd", &s.cwd), ("git_branch", &s.git_branch)] {
        if let Some(v) = value {
            validate::text(field, v, validate::MAX_PATH_BYTES)?;
        }
    }
    if let Some(fork) = &s.fork_of {
        validate::id("fork_of.after_message_id", &fork.after_message_id)?;
    }
    if let Some(title) = &s.title {
        validate::text("title", title, validate::MAX_PATH_BYTES)?;
    }
    if let Some(prices) = &request.prices {
        prices.check()?;
    }
    Ok(())
}

/// The provider id as recorded, and whether that is not the id itself.
fn recorded_id(provider_id: &str) -> (String, bool) {
    let recorded = super::recorded_provider_id(provider_id);
    let sanitized = recorded != provider_id;
    (recorded, sanitized)
}

impl From<super::ImportedEntry> for AppendRequest {
    fn from(e: super::ImportedEntry) -> Self {
        AppendRequest {
            role: e.role,
            content: e.content,
            token_count: e.token_count,
            message_id: Some(e.message_id),
            tool_calls: e.tool_calls,
            tool_call_id: e.tool_call_id,
            turn_id: e.turn_id,
            turn_usage: e.turn_usage,
            tool_status: e.tool_status,
            reasoning: e.reasoning,
            attachments: e.attachments,
            kind: e.kind,
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

async fn write(io: &Io, mut request: ImportRequest, now_ms: u64) -> OpResult<ImportOutcome> {
    let agent = request.format.agent_type();
    // Each entry's content is let go once its append request holds it: a slice is
    // megabytes, and its entries are also kept for the search index's run.
    let mut entries = std::mem::take(&mut request.session.entries);
    let own_prices = request.prices.take();
    let imported = &request.session;
    // A Spool export brings its costs and token counts along: its entries add no
    // estimate of either.
    let prices = match (&imported.exported, &own_prices) {
        (Some(_), _) => None,
        (None, Some(own)) => Some(own),
        (None, None) => Some(crate::usage::PriceTable::builtin()),
    };
    let mut estimated = false;
    let loaded: Option<Loaded> = load(io, &request.key).await?;
    let created = loaded.is_none();
    if created {
        validate::new_session_key(&request.key)?;
    }
    let start = imported
        .started_at
        .max(entries.first().map_or(0, |e| e.created_at));
    let mut session = match &loaded {
        Some(l) => l.session.clone(),
        None => Session::new(
            &request.key,
            &request.session_id,
            if start > 0 { start } else { now_ms },
        ),
    };
    if let (true, Some(export)) = (created, &imported.exported) {
        super::restore::adopt(&mut session, export);
    }
    let sid = session.session_id.clone();
    // Entries only ever move forward in time: start from the session's entry clock.
    let mut clock = match &loaded {
        Some(l) => entry_clock(io, l).await?,
        None => 0,
    };
    let mut staged = Batch::default();
    // A created session's identity is named now: its entries are staged under it.
    let data_id = match &loaded {
        Some(l) => l.data_id.clone(),
        None => crate::session::mint(io, &mut staged, &sid).await?,
    };
    let identity = Identity {
        data_id: data_id.as_deref().unwrap_or(&sid),
        session_id: &sid,
    };
    let mut count = 0u64;
    let mut present = 0u64;
    let mut seen = std::collections::BTreeSet::new();
    let mut adjusted = Vec::new();
    let mut usage_updated = 0u64;
    let mut positions = std::collections::BTreeMap::new();
    let mut indexed: Vec<crate::types::Entry> = Vec::new();
    for entry in entries.iter_mut() {
        if entry.usage_only {
            // The usage of an entry an earlier slice gave: never one more entry.
            let position =
                crate::branch::history::indexed_position(io, identity, &entry.message_id).await?;
            if let Some(position) = &position
                && restage_usage(
                    io,
                    &mut staged,
                    identity,
                    &mut session,
                    position,
                    &entry.turn_usage,
                    prices,
                )
                .await?
            {
                usage_updated += 1;
            }
            present += 1;
            continue;
        }
        let fitted = fit(entry);
        entry.content = String::new();
        let (append, note) = match fitted {
            Ok(fitted) => fitted,
            Err(reason) => {
                let message_id = match validate::id("message_id", &entry.message_id) {
                    Ok(()) => entry.message_id.clone(),
                    Err(_) => validate::quote(&entry.message_id),
                };
                adjusted.push(AdjustedEntry {
                    message_id,
                    action: "skipped".into(),
                    reason,
                });
                continue;
            }
        };
        let position =
            crate::branch::history::indexed_position(io, identity, &entry.message_id).await?;
        let first_sight = seen.insert(entry.message_id.clone());
        if let Some(position) = &position
            && first_sight
            && restage_usage(
                io,
                &mut staged,
                identity,
                &mut session,
                position,
                &append.turn_usage,
                prices,
            )
            .await?
        {
            usage_updated += 1;
        }
        let stored = position.is_some()
            || match &loaded {
                Some(l) => in_base(io, l, &entry.message_id).await?,
                None => false,
            };
        if !first_sight || stored {
            present += 1;
            continue;
        }
        let before = session.updated_at;
        let given_tokens = append.token_count.is_some();
        let (written, _) = stage_entry(
            &mut staged,
            identity.data_id,
            &mut session,
            &mut clock,
            append,
            entry.created_at,
            Staging {
                status: None,
                prices,
            },
        )?;
        // Logs report no size per entry: the session counts the compaction's estimate
        // of each entry that came without one (see `import_session`).
        if !given_tokens && imported.exported.is_none() {
            let tokens = crate::compaction::entry_tokens(&written);
            session.total_tokens = validate::add(session.total_tokens, tokens);
            estimated = true;
        }
        positions.insert(written.message_id.clone(), (written.created_at, written.id));
        indexed.push(written);
        if let Some(reason) = note {
            adjusted.push(AdjustedEntry {
                message_id: entry.message_id.clone(),
                action: "truncated".into(),
                reason,
            });
        }
        session.updated_at = before.max(clock);
        count += 1;
    }
    // A search index run, in this commit, when these entries complete one.
    crate::search::index::stage_entries(io, &mut staged, identity, &indexed).await?;
    let first_import = created || !session.metadata.contains_key("import");
    let (provider_id, sanitized) = recorded_id(&imported.provider_session_id);
    let sanitized_provider_session_id = sanitized.then(|| provider_id.clone());
    let mut metadata = import_metadata(&request);
    let estimated_before = session
        .metadata
        .get("import")
        .and_then(|m| m.get("tokens"))
        .is_some();
    if estimated || estimated_before {
        metadata["tokens"] = Value::String("estimated".into());
    }
    let unchanged = session.metadata.get("import") == Some(&metadata)
        && imported.title.as_ref().is_none_or(|t| {
            session.metadata.get("title").and_then(Value::as_str) == Some(t.as_str())
        });
    let mut active_from = loaded.as_ref().and_then(|l| l.active_from);
    let mut restored = false;
    if let Some(export) = &imported.exported
        && super::restore::owns(&session, created, &provider_id)
    {
        let from = super::restore::compactions(
            io,
            export,
            identity,
            loaded.as_ref(),
            &mut session,
            &positions,
            &mut staged,
        )
        .await?;
        restored = from.is_some();
        active_from = from.or(active_from);
        session.updated_at = session.updated_at.max(export.session.updated_at);
    }
    if count == 0 && usage_updated == 0 && !first_import && unchanged && !restored {
        return Ok(ImportOutcome {
            created,
            imported: 0,
            already_present: present,
            usage_updated,
            adjusted,
            sanitized_provider_session_id,
            session,
        });
    }
    if let Some(title) = &imported.title {
        session
            .metadata
            .insert("title".into(), Value::String(title.clone()));
    }
    if session.model.is_none() {
        session.model.clone_from(&imported.model);
    }
    // The session the log first goes into takes the log's times, also when it was made
    // just before (a rewind's branch is created at the host's clock, then imported).
    if first_import && imported.exported.is_none() {
        if start > 0 {
            session.created_at = session.created_at.min(start);
        }
        session.updated_at = clock.max(session.created_at);
    }
    // A log is the record of a run that happened: the session it first goes into is
    // `done`, ended at its newest entry, and stays so (ending later) as the log grows. A
    // Spool export keeps the status it was exported with.
    if imported.exported.is_none() && (first_import || session.status == SessionStatus::Done) {
        session.status = SessionStatus::Done;
        session.ended_at = Some(session.updated_at);
        session.runtime_ms = Some(session.updated_at.saturating_sub(session.created_at));
    }
    session.metadata.insert("import".into(), metadata);
    validate::session_map("metadata", &session.metadata)?;
    let mut batch = Batch::default();
    // Only the log's own session can be resumed by its id: not a rewind's branch, not a
    // sub-agent's session, nor a Spool export (its bindings came with its configuration).
    if imported.fork_of.is_none()
        && imported.spawned_by.is_none()
        && !sanitized
        && request.format != ImportFormat::Spool
    {
        session.model_config.insert(
            crate::provider_thread::binding_key(agent),
            Value::String(imported.provider_session_id.clone()),
        );
        validate::session_map("model_config", &session.model_config)?;
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
        crate::resume::stage_run(io, &mut batch, &run).await?;
    }
    match &loaded {
        Some(old) => {
            let tail = Tail {
                newest_entry_at: Some(clock),
                active_from,
                ..Tail::of(old)
            };
            crate::session::write_record(&mut batch, old, &session, tail)?;
        }
        None => {
            let mut lineage = BranchLineage::default();
            // A Spool export's parent, when this database holds it.
            let exported_parent = match imported.exported.as_ref() {
                Some(e) if request.parent_key.is_none() => match &e.lineage.parent_session_key {
                    Some(p) if *p != request.key && load(io, p).await?.is_some() => Some(p.clone()),
                    _ => None,
                },
                _ => None,
            };
            if let Some(parent_key) = request.parent_key.as_ref().or(exported_parent.as_ref()) {
                let parent = crate::session::require(io, parent_key).await?;
                lineage.parent_session_key = Some(parent_key.clone());
                lineage.spawn_depth = parent.lineage.spawn_depth.saturating_add(1);
                // The parent must still be there when the link commits.
                batch.require_equals(keys::session(parent_key), parent.bytes.clone());
                batch.put(keys::child(parent_key, &session.key), Vec::new());
            }
            let tail = Tail {
                lineage: &lineage,
                active_from,
                ..Tail::fresh(data_id.as_deref(), clock)
            };
            let record_key = keys::session(&session.key);
            let bytes = Stored::encode(&session, tail)?;
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
        usage_updated,
        adjusted,
        sanitized_provider_session_id,
        session,
    })
}

/// The `import` metadata a session records: the log's format, the provider session as
/// recorded, where it forks or who spawned it, and the log's cwd, version and branch.
fn import_metadata(request: &ImportRequest) -> Value {
    let imported = &request.session;
    let fork_of = imported.fork_of.clone().map(|mut fork| {
        fork.provider_session_id = recorded_id(&fork.provider_session_id).0;
        fork
    });
    let spawned_by = imported.spawned_by.clone().map(|mut spawn| {
        spawn.provider_session_id = recorded_id(&spawn.provider_session_id).0;
        spawn
    });
    let mut record = json!({
        "format": request.format,
        "provider_session_id": recorded_id(&imported.provider_session_id).0,
        "fork_of": fork_of,
        "spawned_by": spawned_by,
        "cwd": imported.cwd,
        "version": imported.version,
        "git_branch": imported.git_branch,
    });
    if let Some(export) = &imported.exported {
        super::restore::note(&mut record, export);
    }
    record
}

/// Rewrites the stored entry at `position` of the session's own identity (active or
/// archived) with `usage` when it differs, moving the session's token
/// counters by the difference (saturating, never below 0). Whether it did.
async fn restage_usage(
    io: &Io,
    staged: &mut Batch,
    identity: Identity<'_>,
    session: &mut Session,
    position: &[u8],
    usage: &Option<TurnUsage>,
    prices: Option<&crate::usage::PriceTable>,
) -> Result<bool, Error> {
    let data_id = identity.data_id;
    let mut found = None;
    for key in [
        keys::entry_at(data_id, position),
        keys::archived(data_id, position),
    ] {
        if let Some(bytes) = io.get(key.clone()).await? {
            found = Some((key, bytes));
            break;
        }
    }
    let Some((key, bytes)) = found else {
        return Ok(false);
    };
    let archived = !key.starts_with(&keys::entries(data_id));
    let mut entry = decode_entry(&key, &bytes, Some(identity.session_id))?;
    if entry.turn_usage == *usage {
        return Ok(false);
    }
    let figures = |u: Option<&TurnUsage>| {
        u.map_or([0; 4], |u| {
            [
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_write_tokens,
            ]
        })
    };
    let old = figures(entry.turn_usage.as_ref());
    let new = figures(usage.as_ref());
    let counters = [
        &mut session.input_tokens,
        &mut session.output_tokens,
        &mut session.cache_read,
        &mut session.cache_write,
    ];
    for (total, (old, new)) in counters.into_iter().zip(old.into_iter().zip(new)) {
        *total = validate::add(total.saturating_sub(old), new);
    }
    if let Some(prices) = prices {
        if let Some(old) = &entry.turn_usage {
            crate::usage::refund(session, old, prices);
        }
        if let Some(new) = usage {
            crate::usage::charge(session, new, prices);
        }
    }
    entry.turn_usage.clone_from(usage);
    staged.require_equals(key.clone(), bytes);
    let bytes = if archived {
        record::encode(&entry)?
    } else {
        encode_entry(&entry, Some(identity.session_id))?
    };
    staged.put(key, bytes);
    Ok(true)
}
