//! Model-based test: random sequences of creates, appends, resets, deletes, prunes and
//! paged reads against a plain reference model of what every read must return.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;

use proptest::prelude::*;
use spool::{AppendRequest, Intent, MemoryStorage, Order, PageRequest, Role, run};

const WS: &str = "model";

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
    Reset {
        key: u8,
    },
    Delete {
        key: u8,
    },
    Prune {
        max_age: u8,
    },
    ReadAll {
        key: u8,
        limit: u32,
        newest_first: bool,
    },
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        2 => (0u8..3).prop_map(|key| Action::Create { key }),
        6 => (0u8..3, any::<u8>(), -3i8..4)
            .prop_map(|(key, content, clock_step)| Action::Append { key, content, clock_step }),
        1 => (0u8..3).prop_map(|key| Action::Reset { key }),
        1 => (0u8..3).prop_map(|key| Action::Delete { key }),
        1 => (0u8..20).prop_map(|max_age| Action::Prune { max_age }),
        3 => (0u8..3, 1u32..5, any::<bool>())
            .prop_map(|(key, limit, newest_first)| Action::ReadAll { key, limit, newest_first }),
    ]
}

/// What the reference model knows of a session.
#[derive(Debug, Clone, Default)]
struct Model {
    /// (created_at, id, content) in insertion order: transcript order whatever the clock.
    entries: Vec<(u64, u64, String)>,
    /// The newest `created_at` of the identity: a later entry's is never below it.
    newest_at: u64,
    last_id: u64,
    epoch: u64,
    updated_at: u64,
    generation: u32,
}

fn name(key: u8) -> String {
    format!("agent:a{key}:main")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn test_sessions_match_the_reference_model(actions in proptest::collection::vec(action(), 1..80)) {
        let storage = MemoryStorage::new();
        let mut model: BTreeMap<u8, Model> = BTreeMap::new();
        let mut clock: u64 = 1_000;
        let mut ids = 0u32;
        for action in actions {
            ids += 1;
            let fresh_id = format!("id{ids}");
            match action {
                Action::Create { key } => {
                    let result = run(&storage, spool::create_session(WS, &name(key), &fresh_id, clock));
                    if let std::collections::btree_map::Entry::Vacant(slot) = model.entry(key) {
                        prop_assert!(result.is_ok());
                        slot.insert(Model { updated_at: clock, ..Model::default() });
                    } else {
                        prop_assert_eq!(result.expect_err("duplicate").code(), "conflict");
                    }
                }
                Action::Append { key, content, clock_step } => {
                    clock = clock.saturating_add_signed(clock_step.into());
                    let text = format!("c{content}");
                    let result = run(&storage, spool::append_entry(WS, &name(key), AppendRequest::new(Role::User, text.clone()), clock));
                    match model.get_mut(&key) {
                        Some(m) => {
                            let entry = result.expect("append to an existing session");
                            m.last_id += 1;
                            prop_assert_eq!(entry.id, m.last_id);
                            m.newest_at = m.newest_at.max(clock);
                            prop_assert_eq!(entry.created_at, m.newest_at);
                            m.entries.push((m.newest_at, entry.id, text));
                            m.updated_at = clock;
                        }
                        None => prop_assert_eq!(result.expect_err("missing").code(), "not_found"),
                    }
                }
                Action::Reset { key } => {
                    let outcome = run(&storage, spool::apply_intent(WS, &name(key), Intent::ResetSameKey, &fresh_id, clock)).expect("reset");
                    prop_assert!(outcome.rotated);
                    let m = model.entry(key).or_default();
                    prop_assert_eq!(outcome.created, m.updated_at == 0);
                    if m.updated_at != 0 {
                        m.epoch += 1;
                    }
                    *m = Model { epoch: m.epoch, updated_at: clock, generation: m.generation + 1, ..Model::default() };
                    prop_assert_eq!(outcome.session.epoch, m.epoch);
                }
                Action::Delete { key } => {
                    let result = run(&storage, spool::delete_session(WS, &name(key), None));
                    match model.remove(&key) {
                        Some(_) => prop_assert!(result.is_ok()),
                        None => prop_assert_eq!(result.expect_err("missing").code(), "not_found"),
                    }
                }
                Action::Prune { max_age } => {
                    let pruned = run(&storage, spool::prune_stale(WS, max_age.into(), clock)).expect("prune");
                    let cutoff = clock.saturating_sub(max_age.into());
                    let doomed: Vec<u8> = model.iter().filter(|(_, m)| m.updated_at < cutoff).map(|(k, _)| *k).collect();
                    prop_assert_eq!(pruned, doomed.len() as u64);
                    for k in doomed {
                        model.remove(&k);
                    }
                }
                Action::ReadAll { key, limit, newest_first } => {
                    let order = if newest_first { Order::NewestFirst } else { Order::OldestFirst };
                    let mut seen = Vec::new();
                    let mut cursor = None;
                    loop {
                        let page = run(&storage, spool::read_page(WS, &name(key), PageRequest { order, cursor: cursor.clone(), limit }));
                        let Some(expected) = model.get(&key) else {
                            prop_assert_eq!(page.expect_err("missing").code(), "not_found");
                            break;
                        };
                        let page = page.expect("page");
                        prop_assert!(page.entries.len() <= limit as usize);
                        seen.extend(page.entries.into_iter().map(|e| (e.created_at, e.id, e.content)));
                        match page.next_cursor {
                            Some(next) => cursor = Some(next),
                            None => {
                                let mut want = expected.entries.clone();
                                if newest_first { want.reverse(); }
                                prop_assert_eq!(&seen, &want);
                                break;
                            }
                        }
                    }
                }
            }
            // Every session the model knows reads back exactly; no other exists.
            let listed = run(&storage, spool::list_sessions(WS, 10, None)).expect("list");
            prop_assert_eq!(listed.sessions.len(), model.len());
            for (key, m) in &model {
                let session = run(&storage, spool::get_session(WS, &name(*key))).expect("get").expect("exists");
                prop_assert_eq!(session.entry_count, m.entries.len() as u64);
                prop_assert_eq!(session.epoch, m.epoch);
                prop_assert_eq!(session.updated_at, m.updated_at);
            }
        }
    }
}
