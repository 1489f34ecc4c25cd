//! Model-based test: random sequences of creates, appends and paged reads against a
//! plain reference model of what the transcript must be.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;

use proptest::prelude::*;
use spool::{AppendRequest, MemoryStorage, Order, PageRequest, Role, run};

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
    ReadAll {
        key: u8,
        limit: u32,
        newest_first: bool,
    },
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        1 => (0u8..3).prop_map(|key| Action::Create { key }),
        4 => (0u8..3, any::<u8>(), -3i8..4).prop_map(|(key, content, clock_step)| Action::Append { key, content, clock_step }),
        2 => (0u8..3, 1u32..5, any::<bool>()).prop_map(|(key, limit, newest_first)| Action::ReadAll { key, limit, newest_first }),
    ]
}

fn name(key: u8) -> String {
    format!("agent:a{key}:main")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn test_transcripts_match_the_reference_model(actions in proptest::collection::vec(action(), 1..60)) {
        let storage = MemoryStorage::new();
        // key -> entries as (created_at, id, content), kept sorted by (created_at, id)
        let mut model: BTreeMap<u8, Vec<(u64, u64, String)>> = BTreeMap::new();
        let mut clock: u64 = 1_000;
        for action in actions {
            match action {
                Action::Create { key } => {
                    let result = run(&storage, spool::create_session(WS, &name(key), &format!("s{key}"), clock));
                    if let std::collections::btree_map::Entry::Vacant(slot) = model.entry(key) {
                        prop_assert!(result.is_ok());
                        slot.insert(Vec::new());
                    } else {
                        prop_assert_eq!(result.expect_err("must fail").code(), "conflict");
                    }
                }
                Action::Append { key, content, clock_step } => {
                    clock = clock.saturating_add_signed(clock_step.into());
                    let text = format!("c{content}");
                    let result = run(&storage, spool::append_entry(WS, &name(key), AppendRequest::new(Role::User, text.clone()), clock));
                    match model.get_mut(&key) {
                        Some(entries) => {
                            let entry = result.expect("append to an existing session");
                            prop_assert_eq!(entry.id, entries.len() as u64 + 1);
                            entries.push((clock, entry.id, text));
                            entries.sort();
                        }
                        None => prop_assert_eq!(result.expect_err("must fail").code(), "not_found"),
                    }
                }
                Action::ReadAll { key, limit, newest_first } => {
                    let order = if newest_first { Order::NewestFirst } else { Order::OldestFirst };
                    let mut seen = Vec::new();
                    let mut cursor = None;
                    loop {
                        let page = run(&storage, spool::read_page(WS, &name(key), PageRequest { order, cursor: cursor.clone(), limit }));
                        let Some(expected) = model.get(&key) else {
                            prop_assert_eq!(page.expect_err("must fail").code(), "not_found");
                            break;
                        };
                        let page = page.expect("page");
                        prop_assert!(page.entries.len() <= limit as usize);
                        seen.extend(page.entries.into_iter().map(|e| (e.created_at, e.id, e.content)));
                        match page.next_cursor {
                            Some(next) => cursor = Some(next),
                            None => {
                                let mut want = expected.clone();
                                if newest_first { want.reverse(); }
                                prop_assert_eq!(&seen, &want);
                                break;
                            }
                        }
                    }
                }
            }
        }
        for (key, entries) in &model {
            let session = run(&storage, spool::get_session(WS, &name(*key))).expect("get").expect("exists");
            prop_assert_eq!(session.entry_count, entries.len() as u64);
        }
    }
}
