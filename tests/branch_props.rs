//! Model-based test of branching: random interleavings of appends, compactions (built-in
//! summarizer), external compactions, truncations, resets, deletes, prunes and branches
//! (whole history, before a message, empty) across parents, children and grandchildren.
//! The reference model copies history at every fork; the core shares it. Every session
//! must read exactly what the model says (pages in both directions with cursors, counts,
//! canonical transcript, lookups by message id, summaries) after every step: no write to
//! one session ever shows in another.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;

use proptest::prelude::*;
use spool::compaction::{self, CompactRequest, CompactionConfig, PersistRequest};
use spool::{
    AppendRequest, BranchRequest, Intent, MemoryStorage, Order, PageRequest, Role, Storage, run,
};

const WS: &str = "fork";
const KEYS: u8 = 5;

#[derive(Debug, Clone)]
enum Fork {
    Empty,
    Whole,
    /// Before the n-th (modulo) entry of the parent's canonical transcript.
    Before(usize),
    /// Before a message id the parent does not have.
    Unknown,
    /// Whole, with a token budget.
    Budget(u64),
}

#[derive(Debug, Clone)]
enum Action {
    Create {
        key: u8,
    },
    Append {
        key: u8,
        content: u8,
        clock_step: i8,
    },
    Compact {
        key: u8,
        window: u64,
        two_phase: bool,
    },
    SaveState {
        key: u8,
    },
    Cap {
        max: u8,
    },
    Persist {
        key: u8,
        kept: u8,
    },
    Truncate {
        key: u8,
        max: u64,
    },
    Reset {
        key: u8,
    },
    Delete {
        key: u8,
    },
    Prune {
        max_age: u8,
    },
    Branch {
        parent: u8,
        child: u8,
        fork: Fork,
    },
    Read {
        key: u8,
        limit: u32,
    },
}

fn fork() -> impl Strategy<Value = Fork> {
    prop_oneof![
        1 => Just(Fork::Empty),
        4 => Just(Fork::Whole),
        3 => any::<usize>().prop_map(Fork::Before),
        1 => Just(Fork::Unknown),
        1 => (0u64..120).prop_map(Fork::Budget),
    ]
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        2 => (0..KEYS).prop_map(|key| Action::Create { key }),
        10 => (0..KEYS, any::<u8>(), -3i8..4)
            .prop_map(|(key, content, clock_step)| Action::Append { key, content, clock_step }),
        3 => (0..KEYS, 10u64..120, any::<bool>())
            .prop_map(|(key, window, two_phase)| Action::Compact { key, window, two_phase }),
        1 => (0..KEYS).prop_map(|key| Action::SaveState { key }),
        1 => (1u8..5).prop_map(|max| Action::Cap { max }),
        1 => (0..KEYS, 0u8..3).prop_map(|(key, kept)| Action::Persist { key, kept }),
        2 => (0..KEYS, 0u64..6).prop_map(|(key, max)| Action::Truncate { key, max }),
        1 => (0..KEYS).prop_map(|key| Action::Reset { key }),
        1 => (0..KEYS).prop_map(|key| Action::Delete { key }),
        1 => (0u8..30).prop_map(|max_age| Action::Prune { max_age }),
        6 => (0..KEYS, 0..KEYS, fork())
            .prop_map(|(parent, child, fork)| Action::Branch { parent, child, fork }),
        2 => (0..KEYS, 1u32..5).prop_map(|(key, limit)| Action::Read { key, limit }),
    ]
}

/// An entry as the model knows it: (created_at, id, content, message id). Tuple order
/// is transcript order.
type Row = (u64, u64, String, String);

/// What a session must read back, kept by copying.
#[derive(Debug, Clone, Default)]
struct Model {
    /// The active transcript, sorted.
    active: Vec<Row>,
    /// Entries moved out by compactions, sorted.
    archive: Vec<Row>,
    last_id: u64,
    summaries: usize,
    /// Context states, valid or not.
    states: usize,
    updated_at: u64,
    parent: Option<u8>,
    depth: u64,
    forked: bool,
}

impl Model {
    fn canonical(&self) -> Vec<Row> {
        let mut all: Vec<Row> = self.archive.iter().chain(&self.active).cloned().collect();
        all.sort();
        all
    }

    /// Transcript tokens by the compaction measure: appended entries say 10 tokens (more
    /// than their short content), entries kept by `persist` say nothing.
    fn tokens(&self) -> u64 {
        self.active
            .iter()
            .map(|r| {
                let estimate = (r.2.len() as u64).div_ceil(4);
                if r.2.starts_with("kept") {
                    estimate
                } else {
                    estimate.max(10)
                }
            })
            .sum()
    }
}

fn name(key: u8) -> String {
    format!("agent:a{key}:main")
}

/// The tokens of a row: appended entries report 10, persisted `kept i` ones report none.
fn tokens(row: &Row) -> u64 {
    if row.2.starts_with("kept ") {
        (row.2.chars().count() as u64).div_ceil(4)
    } else {
        10
    }
}

fn row(e: &spool::Entry) -> Row {
    (e.created_at, e.id, e.content.clone(), e.message_id.clone())
}

fn read_all(storage: &MemoryStorage, key: u8, order: Order, limit: u32) -> Vec<Row> {
    read_pages(storage, key, order, limit, spool::read_page)
}

fn read_pages(
    storage: &MemoryStorage,
    key: u8,
    order: Order,
    limit: u32,
    read: fn(&str, &str, PageRequest) -> spool::Operation<spool::Page>,
) -> Vec<Row> {
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = run(
            storage,
            read(
                WS,
                &name(key),
                PageRequest {
                    order,
                    cursor,
                    limit,
                },
            ),
        )
        .expect("page");
        assert!(page.entries.len() <= limit as usize);
        seen.extend(page.entries.iter().map(row));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return seen,
        }
    }
}

fn check(
    storage: &MemoryStorage,
    models: &BTreeMap<u8, Model>,
    limit: u32,
) -> Result<(), TestCaseError> {
    for key in 0..KEYS {
        let got = run(storage, spool::get_session(WS, &name(key))).expect("get");
        let Some(m) = models.get(&key) else {
            prop_assert!(got.is_none(), "{} should not exist", name(key));
            continue;
        };
        let session = got.expect("the model has it");
        prop_assert_eq!(
            session.entry_count,
            m.active.len() as u64,
            "count of {}",
            name(key)
        );
        prop_assert_eq!(
            session.updated_at,
            m.updated_at,
            "updated_at of {}",
            name(key)
        );
        let count = run(storage, spool::count_entries(WS, &name(key))).expect("count");
        prop_assert_eq!(count, m.active.len() as u64);
        let oldest = read_all(storage, key, Order::OldestFirst, limit);
        prop_assert_eq!(&oldest, &m.active, "oldest-first pages of {}", name(key));
        let mut newest = read_all(storage, key, Order::NewestFirst, limit);
        newest.reverse();
        prop_assert_eq!(&newest, &m.active, "newest-first pages of {}", name(key));
        let canonical: Vec<Row> = run(storage, compaction::canonical_transcript(WS, &name(key)))
            .expect("canonical")
            .iter()
            .map(row)
            .collect();
        prop_assert_eq!(
            &canonical,
            &m.canonical(),
            "canonical transcript of {}",
            name(key)
        );
        let paged = read_pages(
            storage,
            key,
            Order::OldestFirst,
            limit,
            spool::read_canonical_page,
        );
        prop_assert_eq!(&paged, &canonical, "canonical pages of {}", name(key));
        let mut paged = read_pages(
            storage,
            key,
            Order::NewestFirst,
            limit,
            spool::read_canonical_page,
        );
        paged.reverse();
        prop_assert_eq!(
            &paged,
            &canonical,
            "newest-first canonical pages of {}",
            name(key)
        );
        for r in m.canonical() {
            let found = run(storage, spool::get_entry(WS, &name(key), &r.3)).expect("lookup");
            prop_assert_eq!(
                found.as_ref().map(row),
                Some(r.clone()),
                "lookup in {}",
                name(key)
            );
        }
        let summaries =
            run(storage, compaction::list_summaries(WS, &name(key))).expect("summaries");
        prop_assert_eq!(summaries.len(), m.summaries, "summaries of {}", name(key));
        prop_assert!(
            summaries
                .iter()
                .all(|s| s.session_key == name(key) && s.session_id == session.session_id)
        );
        let states = run(storage, spool::list_states(WS, &name(key), false)).expect("states");
        prop_assert_eq!(states.len(), m.states, "context states of {}", name(key));
        prop_assert!(states.iter().all(|s| s.session_key == name(key)));
        let lineage = run(storage, spool::lineage(WS, &name(key))).expect("lineage");
        prop_assert_eq!(lineage.node.lineage.parent_session_key, m.parent.map(name));
        prop_assert_eq!(lineage.node.lineage.spawn_depth, m.depth);
        prop_assert_eq!(lineage.node.lineage.forked_from_parent, m.forked);
    }
    no_orphans(storage)
}

/// The identities named by every record with `tag`: the first component of its key.
fn identities(storage: &MemoryStorage, tag: u8) -> std::collections::BTreeSet<String> {
    storage
        .range(
            WS,
            &spool::RangeQuery {
                range: spool::KeyRange::prefix(&[tag]),
                limit: 0,
                reverse: false,
            },
        )
        .expect("range")
        .iter()
        .map(|kv| spool::keys::read_str(&kv.key, 1).expect("identity").0)
        .collect()
}

/// Deleting and resetting keep history only while someone reads it, and never drop
/// what is read: every identity's entries belong to a live session or to a retired
/// identity with readers; every reader and every retired identity's reader exist.
fn no_orphans(storage: &MemoryStorage) -> Result<(), TestCaseError> {
    use spool::keys;
    let live: std::collections::BTreeSet<String> = (0..KEYS)
        .filter_map(|k| run(storage, spool::session_data_id(WS, &name(k))).expect("get"))
        .collect();
    let retired = identities(storage, keys::RETIRED);
    let read = identities(storage, keys::HOLDER);
    for tag in keys::SHARED_TAGS {
        for id in identities(storage, tag) {
            prop_assert!(
                live.contains(&id) || retired.contains(&id),
                "{} records of `{}`, which nobody owns",
                tag as char,
                id
            );
        }
    }
    for id in &retired {
        prop_assert!(!live.contains(id), "`{}` is live and retired", id);
        prop_assert!(read.contains(id), "retired `{}` has no reader left", id);
    }
    for tag in [keys::SUMMARY, keys::BOUNDARY, keys::TURN] {
        for id in identities(storage, tag) {
            prop_assert!(
                live.contains(&id),
                "{} records of gone `{}`",
                tag as char,
                id
            );
        }
    }
    let holders = storage
        .range(
            WS,
            &spool::RangeQuery {
                range: spool::KeyRange::prefix(&[keys::HOLDER]),
                limit: 0,
                reverse: false,
            },
        )
        .expect("range");
    for kv in holders {
        let (data_id, next) = keys::read_str(&kv.key, 1).expect("data id");
        let (holder, _) = keys::read_str(&kv.key, next).expect("holder");
        prop_assert!(
            run(storage, spool::get_session(WS, &holder))
                .expect("get")
                .is_some(),
            "`{}` is read by `{}`, which is gone",
            data_id,
            holder
        );
        prop_assert!(live.contains(&data_id) || retired.contains(&data_id));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn test_branches_read_exactly_what_a_copying_model_reads(
        actions in proptest::collection::vec(action(), 1..70),
        limit in 1u32..5,
    ) {
        let storage = MemoryStorage::new();
        let mut models: BTreeMap<u8, Model> = BTreeMap::new();
        let mut clock: u64 = 1_000;
        let mut ids = 0u32;
        for action in actions {
            ids += 1;
            let fresh = format!("id{ids}");
            clock += 1;
            match action {
                Action::Create { key } => {
                    let result = run(&storage, spool::create_session(WS, &name(key), &fresh, clock));
                    if let std::collections::btree_map::Entry::Vacant(slot) = models.entry(key) {
                        prop_assert!(result.is_ok());
                        slot.insert(Model { updated_at: clock, ..Model::default() });
                    } else {
                        prop_assert_eq!(result.expect_err("duplicate").code(), "conflict");
                    }
                }
                Action::Append { key, content, clock_step } => {
                    // Clocks may step back: positions then interleave with older ones.
                    let at = clock.saturating_add_signed(clock_step.into()) - 1;
                    let mut request = AppendRequest::new(Role::User, format!("c{content}"));
                    request.token_count = Some(10);
                    let result = run(&storage, spool::append_entry(WS, &name(key), request, at));
                    match models.get_mut(&key) {
                        Some(m) => {
                            let entry = result.expect("append");
                            m.last_id += 1;
                            prop_assert_eq!(entry.id, m.last_id);
                            m.active.push(row(&entry));
                            m.active.sort();
                            m.updated_at = at;
                        }
                        None => prop_assert_eq!(result.expect_err("missing").code(), "not_found"),
                    }
                }
                Action::Compact { key, window, two_phase } => {
                    let request = CompactRequest {
                        context_window_tokens: window,
                        config: CompactionConfig::default(),
                        compaction_id: None,
                        trigger_reason: None,
                        flush_receipt_status: None,
                    };
                    let result = if two_phase {
                        // An "LLM" that repeats the rendered input summarizes perfectly.
                        run(&storage, compaction::prepare_compaction(WS, &name(key), request.clone()))
                            .and_then(|prepared| {
                                let commit = compaction::CommitRequest {
                                    request,
                                    preimage: prepared.preimage,
                                    summary_text: format!("summary of: {}", prepared.input),
                                    summary_payload: None,
                                };
                                run(&storage, compaction::commit_compaction(WS, &name(key), commit, clock))
                            })
                    } else {
                        run(&storage, compaction::compact(WS, &name(key), request, clock))
                    };
                    match models.get_mut(&key) {
                        Some(m) => {
                            let result = result.expect("compact");
                            let removed = result.removed_count as usize;
                            if result.skip_reason.is_none() {
                                let moved: Vec<Row> = m.active.drain(..removed).collect();
                                m.archive.extend(moved);
                                m.archive.sort();
                                m.summaries += 1;
                                m.states += 1;
                                m.updated_at = clock;
                            }
                            let kept: Vec<Row> = result.kept_entries.iter().map(row).collect();
                            // A skip writes nothing and hands nothing back, whatever the
                            // transcript's size (the reads below check it is unchanged).
                            let expected: &[Row] =
                                if result.skip_reason.is_some() { &[] } else { &m.active };
                            prop_assert_eq!(&kept, expected, "kept entries of {}", name(key));
                        }
                        None => prop_assert_eq!(result.expect_err("missing").code(), "not_found"),
                    }
                }
                Action::Persist { key, kept } => {
                    let persist = PersistRequest {
                        summary_text: "agent summary".into(),
                        kept_entries: (0..kept)
                            .map(|i| AppendRequest::new(Role::Assistant, format!("kept {i}")))
                            .collect(),
                        compaction_id: None,
                        trigger_reason: None,
                    };
                    let result = run(
                        &storage,
                        compaction::persist_compaction_result(WS, &name(key), persist, clock),
                    );
                    match models.get_mut(&key) {
                        // Kept entries (2 tokens each) and summary (4) must take fewer
                        // tokens than the active transcript, or nothing is written.
                        Some(m) if 2 * u64::from(kept) + 4 >= m.active.iter().map(tokens).sum::<u64>() => {
                            let result = result.expect("persist");
                            prop_assert_eq!(result.skip_reason.as_deref(), Some("context_not_reduced"));
                        }
                        Some(m) => {
                            let result = result.expect("persist");
                            let split = m.active.len().saturating_sub(kept as usize);
                            let moved: Vec<Row> = m.active.drain(..split).collect();
                            m.archive.extend(moved);
                            m.archive.sort();
                            m.active = result.kept_entries.iter().map(row).collect();
                            prop_assert_eq!(m.active.len(), kept as usize);
                            for r in &m.active {
                                prop_assert!(r.1 > m.last_id);
                            }
                            m.last_id += u64::from(kept);
                            m.summaries += 1;
                            m.states += 1;
                            m.updated_at = clock;
                        }
                        None => prop_assert_eq!(result.expect_err("missing").code(), "not_found"),
                    }
                }
                Action::Truncate { key, max } => {
                    let result = run(&storage, spool::truncate(WS, &name(key), max, None, clock));
                    match models.get_mut(&key) {
                        Some(m) => {
                            let outcome = result.expect("truncate");
                            let before = m.active.len() as u64;
                            prop_assert_eq!(outcome.before_count, before);
                            if before > max {
                                m.active.drain(..(before - max) as usize);
                                m.updated_at = clock;
                            }
                            prop_assert_eq!(outcome.after_count, m.active.len() as u64);
                        }
                        None => prop_assert_eq!(result.expect_err("missing").code(), "not_found"),
                    }
                }
                Action::Reset { key } => {
                    let outcome = run(
                        &storage,
                        spool::apply_intent(WS, &name(key), Intent::ResetSameKey, &fresh, clock),
                    )
                    .expect("reset");
                    let m = models.entry(key).or_default();
                    // Context states are kept (invalidated) across a reset.
                    *m = Model {
                        updated_at: clock,
                        parent: m.parent,
                        depth: m.depth,
                        states: m.states,
                        ..Model::default()
                    };
                    prop_assert_eq!(outcome.session.entry_count, 0);
                }
                Action::Delete { key } => {
                    let result = run(&storage, spool::delete_session(WS, &name(key), None));
                    match models.remove(&key) {
                        Some(_) => prop_assert!(result.is_ok()),
                        None => prop_assert_eq!(result.expect_err("missing").code(), "not_found"),
                    }
                }
                Action::SaveState { key } => {
                    let state = spool::NewContextState {
                        provider: "portable".into(),
                        model: None,
                        state_kind: "note".into(),
                        payload: serde_json::json!({ "at": clock }),
                        covered_through_id: 0,
                        expires_at: None,
                        portable: true,
                        cacheable: false,
                    };
                    let result = run(&storage, spool::save_state(WS, &name(key), state, None, clock));
                    match models.get_mut(&key) {
                        Some(m) => {
                            result.expect("save state");
                            m.states += 1;
                            m.updated_at = clock;
                        }
                        None => prop_assert_eq!(result.expect_err("missing").code(), "not_found"),
                    }
                }
                Action::Cap { max } => {
                    let deleted = run(&storage, spool::cap_sessions(WS, max.into())).expect("cap");
                    // The most recently updated stay (ties: the recency index's key order).
                    let mut order: Vec<(u64, String, u8)> = models
                        .iter()
                        .map(|(k, m)| (m.updated_at, name(*k), *k))
                        .collect();
                    order.sort();
                    let doomed: Vec<u8> = order
                        .iter()
                        .rev()
                        .skip(max.into())
                        .map(|(_, _, k)| *k)
                        .collect();
                    prop_assert_eq!(deleted, doomed.len() as u64);
                    for k in doomed {
                        models.remove(&k);
                    }
                }
                Action::Prune { max_age } => {
                    let pruned = run(&storage, spool::prune_stale(WS, max_age.into(), clock)).expect("prune");
                    let cutoff = clock.saturating_sub(max_age.into());
                    let doomed: Vec<u8> = models
                        .iter()
                        .filter(|(_, m)| m.updated_at < cutoff)
                        .map(|(k, _)| *k)
                        .collect();
                    prop_assert_eq!(pruned, doomed.len() as u64);
                    for k in doomed {
                        models.remove(&k);
                    }
                }
                Action::Branch { parent, child, fork } => {
                    let mut request = BranchRequest::empty(fresh.clone());
                    let parent_model = models.get(&parent).cloned();
                    let mut expect_missing_message = false;
                    match fork {
                        Fork::Empty => {}
                        Fork::Whole => request.fork_transcript = true,
                        Fork::Budget(max) => {
                            request.fork_transcript = true;
                            request.max_fork_tokens = Some(max);
                        }
                        Fork::Unknown => {
                            request.fork_transcript = true;
                            request.fork_before_message_id = Some("no-such-message".into());
                            expect_missing_message = true;
                        }
                        Fork::Before(n) => {
                            request.fork_transcript = true;
                            let canonical = parent_model.as_ref().map(Model::canonical).unwrap_or_default();
                            match canonical.get(n % canonical.len().max(1)) {
                                Some(r) => request.fork_before_message_id = Some(r.3.clone()),
                                None => {
                                    request.fork_before_message_id = Some("no-such-message".into());
                                    expect_missing_message = true;
                                }
                            }
                        }
                    }
                    let result = run(
                        &storage,
                        spool::branch(WS, &name(parent), &name(child), request.clone(), clock),
                    );
                    let Some(p) = parent_model else {
                        prop_assert_eq!(result.expect_err("no parent").code(), "not_found");
                        continue;
                    };
                    if models.contains_key(&child) {
                        prop_assert_eq!(result.expect_err("child exists").code(), "conflict");
                        continue;
                    }
                    if expect_missing_message {
                        let err = result.expect_err("unknown message");
                        prop_assert_eq!(err.code(), "not_found");
                        prop_assert!(err.to_string().contains("Transcript message not found"));
                        continue;
                    }
                    let branch = result.expect("branch");
                    let mut m = Model {
                        updated_at: clock,
                        parent: Some(parent),
                        depth: p.depth + 1,
                        ..Model::default()
                    };
                    match (&fork, &request.fork_before_message_id) {
                        (Fork::Empty, _) => {}
                        (_, Some(message_id)) => {
                            let canonical = p.canonical();
                            let at = canonical.iter().position(|r| r.3 == *message_id).expect("chosen from it");
                            m.active = canonical[..at].to_vec();
                            m.last_id = p.last_id;
                            m.forked = true;
                        }
                        (_, None) => {
                            let within = request
                                .max_fork_tokens
                                .is_none_or(|max| p.tokens() <= max);
                            if within {
                                m.active = p.active.clone();
                                m.archive = p.archive.clone();
                                m.summaries = p.summaries;
                                m.states = p.states;
                                m.last_id = p.last_id;
                                m.forked = true;
                            }
                        }
                    }
                    // The model does not know the summaries' text: a parent with summaries
                    // whose transcript fits may go either way, then the core is held to it.
                    if matches!(fork, Fork::Budget(_)) && m.forked && p.summaries > 0 && !branch.lineage.forked_from_parent {
                        m = Model { updated_at: clock, parent: Some(parent), depth: p.depth + 1, ..Model::default() };
                    }
                    prop_assert_eq!(branch.lineage.forked_from_parent, m.forked);
                    prop_assert_eq!(branch.session.entry_count, m.active.len() as u64);
                    models.insert(child, m);
                }
                Action::Read { key, limit } => {
                    if models.contains_key(&key) {
                        let page = read_all(&storage, key, Order::NewestFirst, limit);
                        prop_assert_eq!(page.len(), models[&key].active.len());
                    }
                }
            }
            check(&storage, &models, limit)?;
        }
        // Nothing outlives the sessions: delete them all and the workspace is empty.
        for key in models.keys() {
            run(&storage, spool::delete_session(WS, &name(*key), None)).expect("delete");
        }
        let everything = spool::RangeQuery { range: spool::KeyRange::prefix(b""), limit: 0, reverse: false };
        let left = storage.range(WS, &everything).expect("dump");
        prop_assert!(left.is_empty(), "left behind: {:?}", left.iter().map(|kv| spool::keys::display(&kv.key)).collect::<Vec<_>>());
    }
}
