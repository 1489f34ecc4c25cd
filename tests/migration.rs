//! Data written by record format 1 (the previous release) opens and reads with the
//! documented defaults. The fixture is a dump of a database that release wrote
//! (`tests/fixtures/format-v1/`); the hosts open the same data through SQLite and
//! IndexedDB.

use crate::support;

use serde::Deserialize;
use spool::{AppendRequest, Batch, MemoryStorage, Order, PageRequest, Role, Storage, record, run};

#[derive(Deserialize)]
struct Dump {
    format_version: u8,
    pairs: Vec<Pair>,
}

#[derive(Deserialize)]
struct Pair {
    workspace: String,
    key: String,
    value: String,
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// A fresh storage holding the pairs of the dump `text` of record format `version`;
/// `check` sees each `(key, value)` first.
fn restore(text: &str, version: u8, mut check: impl FnMut(&[u8], &[u8])) -> MemoryStorage {
    let dump: Dump = serde_json::from_str(text).expect("dump parses");
    assert_eq!(dump.format_version, version);
    let storage = MemoryStorage::new();
    for pair in dump.pairs {
        let (key, value) = (unhex(&pair.key), unhex(&pair.value));
        check(&key, &value);
        let mut batch = Batch::default();
        batch.put(key, value);
        storage.commit(&pair.workspace, batch).expect("restore");
    }
    storage
}

fn restored() -> MemoryStorage {
    restore(
        include_str!("fixtures/format-v1/kv-dump.json"),
        1,
        |_, value| assert_eq!(value[0], 1, "the fixture holds format-1 records only"),
    )
}

#[test]
fn test_format_1_sessions_read_with_documented_defaults() {
    let storage = restored();
    let list = run(&storage, spool::list_sessions("default", 10, None)).expect("list");
    let [demo] = list.sessions.as_slice() else {
        panic!("one session in `default`: {list:?}")
    };
    assert_eq!(demo.key, "agent:demo:main");
    assert_eq!(demo.entry_count, 6);
    assert_eq!(demo.cost_source, "none");
    assert_eq!(
        (
            demo.input_tokens,
            demo.output_tokens,
            demo.cache_read,
            demo.cache_write
        ),
        (0, 0, 0, 0)
    );
    assert_eq!(
        (
            demo.compaction_count,
            demo.missing_cost_entries,
            demo.last_state_id
        ),
        (0, 0, 0)
    );
    assert_eq!(demo.total_cost_usd, 0.0);
    assert!(demo.model_config.is_empty() && demo.metadata.is_empty());
    assert!(demo.model.is_none() && demo.ended_at.is_none());
    assert!(
        !demo.message_index,
        "format-1 identities have no message-id index"
    );
    let team = run(&storage, spool::list_sessions("team-b", 10, None)).expect("list");
    assert_eq!(team.sessions[0].key, "agent:reviewer:pr-42");
    assert_eq!(team.sessions[0].total_tokens, 4);
}

#[test]
fn test_format_1_transcripts_read_and_grow() {
    let storage = restored();
    let key = "agent:demo:main";
    let page = run(
        &storage,
        spool::read_page(
            "default",
            key,
            PageRequest {
                order: Order::OldestFirst,
                cursor: None,
                limit: 100,
            },
        ),
    )
    .expect("page");
    assert_eq!(page.entries.len(), 6);
    assert!(page.entries.iter().all(|e| e.turn_usage.is_none()));
    // Lookups by message id scan an identity that predates the index.
    let third = &page.entries[2];
    let found = run(
        &storage,
        spool::get_entry("default", key, &third.message_id),
    )
    .expect("lookup");
    assert_eq!(found.as_ref().map(|e| e.id), Some(third.id));
    // New writes go out in the current format and are counted.
    let entry = run(
        &storage,
        spool::append_entry(
            "default",
            key,
            AppendRequest::new(Role::User, "after the upgrade"),
            9_999_999_999_999,
        ),
    )
    .expect("append");
    assert_eq!(entry.id, 7);
    let session = run(&storage, spool::get_session("default", key))
        .expect("get")
        .expect("exists");
    assert_eq!(session.entry_count, 7);
    let raw = storage
        .get("default", &spool::keys::session(key))
        .expect("raw")
        .expect("record");
    assert_eq!(raw[0], record::SESSION_FORMAT_VERSION);
}

#[test]
fn test_format_1_sessions_branch_and_their_branches_read_exactly() {
    let storage = restored();
    let key = "agent:demo:main";
    let read = |key: &str| {
        run(
            &storage,
            spool::read_page(
                "default",
                key,
                PageRequest {
                    order: Order::OldestFirst,
                    cursor: None,
                    limit: 100,
                },
            ),
        )
        .expect("page")
        .entries
    };
    let parent = read(key);
    let whole = run(
        &storage,
        spool::branch(
            "default",
            key,
            "agent:demo:fork",
            spool::BranchRequest::fork("f1"),
            9_999_999_999_000,
        ),
    )
    .expect("branch");
    assert!(whole.lineage.forked_from_parent);
    assert_eq!(read("agent:demo:fork"), parent);
    // Lookups by message id scan the un-indexed parent identity through the base.
    let third = &parent[2];
    let found = run(
        &storage,
        spool::get_entry("default", "agent:demo:fork", &third.message_id),
    )
    .expect("lookup");
    assert_eq!(found.as_ref(), Some(third));
    let mut request = spool::BranchRequest::fork("f2");
    request.fork_before_message_id = Some(third.message_id.clone());
    let prefix = run(
        &storage,
        spool::branch(
            "default",
            key,
            "agent:demo:prefix",
            request,
            9_999_999_999_001,
        ),
    )
    .expect("branch before a message");
    assert_eq!(prefix.session.entry_count, 2);
    assert_eq!(read("agent:demo:prefix"), parent[..2].to_vec());
    // The parent's deletion hands both branches their own copy.
    run(&storage, spool::delete_session("default", key, None)).expect("delete");
    assert_eq!(read("agent:demo:fork"), parent);
    assert_eq!(read("agent:demo:prefix"), parent[..2].to_vec());
}

/// The dump of a database written by the release before the entry clock (record formats
/// 2 and 3), whose transcripts hold entries out of insertion order.
fn restored_v3() -> MemoryStorage {
    restore(
        include_str!("fixtures/format-v3/kv-dump.json"),
        3,
        |_, _| {},
    )
}

fn ids(storage: &MemoryStorage, workspace: &str, key: &str, order: Order) -> Vec<u64> {
    let (mut ids, mut cursor) = (Vec::new(), None);
    loop {
        let request = PageRequest {
            order,
            cursor: cursor.take(),
            limit: 2,
        };
        let page = run(storage, spool::read_page(workspace, key, request)).expect("page");
        ids.extend(page.entries.iter().map(|e| e.id));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return ids,
        }
    }
}

#[test]
fn test_format_3_transcripts_read_in_stored_order_and_grow_after_every_entry() {
    let storage = restored_v3();
    let cases = [
        ("default", "agent:demo:main", vec![6, 2, 4, 1, 5, 3], 7),
        ("default", "agent:demo:branch", vec![2, 4, 1, 5, 6, 3], 7),
        ("team-b", "agent:reviewer:pr-7", vec![2, 1], 3),
    ];
    for (workspace, key, stored, next) in cases {
        assert_eq!(ids(&storage, workspace, key, Order::OldestFirst), stored);
        let record = storage
            .get(workspace, &spool::keys::session(key))
            .expect("get")
            .expect("record");
        assert!(
            record[0] < record::SESSION_FORMAT_VERSION,
            "{key}: {}",
            record[0]
        );
        // A clock behind every stored entry: the entry still goes last, its time raised
        // to the newest stored one (derived from the entries: the record has no clock).
        let newest = run(
            &storage,
            spool::compaction::canonical_transcript(workspace, key),
        )
        .expect("canonical")
        .iter()
        .map(|e| e.created_at)
        .max()
        .expect("entries");
        let entry = run(
            &storage,
            spool::append_entry(workspace, key, AppendRequest::new(Role::User, "late"), 1),
        )
        .expect("append");
        assert_eq!((entry.id, entry.created_at), (next, newest), "{key}");
        let mut expected = stored.clone();
        expected.push(next);
        assert_eq!(ids(&storage, workspace, key, Order::OldestFirst), expected);
        let mut newest_first = ids(&storage, workspace, key, Order::NewestFirst);
        newest_first.reverse();
        assert_eq!(newest_first, expected, "{key}, newest first");
        let record = storage
            .get(workspace, &spool::keys::session(key))
            .expect("get")
            .expect("record");
        assert_eq!(record[0], record::SESSION_FORMAT_VERSION, "{key}");
    }
}

/// The dump of a database written by the release before compaction boundaries (record
/// format 4, `tests/fixtures/format-v4/`): compactions moved what they removed to the
/// archive range `x`, and a compaction of a parent copied its history into its branch.
fn restored_v4() -> MemoryStorage {
    let mut sessions = 0;
    let storage = restore(
        include_str!("fixtures/format-v4/kv-dump.json"),
        4,
        |key, value| {
            if key[0] == spool::keys::SESSION {
                assert_eq!(value[0], 4, "the fixture holds format-4 session records");
                sessions += 1;
            }
        },
    );
    assert_eq!(sessions, 5);
    storage
}

/// `(id, message id)` of `m{from}..=m{to}` as the format-4 generator wrote them.
fn written(from: u64, to: u64) -> Vec<(u64, String)> {
    (from..=to).map(|n| (n, format!("m{n:02}"))).collect()
}

fn and(mut entries: Vec<(u64, String)>, more: &[(u64, &str)]) -> Vec<(u64, String)> {
    entries.extend(more.iter().map(|&(id, m)| (id, m.to_owned())));
    entries
}

fn named(entries: &[spool::Entry]) -> Vec<(u64, String)> {
    entries
        .iter()
        .map(|e| (e.id, e.message_id.clone()))
        .collect()
}

/// Asserts that `key` reads `active` by pages of 3 (oldest first, and newest first
/// reversed) and `canonical` whole.
fn assert_v4_reads(
    storage: &MemoryStorage,
    key: &str,
    active: &[(u64, String)],
    canonical: &[(u64, String)],
) {
    for order in [Order::OldestFirst, Order::NewestFirst] {
        let (mut read, mut cursor) = (Vec::new(), None);
        loop {
            let request = PageRequest {
                order,
                cursor: cursor.take(),
                limit: 3,
            };
            let page = run(storage, spool::read_page("default", key, request)).expect("page");
            read.extend(named(&page.entries));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        if order == Order::NewestFirst {
            read.reverse();
        }
        assert_eq!(read, active, "{key}: active, {order:?}");
    }
    let whole = run(
        storage,
        spool::compaction::canonical_transcript("default", key),
    )
    .expect("canonical");
    assert_eq!(named(&whole), canonical, "{key}: canonical");
}

fn preimage_v4(storage: &MemoryStorage, key: &str, id: &str) -> Vec<(u64, String)> {
    let entries = run(
        storage,
        spool::compaction::compaction_preimage("default", key, id),
    )
    .unwrap_or_else(|e| panic!("preimage {id} of {key}: {e:?}"));
    named(&entries)
}

#[test]
fn test_format_4_archives_read_compact_again_and_outlive_their_parent() {
    let storage = restored_v4();
    let (main, branch, late) = ("agent:demo:main", "agent:demo:branch", "agent:demo:late");
    let branch_active = and(written(21, 35), &[(36, "b01")]);
    let branch_whole = and(written(1, 35), &[(36, "b01")]);
    let late_active = and(written(34, 38), &[(39, "l01")]);
    let late_whole = and(written(1, 38), &[(39, "l01")]);
    assert_v4_reads(&storage, main, &written(34, 38), &written(1, 38));
    assert_v4_reads(&storage, branch, &branch_active, &branch_whole);
    assert_v4_reads(&storage, late, &late_active, &late_whole);
    assert_eq!(preimage_v4(&storage, main, "cmp-demo-1-0"), written(1, 20));
    assert_eq!(preimage_v4(&storage, main, "cmp-demo-1-1"), written(21, 33));
    assert_eq!(
        preimage_v4(&storage, branch, "cmp-demo-1-0"),
        written(1, 20)
    );
    assert_eq!(preimage_v4(&storage, late, "cmp-demo-1-1"), written(21, 33));

    // A compaction after the upgrade: 500 active tokens for a window of 400.
    let result = compact(&storage, main, 400, 400_000);
    assert_eq!(
        (result.compaction_id.as_deref(), result.removed_count),
        (Some("cmp-demo-1-2"), 3),
        "{result:?}"
    );
    assert_eq!(named(&result.kept_entries), written(37, 38));
    assert_v4_reads(&storage, main, &written(37, 38), &written(1, 38));
    assert_eq!(preimage_v4(&storage, main, "cmp-demo-1-1"), written(21, 33));
    assert_eq!(preimage_v4(&storage, main, "cmp-demo-1-2"), written(34, 36));
    let summaries =
        run(&storage, spool::compaction::list_summaries("default", main)).expect("summaries");
    let ids: Vec<&str> = summaries.iter().map(|s| s.compaction_id.as_str()).collect();
    assert_eq!(ids, ["cmp-demo-1-0", "cmp-demo-1-1", "cmp-demo-1-2"]);
    let record = |key: &str| {
        storage
            .get("default", &spool::keys::session(key))
            .expect("get")
            .map(|r| r[0])
    };
    assert_eq!(record(main), Some(record::SESSION_FORMAT_VERSION));
    assert_eq!(record::SESSION_FORMAT_VERSION, 6);
    assert_v4_reads(&storage, late, &late_active, &late_whole);
    let entry = run(
        &storage,
        spool::append_entry("default", main, AppendRequest::new(Role::User, "m39"), 1),
    )
    .expect("append");
    assert_eq!((entry.id, entry.created_at), (39, 141_000));
    assert_v4_reads(
        &storage,
        main,
        &and(written(37, 38), &[(39, &entry.message_id)]),
        &and(written(1, 38), &[(39, &entry.message_id)]),
    );

    // The parent goes: both branches read exactly what they read before.
    run(&storage, spool::delete_session("default", main, None)).expect("delete");
    assert_eq!(record(main), None);
    assert_v4_reads(&storage, branch, &branch_active, &branch_whole);
    assert_v4_reads(&storage, late, &late_active, &late_whole);
    assert_eq!(preimage_v4(&storage, late, "cmp-demo-1-0"), written(1, 20));

    // The late branch resets: it starts empty, and with it the last reader of the
    // parent's identity goes, and so does everything of that identity.
    let outcome = run(
        &storage,
        spool::apply_intent(
            "default",
            late,
            spool::Intent::ResetSameKey,
            "late-2",
            400_100,
        ),
    )
    .expect("reset");
    assert!(outcome.rotated);
    assert_eq!((outcome.session.epoch, outcome.session.entry_count), (1, 0));
    // Its new identity's keys carry a minted data id.
    assert_eq!(record(late), Some(record::DATA_ID_FORMAT_VERSION));
    assert_v4_reads(&storage, late, &[], &[]);
    let tags = spool::keys::IDENTITY_TAGS.into_iter();
    for tag in tags.chain([spool::keys::HOLDER, spool::keys::RETIRED]) {
        let left = storage
            .range(
                "default",
                &spool::RangeQuery {
                    range: spool::KeyRange::prefix(&spool::keys::identity(tag, "demo-1")),
                    limit: 0,
                    reverse: false,
                },
            )
            .expect("range");
        assert!(left.is_empty(), "tag {}: {} left", tag as char, left.len());
    }
    assert_v4_reads(&storage, branch, &branch_active, &branch_whole);
}

/// Compacts `key` of the default workspace for a `window` of tokens, with the defaults.
fn compact(
    storage: &MemoryStorage,
    key: &str,
    window: u64,
    now: u64,
) -> spool::compaction::CompactionResult {
    let request = spool::compaction::CompactRequest::new(window);
    run(
        storage,
        spool::compaction::compact("default", key, request, now),
    )
    .expect("compact")
}

/// The whole canonical transcript of `key`, page by page.
fn canonical(storage: &MemoryStorage, key: &str) -> Vec<spool::Entry> {
    support::entries(storage, "default", key, true)
}

/// The database written before entries had tool statuses, reasoning, attachments, kinds
/// and cache tokens (`tests/fixtures/format-v5/`): every old entry reads with those
/// absent, and the session takes entries that have them, compacts and branches on.
#[test]
fn test_entries_written_before_the_richer_entry_model_read_and_mix_with_new_ones() {
    let mut entries = 0;
    let storage = restore(
        include_str!("fixtures/format-v5/kv-dump.json"),
        5,
        |key, value| {
            if key[0] == spool::keys::SESSION {
                assert_eq!(value[0], 5, "format-5 session records");
            }
            let text = String::from_utf8_lossy(value);
            if key[0] == b'e' {
                entries += 1;
                for field in [
                    "tool_status",
                    "reasoning",
                    "attachments",
                    "cache_read_tokens",
                ] {
                    assert!(!text.contains(field), "an old entry has no {field}: {text}");
                }
            }
        },
    );
    assert_eq!(
        entries, 13,
        "12 entries of the main session and one of its branch"
    );
    let main = "agent:demo:main";
    let old = canonical(&storage, main);
    assert_eq!(old.len(), 12);
    assert!(old.iter().all(|e| e.tool_status.is_none()
        && e.reasoning.is_none()
        && e.attachments.is_empty()
        && e.kind.is_none()));
    let usage = old[2].turn_usage.clone().expect("m03 has usage");
    assert_eq!((usage.input_tokens, usage.cache_read_tokens), (40, 0));

    let mut failed = AppendRequest::new(Role::Tool, "Exit code 2 again");
    failed.tool_call_id = Some("call-1".into());
    failed.tool_status = Some(spool::ToolStatus::Error);
    failed.message_id = Some("n01".into());
    let mut reply = AppendRequest::new(Role::Assistant, "Looking closer.");
    reply.reasoning = Some("the test needs a fixture".into());
    reply.message_id = Some("n02".into());
    reply.turn_usage = Some(spool::TurnUsage {
        cache_read_tokens: 900,
        ..spool::TurnUsage::new("m", 10, 5)
    });
    let before = run(&storage, spool::get_session("default", main))
        .expect("get")
        .expect("there");
    for (now, request) in [(200_000, failed), (200_001, reply)] {
        run(&storage, spool::append_entry("default", main, request, now)).expect("append");
    }
    let after = run(&storage, spool::get_session("default", main))
        .expect("get")
        .expect("there");
    assert_eq!(after.cache_read, before.cache_read + 900);
    assert_eq!(after.input_tokens, before.input_tokens + 10);
    let all = canonical(&storage, main);
    assert_eq!(&all[..12], &old[..], "old entries read as before");
    assert_eq!(all[12].tool_status, Some(spool::ToolStatus::Error));
    assert_eq!(
        all[13].reasoning.as_deref(),
        Some("the test needs a fixture")
    );

    let result = compact(&storage, main, 300, 200_002);
    assert!(result.removed_count > 0, "{result:?}");
    assert_eq!(
        canonical(&storage, main),
        all,
        "compaction keeps every field"
    );
    let branch = canonical(&storage, "agent:demo:branch");
    assert_eq!(branch.last().map(|e| e.message_id.as_str()), Some("b01"));
}

/// The last release whose records are all JSON (`tests/fixtures/format-v5-json/`):
/// session records of format 5, entries of format 2 and a message-id index row for every
/// entry, generated ids included. They read as they were, take binary records (format
/// 6) and entries without a row, and a lookup finds old and new alike.
#[test]
fn test_the_last_json_records_read_and_mix_with_binary_ones() {
    let (mut rows, mut entries) = (0, 0);
    let storage = restore(
        include_str!("fixtures/format-v5-json/kv-dump.json"),
        5,
        |key, value| match key[0] {
            spool::keys::SESSION => assert_eq!(value[0], 5, "format-5 session records"),
            spool::keys::ENTRY => {
                assert_eq!(value[0], 2, "JSON entries");
                entries += 1;
            }
            spool::keys::MESSAGE => rows += 1,
            _ => {}
        },
    );
    assert_eq!(
        (entries, rows),
        (14, 14),
        "a row for every entry, generated ids too"
    );
    let (main, branch) = ("agent:demo:main", "agent:demo:branch");
    let old = canonical(&storage, main);
    assert_eq!(old.len(), 13);
    let find = |key: &str, id: &str| {
        run(&storage, spool::get_entry("default", key, id)).expect("get_entry")
    };
    for entry in &old {
        assert_eq!(find(main, &entry.message_id).as_ref(), Some(entry));
        assert_eq!(find(branch, &entry.message_id).as_ref(), Some(entry));
    }
    assert_eq!(old[0].message_id, "gen-6-1");
    assert_eq!(old[2].reasoning.as_deref(), Some("check first"));
    assert_eq!(
        old[2].turn_usage.as_ref().map(|u| u.cache_read_tokens),
        Some(7)
    );
    assert_eq!(old[3].tool_status, Some(spool::ToolStatus::Error));
    assert_eq!(
        (old[4].message_id.as_str(), old[4].attachments.len()),
        ("gen-6-14", 1)
    );
    assert_eq!(
        old[12].created_at, old[10].created_at,
        "one batch, one time"
    );

    // Entry 14 may not take the id entry 5 was given, as before.
    let plain = |content: &str| AppendRequest::new(Role::User, content);
    let taken = run(
        &storage,
        spool::append_entry("default", main, plain("x"), 300_000),
    );
    assert_eq!(taken.expect_err("gen-6-14 is taken").code(), "conflict");
    let mut named = plain("n14");
    named.message_id = Some("n14".into());
    run(
        &storage,
        spool::append_entry("default", main, named, 300_001),
    )
    .expect("n14");
    let new: Vec<spool::Entry> = (2..5)
        .map(|i| {
            run(
                &storage,
                spool::append_entry("default", main, plain("new"), 300_000 + i),
            )
            .expect("append")
        })
        .collect();
    assert_eq!(new[0].message_id, "gen-6-15");
    let record = storage
        .get("default", &spool::keys::session(main))
        .expect("get")
        .expect("record");
    assert_eq!(record[0], record::SESSION_FORMAT_VERSION);
    let dump = support::dump(&storage, "default");
    let main_sid = spool::keys::entries("gen-6");
    let versions: Vec<u8> = dump
        .iter()
        .filter(|kv| kv.key.starts_with(&main_sid))
        .map(|kv| kv.value[0])
        .collect();
    assert_eq!(versions[..13], [2; 13]);
    assert_eq!(versions[13..], [record::ENTRY_FORMAT_VERSION; 4]);
    let rows_now = dump
        .iter()
        .filter(|kv| kv.key[0] == spool::keys::MESSAGE)
        .count();
    assert_eq!(rows_now, rows + 1, "only the named entry has a row");
    for entry in old.iter().chain(&new) {
        assert_eq!(find(main, &entry.message_id).as_ref(), Some(entry));
    }
    let all = canonical(&storage, main);
    assert_eq!(&all[..13], &old[..]);
    assert_eq!(&all[14..], &new[..]);

    // Truncation takes old rows with the old entries: a lookup finds exactly what the
    // transcript still holds, and the branch keeps its copy.
    let cut = run(&storage, spool::truncate("default", main, 4, None, 400_000)).expect("truncate");
    assert!(cut.truncated, "{cut:?}");
    let kept = canonical(&storage, main);
    assert!(kept.len() < all.len());
    for entry in &all {
        let held = kept.iter().find(|e| e.id == entry.id);
        assert_eq!(
            find(main, &entry.message_id).as_ref(),
            held,
            "{}",
            entry.message_id
        );
    }
    for entry in &old {
        assert_eq!(
            find(branch, &entry.message_id).as_ref(),
            Some(entry),
            "kept for the branch"
        );
    }
}

/// Every search index record (`I` keys) of the workspace `default`.
fn index_records(storage: &MemoryStorage) -> Vec<spool::Kv> {
    let every = spool::RangeQuery {
        range: spool::KeyRange::prefix(b"I"),
        limit: 0,
        reverse: false,
    };
    storage.range("default", &every).expect("range")
}

/// The search index as the release before index format 3 wrote it
/// (`tests/fixtures/index-v2/`: 140 entries, two runs of format 2 and a tail): every
/// query answers as the entries themselves do (the same query with the index removed,
/// when a query tokenizes the whole transcript as its tail), and as a format-3 index
/// rebuilt from them.
#[test]
fn test_an_index_of_format_2_answers_as_the_entries_do() {
    let storage = restore(include_str!("fixtures/index-v2/kv-dump.json"), 2, |_, _| ());
    let index = index_records(&storage);
    assert!(index.len() > 16, "runs were written: {}", index.len());
    assert!(index.iter().all(|kv| kv.value[0] == 2), "format 2 only");
    let queries = [
        "parser",
        "pars*",
        "parseNestedList",
        "src/parser/mod.rs",
        "heisenbug",
        "\"the parser\"",
        "café",
        "role:user compact",
        "E0402",
    ];
    let find = |storage: &MemoryStorage, query: &str| {
        run(
            storage,
            spool::search(
                "default",
                spool::SearchRequest {
                    query: query.to_owned(),
                    limit: 100,
                    cursor: None,
                },
            ),
        )
        .expect(query)
    };
    let old: Vec<spool::SearchPage> = queries.iter().map(|q| find(&storage, q)).collect();
    for (query, page) in queries.iter().zip(&old) {
        assert!(!page.hits.is_empty(), "{query}");
    }
    assert_eq!(
        old[4].hits.iter().map(|h| h.entry_id).collect::<Vec<_>>(),
        [133, 17],
        "the rare term, in an old run and in the tail"
    );
    // Without the index, a query tokenizes the transcript itself.
    let mut drop = Batch::default();
    drop.delete_range(spool::KeyRange::prefix(b"I"));
    storage.commit("default", drop).expect("drop the index");
    for (query, page) in queries.iter().zip(&old) {
        assert_eq!(&find(&storage, query), page, "no index: {query}");
    }
    // Rebuilt by the backfill, in format 3.
    let mut cursor = None;
    for call in 0.. {
        assert!(call < 20, "the backfill ends");
        let progress = run(
            &storage,
            spool::index_backfill("default", cursor.as_deref()),
        )
        .expect("backfill");
        cursor = progress.next_cursor;
        if cursor.is_none() && progress.indexed_entries == 0 {
            break;
        }
    }
    let rebuilt = index_records(&storage);
    assert!(!rebuilt.is_empty() && rebuilt.iter().all(|kv| kv.value[0] == 3));
    for (query, page) in queries.iter().zip(&old) {
        assert_eq!(&find(&storage, query), page, "format 3: {query}");
    }
}

/// The last release that named identities' keys by their session ids
/// (`tests/fixtures/format-v6/`): its identities keep their keys, and 16-byte positions,
/// as they grow; identities made from them (a branch, a reset's next generation) get
/// minted data ids and read the old history through them, generated message ids and all.
#[test]
fn test_identities_named_by_session_ids_keep_their_keys_beside_minted_ones() {
    const SID: &str = "3f2a9c4e-7b1d-4e8a-9c55-0d6e1f2a3b4c";
    let (main, branch) = ("agent:demo:main", "agent:demo:branch");
    let storage = restore(
        include_str!("fixtures/format-v6/kv-dump.json"),
        6,
        |key, value| match key[0] {
            spool::keys::SESSION => assert_eq!(value[0], 6, "format-6 session records"),
            spool::keys::DATA_ID => panic!("no data-id registry before format 7"),
            _ => {}
        },
    );
    let data_id = |key: &str| {
        run(&storage, spool::session_data_id("default", key))
            .expect("read")
            .expect("a session")
    };
    assert_eq!(
        (data_id(main), data_id(branch)),
        (SID.into(), "branch-6".into())
    );
    let old = canonical(&storage, main);
    assert_eq!(old.len(), 12);
    assert_eq!(old[0].message_id, format!("{SID}-1"));
    assert_eq!(old[2].message_id, "m03");
    let find = |key: &str, id: &str| {
        run(&storage, spool::get_entry("default", key, id)).expect("get_entry")
    };
    for entry in &old {
        assert_eq!(find(main, &entry.message_id).as_ref(), Some(entry));
        assert_eq!(find(branch, &entry.message_id).as_ref(), Some(entry));
    }

    // The old identity grows under its session id, its record still format 6.
    let grown = run(
        &storage,
        spool::append_entry(
            "default",
            main,
            AppendRequest::new(Role::User, "m13 after the upgrade"),
            1_764_000_100_000,
        ),
    )
    .expect("append");
    assert_eq!(grown.message_id, format!("{SID}-13"));
    let record = |key: &str| {
        storage
            .get("default", &spool::keys::session(key))
            .expect("get")
            .map(|v| v[0])
    };
    assert_eq!(record(main), Some(record::SESSION_FORMAT_VERSION));
    let key = spool::keys::entry(SID, grown.created_at, grown.id);
    assert_eq!(key.len(), 1 + SID.len() + 1 + 16);
    assert!(storage.get("default", &key).expect("get").is_some());

    // A branch of it is a new identity: a minted data id, the old history through it.
    let child = "agent:demo:child";
    run(
        &storage,
        spool::branch(
            "default",
            main,
            child,
            spool::BranchRequest::fork("child-7"),
            1_764_000_200_000,
        ),
    )
    .expect("branch");
    assert!(spool::keys::is_minted(&data_id(child)));
    assert_eq!(record(child), Some(record::DATA_ID_FORMAT_VERSION));
    let own = run(
        &storage,
        spool::append_entry(
            "default",
            child,
            AppendRequest::new(Role::User, "c14 the child's own"),
            1_764_000_300_000,
        ),
    )
    .expect("append");
    assert_eq!(own.message_id, "child-7-14");

    // The old generation is reset away while the branches read it: they keep reading it
    // under its session id, and the next generation's keys are minted.
    run(
        &storage,
        spool::apply_intent(
            "default",
            main,
            spool::Intent::ResetSameKey,
            "main-7",
            1_764_000_400_000,
        ),
    )
    .expect("reset");
    assert!(spool::keys::is_minted(&data_id(main)));
    let mut expected: Vec<spool::Entry> = old.clone();
    expected.push(grown.clone());
    expected.push(own.clone());
    assert_eq!(canonical(&storage, child), expected);
    assert_eq!(
        find(child, &format!("{SID}-2")).map(|e| e.content),
        Some("m02 assistant message".into())
    );
    assert_eq!(canonical(&storage, branch).len(), 13);

    // With every reader gone, nothing of the old identity is left.
    for key in [child, branch, main] {
        run(&storage, spool::delete_session("default", key, None)).expect("delete");
    }
    let left: Vec<String> = support::dump(&storage, "default")
        .iter()
        .filter(|kv| kv.key[0] != spool::keys::RESET_ARCHIVE)
        .map(|kv| spool::keys::display(&kv.key))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
