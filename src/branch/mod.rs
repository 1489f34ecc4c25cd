//! Branching a session (a local fork) and reading lineage.
//!
//! [`branch`] creates a child session under a new key with its own identity, recording
//! its parent and depth. With `fork_transcript` the child inherits the parent's history:
//! its transcript, canonical archive, compaction summaries (copied, re-addressed to the
//! child, same compaction ids) and context states (copied, re-addressed). With
//! `fork_before_message_id` it inherits only the canonical prefix strictly before that
//! message, as its transcript, and no summaries or states.
//!
//! The transcript and archive are **not copied**: the child's record names the
//! identities it reads and the fork-time filter (see `history.rs`), so a fork writes
//! O(1) records whatever the parent's length (plus one per summary and context state).
//! A fork before a message, and any fork with a token budget, reads the inherited
//! entries once to count them; it still writes O(1).

pub(crate) mod history;

use crate::branch::history::{Layer, View, locate, tally};
use crate::compaction::{Summary, boundaries_of, estimate, repair_key, summaries_of, summary_key};
use crate::engine::error::Error;
use crate::engine::op::{Io, OpResult, Operation};
use crate::engine::validate;
use crate::session::Loaded;
use crate::session::read_all;
use crate::session::{Stored, Tail, load, require, write_record};
use crate::storage::keys;
use crate::storage::record;
use crate::storage::{Batch, KeyRange};
use crate::transcript::{check_appends, entry_clock, newest_position, stage_appends};
use crate::types::{
    BranchInfo, BranchLineage, BranchRequest, ContextState, ForkPoint, LineageView, Session,
};

/// Creates the session `child_key` as a branch of `parent_key` (see the module docs).
///
/// Errors: a missing parent is `not_found`; an existing child key is `conflict`; an
/// unknown `fork_before_message_id` is `not_found` ("Transcript message not found") and
/// creates nothing. When `max_fork_tokens` is given and the inherited transcript tokens
/// plus summary tokens exceed it, the child is created without history
/// (`forked_from_parent` false).
pub fn branch(
    workspace: &str,
    parent_key: &str,
    child_key: &str,
    request: BranchRequest,
    now_ms: u64,
) -> Operation<BranchInfo> {
    check!(workspace, validate::now_ms(now_ms));
    check!(workspace, check(workspace, parent_key, child_key, &request));
    let (parent_key, child_key) = (parent_key.to_owned(), child_key.to_owned());
    Operation::new(workspace, move |io| {
        let (parent_key, child_key, request) =
            (parent_key.clone(), child_key.clone(), request.clone());
        async move { branch_body(&io, &parent_key, &child_key, &request, now_ms).await }
    })
}

/// The arguments of a branch, checked before anything is read.
fn check(
    workspace: &str,
    parent_key: &str,
    child_key: &str,
    request: &BranchRequest,
) -> Result<(), Error> {
    validate::workspace(workspace)
        .and_then(|()| validate::session_key(parent_key))
        .and_then(|()| validate::new_session_key(child_key))
        .and_then(|()| validate::session_id(&request.child_session_id))
        .and_then(|()| {
            request
                .fork_before_message_id
                .as_deref()
                .map_or(Ok(()), |id| validate::id("fork_before_message_id", id))
        })
        .and_then(|()| {
            request
                .max_fork_tokens
                .map_or(Ok(()), |max| validate::count("max_fork_tokens", max))
        })
}

/// What a child inherits.
struct Inherited {
    base: Vec<Layer>,
    entry_count: u64,
    tokens: u64,
    summaries: Vec<Summary>,
    states: Vec<ContextState>,
    point: ForkPoint,
    /// The entry clock of the inherited view: the child's own entries sort after it.
    newest_entry_at: u64,
}

async fn branch_body(
    io: &Io,
    parent_key: &str,
    child_key: &str,
    request: &BranchRequest,
    now_ms: u64,
) -> OpResult<BranchInfo> {
    let (mut batch, child) = stage_branch(io, parent_key, child_key, request, now_ms).await?;
    put_child(&mut batch, &child, child.newest_entry_at.unwrap_or(0))?;
    io.commit(batch).await?;
    Ok(BranchInfo {
        session: child.session,
        lineage: child.lineage,
    })
}

/// Stages the branch `child_key` of `parent_key` in a batch: everything but the child's
/// own record, which [`put_child`] writes once the caller has added to it; returns the
/// batch and the child as it would be loaded.
async fn stage_branch(
    io: &Io,
    parent_key: &str,
    child_key: &str,
    request: &BranchRequest,
    now_ms: u64,
) -> OpResult<(Batch, Loaded)> {
    let parent = require(io, parent_key).await?;
    if load(io, child_key).await?.is_some() {
        return Err(Error::Conflict {
            reason: format!("a session with key `{child_key}` already exists"),
        }
        .into());
    }
    let p = &parent.session;
    let child_sid = &request.child_session_id;
    if *child_sid == p.session_id
        || parent
            .base
            .iter()
            .any(|l| l.identity().session_id == child_sid)
    {
        return Err(Error::invalid(
            "child_session_id",
            "a branch needs a session id of its own (this one is its parent's history)",
        )
        .into());
    }
    let fork = request.fork_transcript || request.fork_before_message_id.is_some();
    let inherited = if !fork {
        None
    } else if let Some(message_id) = &request.fork_before_message_id {
        Some(before_message(io, &parent, message_id).await?)
    } else {
        Some(whole(io, &parent, request.max_fork_tokens.is_some()).await?)
    };
    let inherited = inherited.filter(|i| request.max_fork_tokens.is_none_or(|max| i.tokens <= max));

    let mut child = Session::new(child_key, child_sid, now_ms);
    let mut lineage = BranchLineage {
        parent_session_key: Some(parent_key.to_owned()),
        spawn_depth: parent.lineage.spawn_depth + 1,
        ..BranchLineage::default()
    };
    let mut batch = Batch::default();
    let data_id = crate::session::mint(io, &mut batch, child_sid).await?;
    let child_data = data_id.as_deref().unwrap_or(child_sid);
    // The parent's record changes (`fork_count`) so that a write that releases the
    // parent's readers and this fork cannot interleave unseen.
    let mut parent_lineage = parent.lineage.clone();
    parent_lineage.fork_count += 1;
    let tail = Tail {
        lineage: &parent_lineage,
        ..Tail::of(&parent)
    };
    write_record(&mut batch, &parent, p, tail)?;

    let mut base = Vec::new();
    let mut clock = 0;
    let mut active_from = None;
    if let Some(inherited) = inherited {
        // A full fork reads the parent's view as it is, compactions included; a fork
        // before a message reads its canonical prefix as its transcript.
        if request.fork_before_message_id.is_none() {
            active_from = parent.active_from;
            for (index, bytes) in boundaries_of(io, parent.data_id()).await? {
                batch.put(keys::boundary(child_data, index), bytes);
            }
        }
        clock = inherited.newest_entry_at;
        child.entry_count = inherited.entry_count;
        child.last_entry_id = p.last_entry_id;
        if request.fork_before_message_id.is_none() {
            child.compaction_count = p.compaction_count;
            child.last_state_id = p.last_state_id;
        }
        for mut summary in inherited.summaries {
            summary.session_id = child_sid.clone();
            summary.session_key = child_key.to_owned();
            let bytes = record::encode(&summary)?;
            if summary.degraded() {
                batch.put(
                    repair_key(child_key, summary.compaction_index),
                    bytes.clone(),
                );
            }
            batch.put(summary_key(child_data, summary.compaction_index), bytes);
        }
        for mut state in inherited.states {
            state.session_id = child_sid.clone();
            state.session_key = child_key.to_owned();
            batch.put(keys::state(child_key, state.id), record::encode(&state)?);
        }
        for layer in &inherited.base {
            batch.put(keys::holder(&layer.data_id, child_key), Vec::new());
        }
        base = inherited.base;
        lineage.forked_from_parent = true;
        lineage.fork_point = Some(inherited.point);
    }
    batch.put(keys::child(parent_key, child_key), Vec::new());
    let child = Loaded {
        session: child,
        data_id,
        lineage,
        base,
        newest_entry_at: Some(clock),
        active_from,
        bytes: Vec::new(),
    };
    Ok((batch, child))
}

/// Writes the record of the new session `child` (as `session`, its entry clock
/// `newest_entry_at`), on condition that its key is still free.
fn put_child(batch: &mut Batch, child: &Loaded, newest_entry_at: u64) -> Result<(), Error> {
    let key = &child.session.key;
    let tail = Tail {
        newest_entry_at: Some(newest_entry_at),
        ..Tail::of(child)
    };
    let bytes = Stored::encode(&child.session, tail)?;
    batch.require_absent(keys::session(key));
    batch.put(keys::session(key), bytes.clone());
    batch.put(keys::recency(child.session.updated_at, key), bytes);
    Ok(())
}

/// Edits a message by branching: creates `child_key` as a branch of `key` holding the
/// canonical prefix strictly before `message_id` (as [`branch`] with
/// `fork_before_message_id`), and appends `request` (the edited message) to it, in one
/// commit: the branch exists with the edit, or nothing was written. The session under
/// `key` keeps its transcript.
///
/// Errors: those of [`branch`] and of [`crate::append_entry`] on the new branch; a
/// `request.expected_epoch` fences the branch, which starts at epoch 0.
pub fn edit_message(
    workspace: &str,
    key: &str,
    child_key: &str,
    message_id: &str,
    request: crate::AppendRequest,
    child_session_id: &str,
    now_ms: u64,
) -> Operation<BranchInfo> {
    let branch_request = BranchRequest {
        fork_before_message_id: Some(message_id.to_owned()),
        ..BranchRequest::empty(child_session_id)
    };
    check!(
        workspace,
        validate::now_ms(now_ms)
            .and_then(|()| check(workspace, key, child_key, &branch_request))
            .and_then(|()| check_appends("request", std::slice::from_ref(&request)))
    );
    let (key, child_key) = (key.to_owned(), child_key.to_owned());
    Operation::new(workspace, move |io| {
        let (key, child_key) = (key.clone(), child_key.clone());
        let (branch_request, request) = (branch_request.clone(), request.clone());
        async move {
            let (mut batch, child) =
                stage_branch(&io, &key, &child_key, &branch_request, now_ms).await?;
            let mut updated = child.session.clone();
            let staged =
                stage_appends(&io, &child_key, &child, &mut updated, vec![request], now_ms).await?;
            let clock = staged.put_into(&mut batch);
            let lineage = child.lineage.clone();
            let child = Loaded {
                session: updated,
                ..child
            };
            put_child(&mut batch, &child, clock)?;
            io.commit(batch).await?;
            Ok(BranchInfo {
                session: child.session,
                lineage,
            })
        }
    })
}

/// A full fork: the parent's layers and its own identity as one more, its summaries and
/// context states. Reads the transcript only to measure it (`measure`).
async fn whole(io: &Io, parent: &crate::session::Loaded, measure: bool) -> OpResult<Inherited> {
    let p = &parent.session;
    let summaries: Vec<Summary> = summaries_of(io, parent.data_id())
        .await?
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    let states = read_all(io, KeyRange::prefix(&keys::states(&p.key)))
        .await?
        .iter()
        .map(|kv| record::decode::<ContextState>(&kv.key, &kv.value))
        .collect::<Result<Vec<_>, _>>()?;
    let mut tokens = validate::total(summaries.iter().map(|s| estimate(&s.summary_text)));
    if measure {
        let (_, active) = tally(io, &View::of(parent), false, None).await?;
        tokens = validate::add(tokens, active);
    }
    let mut base = parent.base.clone();
    base.push(Layer {
        // Bounding the layer just above the parent's newest entry keeps what the parent
        // appends later (normally at later positions) out of the child's range reads;
        // the id filter still catches an append with an older timestamp.
        before: Some(past_newest(io, parent.data_id()).await?),
        indexed: p.message_index,
        ..Layer::of(parent.identity(), p.last_entry_id, p.compaction_count)
    });
    Ok(Inherited {
        base,
        entry_count: p.entry_count,
        tokens,
        point: ForkPoint {
            parent_session_id: p.session_id.clone(),
            parent_last_entry_id: p.last_entry_id,
            before_message_id: None,
            before_position: None,
            inherited_entries: p.entry_count,
            inherited_summaries: summaries.len() as u64,
        },
        summaries,
        states,
        newest_entry_at: entry_clock(io, parent).await?,
    })
}

/// The position just after the newest entry (active or archived) of an identity;
/// `(0, 0)` for an identity without entries.
async fn past_newest(io: &Io, data_id: &str) -> Result<(u64, u64), Error> {
    Ok(match newest_position(io, data_id).await? {
        None => (0, 0),
        Some((created_at, u64::MAX)) => (created_at.saturating_add(1), 0),
        Some((created_at, id)) => (created_at, id + 1),
    })
}

/// A fork before a message: every layer narrowed to positions below it and flattened
/// (the canonical prefix is the child's transcript); no summaries, no states.
async fn before_message(
    io: &Io,
    parent: &crate::session::Loaded,
    message_id: &str,
) -> OpResult<Inherited> {
    let p = &parent.session;
    let Some(at) = locate(io, &View::of(parent), message_id).await? else {
        return Err(Error::NotFound {
            what: "Transcript message",
            key: format!("`{message_id}` in session `{}`", p.key),
        }
        .into());
    };
    let before = (at.entry.created_at, at.entry.id);
    let (inherited, tokens) = tally(io, &View::of(parent), true, Some(&at.position)).await?;
    let mut base: Vec<Layer> = parent
        .base
        .iter()
        .map(|l| Layer {
            before: Some(l.before.map_or(before, |b| b.min(before))),
            flatten: true,
            ..l.clone()
        })
        .collect();
    base.push(Layer {
        before: Some(before),
        flatten: true,
        indexed: p.message_index,
        ..Layer::of(parent.identity(), p.last_entry_id, p.compaction_count)
    });
    Ok(Inherited {
        base,
        entry_count: inherited,
        tokens,
        summaries: Vec::new(),
        states: Vec::new(),
        point: ForkPoint {
            parent_session_id: p.session_id.clone(),
            parent_last_entry_id: p.last_entry_id,
            before_message_id: Some(message_id.to_owned()),
            before_position: Some(before),
            inherited_entries: inherited,
            inherited_summaries: 0,
        },
        // The inherited prefix lies strictly below the message's position.
        newest_entry_at: before.0,
    })
}

/// The session under `key` with its lineage and its direct branches (in key order).
pub fn lineage(workspace: &str, key: &str) -> Operation<LineageView> {
    check!(workspace, validate::keyed(workspace, key));
    let key = key.to_owned();
    Operation::new(workspace, move |io| {
        let key = key.clone();
        async move {
            let loaded = require(&io, &key).await?;
            let children = children_of(&io, &key).await?;
            Ok(LineageView {
                node: BranchInfo {
                    session: loaded.session,
                    lineage: loaded.lineage,
                },
                children,
            })
        }
    })
}

/// The sessions branched from the session under `key` (in key order); `not_found`
/// when `key` has no session.
pub fn list_children(workspace: &str, key: &str) -> Operation<Vec<BranchInfo>> {
    lineage(workspace, key).map(|view| view.children)
}

async fn children_of(io: &Io, key: &str) -> Result<Vec<BranchInfo>, Error> {
    let prefix = keys::children(key);
    let mut out = Vec::new();
    for kv in read_all(io, KeyRange::prefix(&prefix)).await? {
        let Some((child_key, _)) = keys::read_str(&kv.key, prefix.len()) else {
            return Err(Error::Corruption {
                key: keys::display(&kv.key),
                detail: "not a lineage key".into(),
            });
        };
        // A child that was reset keeps its place; one deleted took its entry with it.
        if let Some(child) = load(io, &child_key).await?
            && child.lineage.parent_session_key.as_deref() == Some(key)
        {
            out.push(BranchInfo {
                session: child.session,
                lineage: child.lineage,
            });
        }
    }
    Ok(out)
}
