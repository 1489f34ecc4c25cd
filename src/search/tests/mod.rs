//! Search against the in-memory storage: appends, then queries.

use super::*;
use crate::session::{Identity, data_id_in};
use crate::storage::memory::MemoryStorage;
use crate::storage::{Batch, Storage};
use crate::types::{AppendRequest, ToolStatus};
use crate::{Kv, run};

const WS: &str = "default";
const KEY: &str = "agent:main:main";

fn create(storage: &MemoryStorage, key: &str, id: &str) {
    run(storage, crate::create_session(WS, key, id, 1)).expect("create");
}

fn say(storage: &MemoryStorage, key: &str, role: Role, text: &str, now: u64) -> Entry {
    run(
        storage,
        crate::append_entry(WS, key, AppendRequest::new(role, text), now),
    )
    .expect("append")
}

pub(super) fn find(storage: &MemoryStorage, query: &str) -> Result<SearchPage, Error> {
    find_page(storage, query, 20, None)
}

fn find_page(
    storage: &MemoryStorage,
    query: &str,
    limit: u32,
    cursor: Option<String>,
) -> Result<SearchPage, Error> {
    run(
        storage,
        search(
            WS,
            SearchRequest {
                query: query.into(),
                limit,
                cursor,
            },
        ),
    )
}

fn ids(page: &SearchPage) -> Vec<(String, u64)> {
    page.hits
        .iter()
        .map(|h| (h.session_key.clone(), h.entry_id))
        .collect()
}

fn entry_ids(storage: &MemoryStorage, query: &str) -> Vec<u64> {
    let mut out: Vec<u64> = find(storage, query)
        .expect(query)
        .hits
        .iter()
        .map(|h| h.entry_id)
        .collect();
    out.sort_unstable();
    out
}

fn sample() -> MemoryStorage {
    let storage = MemoryStorage::new();
    create(&storage, KEY, "s1");
    let lines = [
        "please fix the parser in src/parser.rs",             // 1
        "I changed parseNestedList to handle empty lists",    // 2
        "error[E0502]: cannot borrow `x` as mutable",         // 3
        "the café menu lists nested parse_nested_list calls", // 4
        "日本語のテキストを検索する",                         // 5
        "nothing relevant here",                              // 6
    ];
    for (i, line) in lines.iter().enumerate() {
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        say(&storage, KEY, role, line, 10 + i as u64);
    }
    storage
}

#[test]
fn test_terms_identifiers_and_paths_are_found() {
    let storage = sample();
    assert_eq!(entry_ids(&storage, "parser"), [1]);
    assert_eq!(entry_ids(&storage, "nested"), [2, 4]);
    assert_eq!(entry_ids(&storage, "parseNestedList"), [2, 4]);
    assert_eq!(entry_ids(&storage, "parse_nested_list"), [2, 4]);
    assert_eq!(entry_ids(&storage, "ParseNestedList café"), [4]);
    assert_eq!(entry_ids(&storage, "src/parser.rs"), [1]);
    assert_eq!(entry_ids(&storage, "e0502"), [3]);
    assert_eq!(entry_ids(&storage, "CAFE"), [4]);
    assert_eq!(entry_ids(&storage, "日本語"), [5]);
    assert_eq!(entry_ids(&storage, "検索"), [5]);
    // One character: also the last of a run, which starts no bigram.
    assert_eq!(entry_ids(&storage, "る"), [5]);
    assert_eq!(entry_ids(&storage, "語"), [5]);
    assert_eq!(entry_ids(&storage, "\"語の\""), [5]);
    assert!(entry_ids(&storage, "absent").is_empty());
}

#[test]
fn test_an_identifier_finds_its_other_spelling_in_runs_and_the_tail() {
    // A one-letter first part whose two spellings (`c_value`, `cvalue`) fall in
    // different index buckets, so a lookup reads both.
    let c = ('a'..='z')
        .find(|c| index::bucket(&format!("{c}_value")) != index::bucket(&format!("{c}value")))
        .expect("some letter");
    let upper = c.to_ascii_uppercase();
    let storage = MemoryStorage::new();
    create(&storage, KEY, "s1");
    create(&storage, "agent:main:other", "s2");
    let block = index::BLOCK_ENTRIES;
    let last = 2 * block + 3;
    for id in 1..=2 * block + 5 {
        let text = match id {
            3 => format!("set {c}_value"),
            40 => format!("read {c}Value"),
            10 => format!("value of {c}"),
            i if i == last => format!("and {upper}_VALUE"),
            _ => format!("filler {id}"),
        };
        say(&storage, KEY, Role::User, &text, id);
        // The other session holds one spelling only, in a run.
        let other = if id == 5 {
            format!("{upper}Value")
        } else {
            format!("filler {id}")
        };
        say(&storage, "agent:main:other", Role::User, &other, id);
    }
    let main = |q: &str| entry_ids(&storage, &format!("{q} session:{KEY}"));
    let other = |q: &str| entry_ids(&storage, &format!("{q} session:agent:main:other"));
    for q in [
        format!("{c}Value"),
        format!("{c}_value"),
        format!("{upper}_VALUE"),
        format!("{upper}Value"),
    ] {
        assert_eq!(main(&q), [3, 40, last], "{q}");
        assert_eq!(other(&q), [5], "{q}");
    }
    assert_eq!(main("value"), [3, 10, 40, last]);
    assert_eq!(main(&format!("\"{c} value\"")), [3, 40, last]);
}

#[test]
fn test_and_phrase_and_prefix() {
    let storage = sample();
    assert_eq!(entry_ids(&storage, "nested lists"), [2, 4]);
    assert_eq!(entry_ids(&storage, "nested café"), [4]);
    assert_eq!(entry_ids(&storage, "\"nested list\""), [2, 4]);
    assert_eq!(entry_ids(&storage, "\"list nested\""), Vec::<u64>::new());
    assert_eq!(entry_ids(&storage, "\"menu lists\""), [4]);
    assert_eq!(entry_ids(&storage, "\"lists menu\""), Vec::<u64>::new());
    assert_eq!(entry_ids(&storage, "pars*"), [1, 2, 4]);
    assert_eq!(entry_ids(&storage, "parse_nest*"), [4]);
    assert_eq!(entry_ids(&storage, "role:user pars*"), [1]);
    assert_eq!(entry_ids(&storage, "role:assistant"), [2, 4, 6]);
}

#[test]
fn test_hits_carry_fields_and_highlighted_snippets() {
    let storage = sample();
    let page = find(&storage, "parser").expect("search");
    let hit = &page.hits[0];
    assert_eq!(
        (
            hit.session_key.as_str(),
            hit.session_id.as_str(),
            hit.entry_id,
            hit.role
        ),
        (KEY, "s1", 1, Role::User)
    );
    assert_eq!(hit.message_id, "s1-1");
    assert_eq!(hit.created_at, 10);
    assert!(hit.score > 0.0);
    assert_eq!(hit.snippet.field, "content");
    let marked: Vec<&str> = hit
        .snippet
        .highlights
        .iter()
        .map(|&(s, e)| &hit.snippet.text[s as usize..e as usize])
        .collect();
    assert_eq!(marked, ["parser", "parser"]);
    assert_eq!(page.next_cursor, None);
    // Long content: the snippet is a bounded window around the match.
    let long = format!("{} needle {}", "word ".repeat(500), "tail ".repeat(500));
    say(&storage, KEY, Role::User, &long, 50);
    let page = find(&storage, "needle").expect("search");
    let s = &page.hits[0].snippet;
    assert!(s.text.len() <= SNIPPET_BYTES);
    let (a, b) = s.highlights[0];
    assert_eq!(&s.text[a as usize..b as usize], "needle");
}

#[test]
fn test_ranking_prefers_more_and_rarer_matches() {
    let storage = MemoryStorage::new();
    create(&storage, KEY, "s1");
    say(
        &storage,
        KEY,
        Role::User,
        "rust once among many other words here",
        10,
    );
    say(&storage, KEY, Role::User, "rust rust rust", 11);
    say(&storage, KEY, Role::User, "rust and borrowck", 12);
    say(&storage, KEY, Role::User, "unrelated", 13);
    let page = find(&storage, "rust").expect("search");
    assert_eq!(
        ids(&page).iter().map(|h| h.1).collect::<Vec<_>>(),
        [2, 3, 1]
    );
    let page = find(&storage, "rust borrowck").expect("search");
    assert_eq!(ids(&page), [(KEY.to_owned(), 3)]);
    // Equal scores: newer first.
    let storage = MemoryStorage::new();
    create(&storage, KEY, "s1");
    for i in 0..3 {
        say(&storage, KEY, Role::User, "same words", 10 + i);
    }
    let page = find(&storage, "same").expect("search");
    assert_eq!(
        page.hits.iter().map(|h| h.entry_id).collect::<Vec<_>>(),
        [3, 2, 1]
    );
}

#[test]
fn test_paging_sees_each_hit_once_across_merged_runs() {
    let storage = MemoryStorage::new();
    create(&storage, KEY, "s1");
    create(&storage, "agent:other:main", "s2");
    // Enough entries to merge runs (BLOCK_ENTRIES) and keep a tail, in two sessions.
    for i in 0..300u64 {
        let words = "common ".repeat(1 + (i % 5) as usize);
        say(&storage, KEY, Role::User, &format!("{words} n{i}"), 100 + i);
        if i % 3 == 0 {
            say(&storage, "agent:other:main", Role::User, &words, 100 + i);
        }
    }
    let runs = storage
        .range(
            WS,
            &RangeQuery {
                range: KeyRange::prefix(&keys::identity(
                    keys::SEARCH_POSTINGS,
                    &data_id_in(&storage, WS, "s1"),
                )),
                limit: 0,
                reverse: false,
            },
        )
        .expect("range");
    assert!(!runs.is_empty(), "runs were merged");
    let every = |limit: u32| {
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let page = find_page(&storage, "common", limit, cursor).expect("page");
            assert!(page.hits.len() <= limit as usize);
            seen.extend(ids(&page));
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        seen
    };
    let all = every(7);
    assert_eq!(all.len(), 300 + 100);
    // Pages of another size (each checking more candidates than a page sorts when it
    // has no cursor) give the same sequence.
    assert_eq!(every(100), all);
    let unique: BTreeSet<_> = all.iter().cloned().collect();
    assert_eq!(unique.len(), all.len(), "each hit once");
    // The pages follow the one-page order.
    let one = find_page(&storage, "common", 100, None).expect("page");
    assert_eq!(ids(&one), all[..100]);
    // Every entry is found by its own term, merged or in the tail.
    for i in [0u64, 127, 128, 255, 256, 299] {
        assert_eq!(entry_ids(&storage, &format!("n{i}")), [i + 1], "n{i}");
    }
}

#[test]
fn test_bad_cursors_and_requests_are_invalid() {
    let storage = sample();
    for cursor in ["zz", "00", "", "01ff"] {
        let err = find_page(&storage, "nested", 1, Some(cursor.into())).expect_err(cursor);
        assert_eq!(err.code(), "invalid_argument", "{cursor}");
    }
    let next = find_page(&storage, "nested", 1, None)
        .expect("page")
        .next_cursor
        .expect("more");
    let err = find_page(&storage, "lists", 1, Some(next.clone())).expect_err("other query");
    assert_eq!(err.code(), "invalid_argument");
    let page = find_page(&storage, "nested", 1, Some(next)).expect("resumes");
    assert_eq!(page.hits.len(), 1);
    for limit in [0, MAX_SEARCH_PAGE + 1] {
        let err = find_page(&storage, "nested", limit, None).expect_err("limit");
        assert_eq!(err.code(), "invalid_argument");
    }
    assert_eq!(
        find(&storage, "\"open").expect_err("query").code(),
        "invalid_argument"
    );
}

#[test]
fn test_filters_select_sessions_agents_roles_tools_errors_and_time() {
    let storage = MemoryStorage::new();
    create(&storage, "agent:main:main", "m1");
    create(&storage, "agent:main:side", "m2");
    create(&storage, "agent:ops:main", "o1");
    say(&storage, "agent:main:main", Role::User, "deploy now", 10);
    say(&storage, "agent:main:side", Role::User, "deploy later", 20);
    say(&storage, "agent:ops:main", Role::User, "deploy never", 30);
    let mut call = AppendRequest::new(Role::Assistant, "running deploy");
    call.tool_calls = Some(serde_json::json!([{"id": "c1", "name": "Bash",
        "input": {"command": "make deploy"}}]));
    run(
        &storage,
        crate::append_entry(WS, "agent:ops:main", call, 40),
    )
    .expect("call");
    let mut result = AppendRequest::new(Role::Tool, "deploy failed: permission denied");
    result.tool_call_id = Some("c1".into());
    result.tool_status = Some(ToolStatus::Error);
    run(
        &storage,
        crate::append_entry(WS, "agent:ops:main", result, 50),
    )
    .expect("result");

    let keys_of = |q: &str| -> Vec<String> {
        let mut k: Vec<String> = find(&storage, q)
            .expect(q)
            .hits
            .into_iter()
            .map(|h| format!("{}#{}", h.session_key, h.entry_id))
            .collect();
        k.sort();
        k
    };
    assert_eq!(
        keys_of("deploy session:agent:main:main"),
        ["agent:main:main#1"]
    );
    assert_eq!(
        keys_of("deploy session:agent:main:*"),
        ["agent:main:main#1", "agent:main:side#1"]
    );
    assert_eq!(keys_of("deploy agent:ops").len(), 3);
    assert_eq!(keys_of("deploy role:tool"), ["agent:ops:main#3"]);
    assert_eq!(keys_of("has:error"), ["agent:ops:main#3"]);
    assert_eq!(keys_of("tool:bash"), ["agent:ops:main#2"]);
    assert_eq!(keys_of("make tool:bash"), ["agent:ops:main#2"]);
    assert_eq!(
        keys_of("deploy since:20 until:40"),
        ["agent:main:side#1", "agent:ops:main#1"]
    );
    assert!(keys_of("deploy session:agent:none").is_empty());
    // The tool call's arguments are indexed, and the snippet says where it matched.
    let page = find(&storage, "make").expect("search");
    assert_eq!(page.hits[0].snippet.field, "tool_calls");
}

#[test]
fn test_workspaces_do_not_see_each_other() {
    let storage = sample();
    run(&storage, crate::create_session("other", KEY, "z1", 1)).expect("create");
    run(
        &storage,
        crate::append_entry("other", KEY, AppendRequest::new(Role::User, "parser"), 5),
    )
    .expect("append");
    let page = run(
        &storage,
        search(
            "other",
            SearchRequest {
                query: "parser".into(),
                limit: 10,
                cursor: None,
            },
        ),
    )
    .expect("search");
    assert_eq!(
        page.hits
            .iter()
            .map(|h| h.session_id.as_str())
            .collect::<Vec<_>>(),
        ["z1"]
    );
}

#[test]
fn test_branches_find_shared_history_once() {
    let storage = sample();
    run(
        &storage,
        crate::branch(
            WS,
            KEY,
            "agent:main:branch",
            crate::BranchRequest {
                fork_transcript: true,
                ..crate::BranchRequest::empty("b1")
            },
            100,
        ),
    )
    .expect("branch");
    say(
        &storage,
        "agent:main:branch",
        Role::User,
        "the branch parser",
        200,
    );
    let page = find(&storage, "parser").expect("search");
    let mut found = ids(&page);
    found.sort();
    assert_eq!(
        found,
        [("agent:main:branch".to_owned(), 7), (KEY.to_owned(), 1)]
    );
}

#[test]
fn test_a_retired_identity_keeps_its_index_until_its_last_reader_goes() {
    let storage = MemoryStorage::new();
    create(&storage, KEY, "s1");
    for i in 0..70u64 {
        say(
            &storage,
            KEY,
            Role::User,
            &format!("step {i} of the parser fix"),
            10 + i,
        );
    }
    let child = "agent:main:branch";
    run(
        &storage,
        crate::branch(WS, KEY, child, crate::BranchRequest::fork("b1"), 100),
    )
    .expect("branch");
    let runs = |storage: &MemoryStorage| {
        storage
            .range(
                WS,
                &crate::RangeQuery {
                    range: crate::KeyRange::prefix(&crate::keys::identity(
                        crate::keys::SEARCH_POSTINGS,
                        &data_id_in(storage, WS, "s1"),
                    )),
                    limit: u32::MAX,
                    reverse: false,
                },
            )
            .expect("range")
            .len()
    };
    assert!(runs(&storage) > 0, "70 entries make runs");
    run(&storage, crate::delete_session(WS, KEY, None)).expect("delete the parent");
    assert!(runs(&storage) > 0, "kept for the branch that reads them");
    run(&storage, crate::delete_session(WS, child, None)).expect("delete the branch");
    assert_eq!(runs(&storage), 0, "the last reader took them");
    assert!(find(&storage, "parser").expect("search").hits.is_empty());
}

#[test]
fn test_compacted_entries_are_still_found() {
    let storage = MemoryStorage::new();
    create(&storage, KEY, "s1");
    for i in 0..20u64 {
        let mut r = AppendRequest::new(Role::User, format!("msg{i} {}", "x".repeat(500)));
        r.token_count = Some(200);
        run(&storage, crate::append_entry(WS, KEY, r, 2 + i)).expect("append");
    }
    let result = run(
        &storage,
        crate::compaction::compact(WS, KEY, crate::compaction::CompactRequest::new(1000), 100),
    )
    .expect("compact");
    assert!(result.skip_reason.is_none(), "{result:?}");
    let session = run(&storage, crate::get_session(WS, KEY))
        .expect("get")
        .expect("exists");
    assert!(session.compaction_count >= 1);
    assert_eq!(entry_ids(&storage, "msg0"), [1]);
    assert_eq!(entry_ids(&storage, "msg19"), [20]);
}

/// Records the largest range answer (bytes of values) read under a key prefix.
struct LargestUnder<'a> {
    inner: &'a MemoryStorage,
    prefix: Vec<u8>,
    largest: std::cell::Cell<usize>,
}

impl Storage for LargestUnder<'_> {
    fn get(&self, ws: &str, key: &[u8]) -> Result<Option<Vec<u8>>, crate::StorageError> {
        self.inner.get(ws, key)
    }
    fn range(&self, ws: &str, q: &RangeQuery) -> Result<Vec<Kv>, crate::StorageError> {
        let pairs = self.inner.range(ws, q)?;
        if q.range.start.starts_with(&self.prefix) {
            let bytes = pairs.iter().map(|kv| kv.value.len()).sum::<usize>();
            self.largest.set(self.largest.get().max(bytes));
        }
        Ok(pairs)
    }
    fn commit(&self, ws: &str, batch: Batch) -> Result<(), crate::StorageError> {
        self.inner.commit(ws, batch)
    }
}

#[test]
fn test_a_bucket_read_stays_bounded_after_a_session_of_small_records() {
    let storage = MemoryStorage::new();
    // First (in key order) a session whose records of the term's bucket are tiny, then
    // one whose records of that bucket are large: many distinct terms sharing its first
    // two letters. What a query learned reading the first must not size its first read
    // of the second.
    create(&storage, "agent:a0:main", "small");
    create(&storage, "agent:a1:main", "large");
    let runs = 30;
    for i in 0..runs * index::BLOCK_ENTRIES {
        say(
            &storage,
            "agent:a0:main",
            Role::User,
            &format!("alpha n{i}"),
            10 + i,
        );
        let many: Vec<String> = (0..250).map(|j| format!("al{i}x{j}")).collect();
        let text = format!("alpha {}", many.join(" "));
        say(&storage, "agent:a1:main", Role::User, &text, 10 + i);
    }
    let bucket = index::bucket("alpha");
    assert_eq!(index::bucket("al0x0"), bucket, "the terms share the bucket");
    let records = index_records(&storage, "large");
    let prefix = index::bucket_runs(&data_id_in(&storage, WS, "large"), bucket);
    let largest_record = records
        .iter()
        .filter(|kv| kv.key.starts_with(&prefix))
        .map(|kv| kv.value.len())
        .max()
        .expect("records in the bucket");
    let counting = LargestUnder {
        inner: &storage,
        prefix,
        largest: Default::default(),
    };
    let request = SearchRequest {
        query: "alpha".into(),
        limit: 20,
        cursor: None,
    };
    let page = run(&counting, search(WS, request)).expect("search");
    assert_eq!(page.hits.len(), 20);
    // A first page of BUCKET_PAGE_MIN records, then pages of about BUCKET_PAGE_BYTES.
    let bound = (8 * largest_record).max(BUCKET_PAGE_BYTES + largest_record);
    assert!(
        counting.largest.get() <= bound,
        "a read of {} bytes (records up to {largest_record}, bound {bound})",
        counting.largest.get()
    );
}

/// Appends `n` filler entries to the session under `key` (enough to cut runs).
fn fill(storage: &MemoryStorage, key: &str, n: u64) {
    for i in 0..n {
        say(storage, key, Role::User, &format!("filler {i}"), 500 + i);
    }
}

/// The index records of identity `id`.
fn index_records(storage: &MemoryStorage, id: &str) -> Vec<Kv> {
    storage
        .range(
            WS,
            &RangeQuery {
                range: KeyRange::prefix(&keys::identity(
                    keys::SEARCH_POSTINGS,
                    &data_id_in(storage, WS, id),
                )),
                limit: 0,
                reverse: false,
            },
        )
        .expect("range")
}

#[test]
fn test_delete_and_reset_remove_hits_and_the_index() {
    let storage = sample();
    fill(&storage, KEY, index::BLOCK_ENTRIES);
    create(&storage, "agent:main:keep", "k1");
    say(&storage, "agent:main:keep", Role::User, "parser kept", 5);
    fill(&storage, "agent:main:keep", index::BLOCK_ENTRIES);
    assert!(!index_records(&storage, "s1").is_empty());
    run(&storage, crate::delete_session(WS, KEY, None)).expect("delete");
    assert_eq!(
        ids(&find(&storage, "parser").expect("search")),
        [("agent:main:keep".to_owned(), 1)]
    );
    assert!(index_records(&storage, "s1").is_empty());
    assert!(!index_records(&storage, "k1").is_empty());
    // The removal function alone: one range delete per tag (the index's, its old one).
    let mut batch = Batch::default();
    index::stage_removal(&mut batch, &data_id_in(&storage, WS, "k1"));
    assert_eq!(batch.mutations.len(), 2);
    storage.commit(WS, batch).expect("commit");
    assert!(index_records(&storage, "k1").is_empty());
    // Without its runs, all the session's entries are its tail: still found.
    assert_eq!(
        ids(&find(&storage, "parser").expect("search")),
        [("agent:main:keep".to_owned(), 1)]
    );
}

#[test]
fn test_truncated_entries_are_not_returned() {
    let storage = sample();
    fill(&storage, KEY, index::BLOCK_ENTRIES);
    run(&storage, crate::truncate(WS, KEY, 2, None, 100)).expect("truncate");
    assert!(entry_ids(&storage, "parser").is_empty());
    assert!(entry_ids(&storage, "nothing").is_empty());
    let last = index::BLOCK_ENTRIES + 6;
    assert_eq!(entry_ids(&storage, &format!("filler {}", last - 7)), [last]);
}

#[test]
fn test_a_damaged_index_value_is_corruption() {
    let storage = sample();
    fill(&storage, KEY, index::BLOCK_ENTRIES);
    let records = index_records(&storage, "s1");
    for Kv { key, .. } in records {
        let mut batch = Batch::default();
        batch.put(key, vec![index::INDEX_FORMAT, 0xff]);
        storage.commit(WS, batch).expect("commit");
    }
    assert_eq!(
        find(&storage, "parser").expect_err("damaged").code(),
        "corruption"
    );
}

#[test]
fn test_only_the_append_that_completes_a_block_writes_index_records() {
    let storage = MemoryStorage::new();
    create(&storage, KEY, "s1");
    let append = |storage: &MemoryStorage, id: u64| {
        let mut op = crate::append_entry(
            WS,
            KEY,
            AppendRequest::new(
                Role::User,
                format!("a message {id} of moderate length about parsers"),
            ),
            1000 + id,
        );
        loop {
            match op.poll() {
                crate::Step::Read(r) => op.handle_read(crate::read_sync(storage, WS, &r)),
                crate::Step::Commit(batch) => {
                    let index = batch
                        .mutations
                        .iter()
                        .filter(|m| matches!(m, crate::Mutation::Put(kv) if kv.key[0] == keys::SEARCH_POSTINGS))
                        .count();
                    op.handle_commit(storage.commit(WS, batch));
                    break index;
                }
                crate::Step::Done(r) => panic!("no commit: {r:?}"),
                crate::Step::Archive(_) => panic!("no archive"),
            }
        }
    };
    for id in 1..=index::BLOCK_ENTRIES * 2 {
        let index = append(&storage, id);
        if id % index::BLOCK_ENTRIES == 0 {
            assert!(
                (2..=usize::from(index::BUCKETS) + 1).contains(&index),
                "{id}: {index}"
            );
        } else {
            assert_eq!(index, 0, "{id}");
        }
    }
    // Every entry is found, in a run or in the tail.
    say(&storage, KEY, Role::User, "tail entry", 5000);
    assert_eq!(entry_ids(&storage, "message 1 "), [1]);
    assert_eq!(entry_ids(&storage, "tail"), [index::BLOCK_ENTRIES * 2 + 1]);
}

/// The write cost of indexing and the query latency, printed (not a check):
/// `cargo test -p spool --release --lib search::tests::measure -- --ignored --nocapture`.
#[test]
#[ignore]
// A measurement, not core code: it reads the clock to time the queries.
#[allow(clippy::disallowed_methods)]
fn measure_write_cost_and_query_latency() {
    use crate::Mutation;
    // A coding session's mix: a short user message, an assistant answer with a tool
    // call, a tool result of compiler output, in turn; ids like a host's (UUIDs) and
    // real clocks.
    let sid = "0b4f2c1e-7d3a-4c55-9e8f-2a6b1c0d9e7f";
    let message = |i: u64| -> AppendRequest {
        match i % 3 {
            0 => AppendRequest::new(
                Role::User,
                format!(
                    "Please fix the failing test {i} in src/parser.rs: parse_nested_list returns the wrong depth"
                ),
            ),
            1 => {
                let mut r = AppendRequest::new(
                    Role::Assistant,
                    format!(
                        "I'll look at the parser. The bug {i} is in parseNestedList, which does not reset the \
                         depth counter when a list closes; the fix moves the decrement before the early \
                         return and adds a regression test for nested empty lists. {}",
                        "Then I will run the whole suite to check nothing else depends on the old behaviour. ".repeat(3)
                    ),
                );
                r.tool_calls = Some(
                    serde_json::json!([{"id": format!("call_{i}"), "type": "function",
                    "function": {"name": "bash", "arguments": format!("{{\"command\":\"cargo test -p parser nested_{i}\"}}")}}]),
                );
                r
            }
            _ => {
                let mut out = String::new();
                for k in 0..20u64 {
                    out.push_str(&format!(
                        "warning: unused variable `depth_{}` --> src/parser/mod_{}.rs:{}:{}\n",
                        (i * 7 + k) % 50,
                        k % 9,
                        40 + (i + k) % 300,
                        9 + k % 4
                    ));
                }
                out.push_str(&format!(
                    "test result: FAILED. {} passed; 1 failed\n",
                    100 + i % 20
                ));
                let mut r = AppendRequest::new(Role::Tool, out);
                r.tool_call_id = Some(format!("call_{}", i - 1));
                r
            }
        }
    };
    let totals = |with_index: bool, n: u64| {
        let storage = MemoryStorage::new();
        create(&storage, KEY, sid);
        let (mut bytes, mut mutations, mut index_bytes, mut index_mutations) = (0, 0, 0, 0);
        for i in 0..n {
            let mut op = crate::append_entry(WS, KEY, message(i), 1_764_000_000_000 + 3_000 * i);
            loop {
                match op.poll() {
                    crate::Step::Read(r) => op.handle_read(crate::read_sync(&storage, WS, &r)),
                    crate::Step::Commit(mut batch) => {
                        let is_index = |key: &[u8]| key.first() == Some(&keys::SEARCH_POSTINGS);
                        let index = Batch {
                            preconditions: Vec::new(),
                            mutations: batch
                                .mutations
                                .iter()
                                .filter(|m| match m {
                                    Mutation::Put(kv) => is_index(&kv.key),
                                    Mutation::Delete(k) => is_index(k),
                                    Mutation::DeleteRange(r) => is_index(&r.start),
                                })
                                .cloned()
                                .collect(),
                        };
                        if !with_index {
                            batch.mutations.retain(|m| !index.mutations.contains(m));
                        }
                        bytes += batch.written_bytes();
                        mutations += batch.mutations.len();
                        index_bytes += index.written_bytes();
                        index_mutations += index.mutations.len();
                        op.handle_commit(storage.commit(WS, batch));
                    }
                    crate::Step::Done(r) => {
                        r.expect("append");
                        break;
                    }
                    crate::Step::Archive(_) => panic!("no archive"),
                }
            }
        }
        (storage, bytes, mutations, index_bytes, index_mutations)
    };
    let n = 1280;
    let (_, base_bytes, base_mut, _, _) = totals(false, n);
    let (_, bytes, muts, ib, im) = totals(true, n);
    println!(
        "per append over {n} appends: without index {:.0} B, {:.2} mutations; with index {:.0} B, {:.2} mutations (+{:.1}% bytes, +{:.1}% mutations); index alone {:.0} B, {:.2} mutations",
        base_bytes as f64 / n as f64,
        base_mut as f64 / n as f64,
        bytes as f64 / n as f64,
        muts as f64 / n as f64,
        100.0 * (bytes as f64 / base_bytes as f64 - 1.0),
        100.0 * (muts as f64 / base_mut as f64 - 1.0),
        ib as f64 / n as f64,
        im as f64 / n as f64,
    );
    // Query latency over a large workspace, built with index records only (fast).
    for (sessions, per) in [(1u64, 100_000u64), (100, 1_000)] {
        let storage = MemoryStorage::new();
        let words: Vec<String> = (0..5000).map(|i| format!("w{i}")).collect();
        for s in 0..sessions {
            let key = format!("agent:a{s}:main");
            let sid = format!("s{s}");
            create(&storage, &key, &sid);
            let mut staged: Vec<Entry> = Vec::new();
            for id in 1..=per {
                // Zipf-ish words plus the shared query terms.
                let mut text = String::new();
                for k in 0..12u64 {
                    let r = (id * 7919 + k * 104_729 + s * 31) % 5000;
                    text.push_str(&words[(r * r / 5000) as usize]);
                    text.push(' ');
                }
                if id % 10 == 0 {
                    text.push_str("parser ");
                }
                if id % 1000 == 0 {
                    text.push_str("rare_token ");
                }
                let entry = Entry::from_request(
                    AppendRequest::new(Role::User, text),
                    id,
                    format!("{sid}-{id}"),
                    id,
                );
                staged.push(entry);
                if staged.len() as u64 == index::BLOCK_ENTRIES {
                    let mut batch = Batch::default();
                    for e in &staged {
                        batch.put(
                            keys::entry(&sid, e.created_at, e.id),
                            crate::storage::entry_record::encode_entry(e, Some(&sid))
                                .expect("encode"),
                        );
                    }
                    index::put_run(&mut batch, &sid, staged[0].id, &index::Run::of(&staged));
                    storage.commit(WS, batch).expect("commit");
                    staged.clear();
                }
            }
            let mut batch = Batch::default();
            for e in &staged {
                batch.put(
                    keys::entry(&sid, e.created_at, e.id),
                    crate::storage::entry_record::encode_entry(e, Some(&sid)).expect("encode"),
                );
            }
            storage.commit(WS, batch).expect("commit");
        }
        let index_bytes: usize = [keys::SEARCH_POSTINGS]
            .iter()
            .map(|&tag| {
                storage
                    .range(
                        WS,
                        &RangeQuery {
                            range: KeyRange::prefix(&[tag]),
                            limit: 0,
                            reverse: false,
                        },
                    )
                    .expect("range")
                    .iter()
                    .map(|kv| kv.key.len() + kv.value.len())
                    .sum::<usize>()
            })
            .sum();
        println!(
            "{sessions} sessions x {per} entries: index {} KiB ({:.0} B per entry)",
            index_bytes / 1024,
            index_bytes as f64 / (sessions * per) as f64
        );
        for q in ["parser", "rare_token", "parser w1", "w1*", "\"w0 w0\""] {
            let (mut reads, mut bytes) = (0, 0usize);
            let mut op = search(
                WS,
                SearchRequest {
                    query: q.into(),
                    limit: 20,
                    cursor: None,
                },
            );
            let page = loop {
                match op.poll() {
                    crate::Step::Read(r) => {
                        reads += 1;
                        let result = crate::read_sync(&storage, WS, &r);
                        bytes += match &result {
                            Ok(crate::ReadResult::Value(v)) => v.as_ref().map_or(0, Vec::len),
                            Ok(crate::ReadResult::Pairs(kvs)) => {
                                kvs.iter().map(|kv| kv.key.len() + kv.value.len()).sum()
                            }
                            Err(_) => 0,
                        };
                        op.handle_read(result)
                    }
                    crate::Step::Done(r) => break r.expect("search"),
                    _ => panic!("search only reads"),
                }
            };
            println!(
                "{sessions} sessions x {per} entries, `{q}`: {} hits, {reads} reads of {} KiB",
                page.hits.len(),
                bytes / 1024
            );
        }
    }
}

/// Stages the index of entries `ids` of identity `s1` into a batch holding `filler`
/// mutations already, reading the storage as an append would.
fn staged(storage: &MemoryStorage, ids: std::ops::RangeInclusive<u64>, filler: usize) -> Batch {
    let data_id = data_id_in(storage, WS, "s1");
    let op = crate::Operation::new(WS, move |io| {
        let (ids, data_id) = (ids.clone(), data_id.clone());
        async move {
            let identity = Identity {
                data_id: &data_id,
                session_id: "s1",
            };
            let entries: Vec<Entry> = ids
                .map(|id| {
                    Entry::from_request(
                        AppendRequest::new(Role::User, format!("late words {id}")),
                        id,
                        format!("x{id}"),
                        1000 + id,
                    )
                })
                .collect();
            let mut batch = Batch::default();
            for i in 0..filler {
                batch.delete(vec![b'~', i as u8]);
            }
            index::stage_entries(&io, &mut batch, identity, &entries).await?;
            batch.mutations.drain(..filler);
            Ok(batch)
        }
    });
    run(storage, op).expect("stage")
}

#[test]
fn test_a_crossing_append_cuts_a_run_unless_the_commit_is_full() {
    let storage = MemoryStorage::new();
    create(&storage, KEY, "s1");
    for i in 0..index::BLOCK_ENTRIES - 2 {
        say(&storage, KEY, Role::User, &format!("word{i}"), 10 + i);
    }
    assert!(index_records(&storage, "s1").is_empty());
    let (from, to) = (index::BLOCK_ENTRIES - 1, index::BLOCK_ENTRIES + 4);
    // No room left in the commit: no run now (the next crossing cuts it).
    let full = staged(&storage, from..=to, crate::MAX_BATCH_MUTATIONS - 40);
    assert!(full.mutations.is_empty());
    // Room: one run of the tail and the new entries, a record per bucket used and the
    // doc table; being the identity's first run, it removes the index under the old tag.
    let cut = staged(&storage, from..=to, 0);
    let puts = cut
        .mutations
        .iter()
        .filter(|m| matches!(m, crate::Mutation::Put(kv) if kv.key[0] == keys::SEARCH_POSTINGS))
        .count();
    assert!(
        puts >= 2 && puts <= usize::from(index::BUCKETS) + 1,
        "{puts}"
    );
    assert_eq!(cut.mutations.len(), puts + 1);
    assert!(
        cut.mutations
            .contains(&crate::Mutation::DeleteRange(KeyRange::prefix(
                &keys::identity(keys::SEARCH_POSTINGS_V1, &data_id_in(&storage, WS, "s1"))
            )))
    );
    storage.commit(WS, cut).expect("commit");
    let records = index_records(&storage, "s1");
    let docs = records
        .iter()
        .find(|kv| kv.key == index::run_key(&data_id_in(&storage, WS, "s1"), index::DOCS, 1))
        .expect("the run's doc table");
    let table =
        index::decode(&docs.key, &docs.value, |_: &[u8]| index::Want::SkipRest).expect("decodes");
    assert_eq!(table.docs.len() as u64, to);
    assert_eq!(entry_ids(&storage, "word0"), [1]);
}

#[test]
fn test_one_call_of_many_entries_is_indexed_in_its_commit() {
    let storage = MemoryStorage::new();
    create(&storage, KEY, "s1");
    let requests: Vec<AppendRequest> = (0..crate::MAX_APPEND_ENTRIES)
        .map(|i| AppendRequest::new(Role::User, format!("bulk item{i} shared")))
        .collect();
    run(&storage, crate::append_entries(WS, KEY, requests, 10)).expect("append");
    assert_eq!(entry_ids(&storage, "item999"), [1000]);
    assert_eq!(entry_ids(&storage, "item0"), [1]);
    let page = find_page(&storage, "shared", 100, None).expect("search");
    assert_eq!(page.hits.len(), 100);
    assert!(page.next_cursor.is_some());
}

#[test]
fn test_imported_sessions_are_searchable() {
    use crate::import::{self, ImportFormat, ImportRequest};
    let log = import::parse(
        ImportFormat::ClaudeCode,
        include_str!(
            "../../../tests/fixtures/import/claude-code/-home-dev-acme/6f1c2a7e-2b4d-4e8a-9d3f-1a2b3c4d5e6f.jsonl"
        ),
    );
    let session = log.sessions.into_iter().next().expect("a session");
    let request = ImportRequest {
        key: "import:claude:0".into(),
        session_id: "imp-0".into(),
        format: ImportFormat::ClaudeCode,
        session,
        parent_key: None,
        prices: None,
    };
    let storage = MemoryStorage::new();
    run(
        &storage,
        import::import_session(WS, request, 9_999_999_999_999),
    )
    .expect("import");
    // The tool call's command, the result's text and the reasoning are all found.
    let page = find(&storage, "\"cargo test\" tool:bash").expect("search");
    assert!(!page.hits.is_empty(), "{page:?}");
    assert!(
        !find(&storage, "depth counter")
            .expect("search")
            .hits
            .is_empty()
    );
    let reasoning = find(&storage, "\"run the tests first\"").expect("search");
    assert_eq!(reasoning.hits[0].snippet.field, "reasoning");
    // A re-import writes nothing new and finds each entry once.
    let before = find(&storage, "depth").expect("search").hits.len();
    let log = import::parse(
        ImportFormat::ClaudeCode,
        include_str!(
            "../../../tests/fixtures/import/claude-code/-home-dev-acme/6f1c2a7e-2b4d-4e8a-9d3f-1a2b3c4d5e6f.jsonl"
        ),
    );
    let session = log.sessions.into_iter().next().expect("a session");
    let again = ImportRequest {
        key: "import:claude:0".into(),
        session_id: "imp-0".into(),
        format: ImportFormat::ClaudeCode,
        session,
        parent_key: None,
        prices: None,
    };
    run(
        &storage,
        import::import_session(WS, again, 9_999_999_999_999),
    )
    .expect("reimport");
    assert_eq!(find(&storage, "depth").expect("search").hits.len(), before);
}

#[test]
fn test_entries_a_persisted_compaction_keeps_are_searchable() {
    let storage = sample();
    let persist = crate::compaction::PersistRequest {
        summary_text: "short summary".into(),
        kept_entries: vec![AppendRequest::new(
            Role::Assistant,
            "kept reply about zebras",
        )],
        compaction_id: None,
        trigger_reason: None,
    };
    run(
        &storage,
        crate::compaction::persist_compaction_result(WS, KEY, persist, 100),
    )
    .expect("persist");
    let page = find(&storage, "zebras").expect("search");
    assert_eq!(page.hits.len(), 1);
    assert_eq!(page.hits[0].entry_id, 7);
    // The entries it replaced are gone from search; earlier ones are still found.
    assert!(
        find(&storage, "nothing relevant")
            .expect("search")
            .hits
            .is_empty()
    );
    assert_eq!(entry_ids(&storage, "parser"), [1]);
}

#[test]
#[ignore]
fn measure_segment_sizes() {
    let storage = MemoryStorage::new();
    create(&storage, KEY, "0b4f2c1e-7d3a-4c55-9e8f-2a6b1c0d9e7f");
    let texts = [
        "Please fix the failing test 12 in src/parser.rs: parse_nested_list returns the wrong depth".to_owned(),
        "I'll look at the parser. The bug 13 is in parseNestedList, which does not reset the depth counter when a list closes; the fix moves the decrement before the early return and adds a regression test for nested empty lists.".to_owned(),
        (0..20u64).map(|k| format!("warning: unused variable `depth_{}` --> src/parser/mod_{}.rs:{}:{}\n", (14 * 7 + k) % 50, k % 9, 40 + (14 + k) % 300, 9 + k % 4)).collect::<String>(),
    ];
    for text in texts {
        let e = Entry::from_request(
            AppendRequest::new(Role::User, text.clone()),
            5,
            "x".into(),
            1_764_000_000_000,
        );
        let seg = index::invert(std::slice::from_ref(&e));
        let bytes = index::encode(&seg);
        let term_bytes: usize = seg.terms.keys().map(String::len).sum();
        println!(
            "content {} B, entry record {} B, segment {} B ({} terms, {} B of term text)",
            text.len(),
            crate::storage::entry_record::encode_entry(&e, None)
                .expect("e")
                .len(),
            bytes.len(),
            seg.terms.len(),
            term_bytes
        );
    }
}

#[test]
fn test_history_of_a_deleted_or_reset_parent_is_found_through_its_branches_once() {
    let storage = MemoryStorage::new();
    create(&storage, KEY, "s1");
    for i in 1..=40u64 {
        say(
            &storage,
            KEY,
            Role::User,
            &format!("step{i} of the parser fix"),
            10 + i,
        );
    }
    // Two branches of the whole history, one of its first 10 entries.
    for (child, id) in [("agent:main:b", "b1"), ("agent:main:c", "c1")] {
        run(
            &storage,
            crate::branch(WS, KEY, child, crate::BranchRequest::fork(id), 100),
        )
        .expect("branch");
    }
    run(
        &storage,
        crate::branch(
            WS,
            KEY,
            "agent:main:a",
            crate::BranchRequest {
                fork_transcript: true,
                fork_before_message_id: Some("s1-11".into()),
                ..crate::BranchRequest::empty("a1")
            },
            100,
        ),
    )
    .expect("branch before a message");
    say(
        &storage,
        "agent:main:c",
        Role::User,
        "the parser on branch c",
        200,
    );
    let parser_hits = |storage: &MemoryStorage| {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page = find_page(storage, "parser", 7, cursor).expect("page");
            all.extend(
                page.hits
                    .iter()
                    .map(|h| (h.session_key.clone(), h.session_id.clone(), h.entry_id)),
            );
            cursor = page.next_cursor;
            if cursor.is_none() {
                return all;
            }
        }
    };
    let live = parser_hits(&storage);
    assert_eq!(live.len(), 41);
    assert!(live.iter().filter(|h| h.1 == "s1").all(|h| h.0 == KEY));

    run(&storage, crate::delete_session(WS, KEY, None)).expect("delete the parent");
    let mut after = parser_hits(&storage);
    after.sort();
    // Entries 1–10: the first branch in key order that reads them (a); 11–40: b; c's own.
    let mut expected: Vec<(String, String, u64)> = (1..=10)
        .map(|i| ("agent:main:a".to_owned(), "s1".to_owned(), i))
        .chain((11..=40).map(|i| ("agent:main:b".to_owned(), "s1".to_owned(), i)))
        .chain([("agent:main:c".to_owned(), "c1".to_owned(), 41)])
        .collect();
    expected.sort();
    assert_eq!(after, expected);
    // A session filter searches that session's reading of it.
    let only_c = find_page(&storage, "parser session:agent:main:c", 100, None).expect("c");
    assert_eq!(only_c.hits.len(), 41);
    assert!(only_c.hits.iter().all(|h| h.session_key == "agent:main:c"));
    let only_a = find_page(&storage, "step10 session:agent:main:a", 100, None).expect("a");
    assert_eq!(ids(&only_a), [("agent:main:a".to_owned(), 10)]);
    assert!(
        find_page(&storage, "step11 session:agent:main:a", 100, None)
            .expect("a")
            .hits
            .is_empty(),
        "a reads only the entries before s1-11"
    );

    // Reset a branch's parent instead: its old generation is found through the branch.
    let storage = MemoryStorage::new();
    create(&storage, KEY, "s1");
    say(&storage, KEY, Role::User, "the old parser plan", 10);
    run(
        &storage,
        crate::branch(
            WS,
            KEY,
            "agent:main:b",
            crate::BranchRequest::fork("b1"),
            20,
        ),
    )
    .expect("branch");
    run(
        &storage,
        crate::apply_intent(WS, KEY, crate::Intent::ResetSameKey, "s2", 30),
    )
    .expect("reset");
    say(&storage, KEY, Role::User, "the new parser plan", 40);
    let mut found: Vec<(String, String)> = find(&storage, "parser plan")
        .expect("search")
        .hits
        .iter()
        .map(|h| (h.session_key.clone(), h.session_id.clone()))
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            ("agent:main:b".to_owned(), "s1".to_owned()),
            (KEY.to_owned(), "s2".to_owned())
        ]
    );
}

#[test]
fn test_a_walk_of_increasing_ids_finds_what_a_search_finds() {
    // Gaps of every size, so the doubling steps land before, on and past each index.
    let indexes: Vec<u32> = (0..300u32).map(|i| i * i / 7 + i).collect();
    let found = Found(indexes.iter().map(|&at| (at, at % 5 + 1)).collect());
    for stride in [1, 2, 3, 5, 17, 64, 301] {
        let mut from = 0;
        for at in (0..indexes[indexes.len() - 1] + 3).step_by(stride) {
            let got = found.seek(&mut from, at);
            let expected = indexes.binary_search(&at).ok().map(|_| at % 5 + 1);
            assert_eq!(got, expected, "stride {stride}, index {at}");
            assert_eq!(
                from,
                indexes.partition_point(|&x| x < at),
                "stride {stride}, index {at}"
            );
        }
    }
    assert_eq!(Found::default().seek(&mut 0, 5), None);
}

#[test]
fn test_an_index_written_in_an_older_format_answers_alike() {
    let storage = sample();
    fill(&storage, KEY, 2 * index::BLOCK_ENTRIES);
    let queries = [
        "parser",
        "pars*",
        "parseNestedList",
        "src/parser.rs",
        "\"cannot borrow\"",
        "filler",
        "日本",
        "role:assistant lists",
    ];
    let before: Vec<SearchPage> = queries
        .iter()
        .map(|q| find(&storage, q).expect(q))
        .collect();
    let written = index_records(&storage, "s1");
    assert!(written.len() > 2, "runs were written");
    assert!(written.iter().all(|kv| kv.value[0] == index::INDEX_FORMAT));
    for format in [index::INDEX_FORMAT_V1, index::INDEX_FORMAT_V2] {
        let mut batch = Batch::default();
        for Kv { key, value } in &written {
            let segment = index::decode(key, value, |_: &[u8]| index::Want::Keep).expect("decodes");
            batch.put(key.clone(), index::encode_in(format, &segment));
        }
        storage.commit(WS, batch).expect("commit");
        assert!(
            index_records(&storage, "s1")
                .iter()
                .all(|kv| kv.value[0] == format)
        );
        for (query, page) in queries.iter().zip(&before) {
            assert!(!page.hits.is_empty(), "{query}");
            assert_eq!(
                &find(&storage, query).expect(query),
                page,
                "format {format}: {query}"
            );
        }
    }
}

#[test]
fn test_a_bucket_decoded_for_its_lookups_keeps_what_they_match() {
    // Terms around the edges of prefixes and spellings, in one segment.
    let words = [
        "a",
        "pa",
        "par",
        "pars",
        "parse",
        "parse_it",
        "parseit",
        "parser",
        "parsf",
        "parsz",
        "pb",
        "q",
        "zz",
        "日本",
        "日本語",
        "\u{1}r:user",
        "ÿ",
    ];
    // And enough others that the value holds several blocks of terms.
    let others: Vec<String> = (0..40)
        .map(|i| format!("m{i:02}"))
        .chain((0..20).map(|i| format!("pars{i:02}")))
        .collect();
    let words: Vec<&str> = words
        .into_iter()
        .chain(others.iter().map(String::as_str))
        .collect();
    let mut segment = index::Segment::default();
    for (at, w) in words.iter().enumerate() {
        segment.terms.insert((*w).to_owned(), vec![(at as u32, 1)]);
    }
    segment.docs = (0..words.len() as u64)
        .map(|id| index::Doc {
            id: id + 1,
            created_at: 7,
            len: 1,
        })
        .collect();
    let value = index::encode(&segment);
    let lookup = |text: &str, also: &[&str], prefix: bool| Lookup {
        text: text.to_owned(),
        also: also.iter().map(|a| (*a).to_owned()).collect(),
        prefix,
        scored: true,
    };
    let sets: Vec<Vec<Lookup>> = vec![
        vec![lookup("pars", &[], true)],
        vec![lookup("parse", &[], false)],
        vec![lookup("parseit", &["parse_it"], false)],
        vec![
            lookup("parse_it", &["parseit"], false),
            lookup("a", &[], false),
        ],
        vec![lookup("pa", &[], true), lookup("q", &[], false)],
        vec![lookup("日", &[], true)],
        vec![lookup("ÿ", &[], true)],
        vec![lookup("zzz", &[], false)],
        vec![lookup("\u{1}r:user", &[], false)],
        vec![lookup("m20", &[], false), lookup("pars1", &[], true)],
        vec![lookup("m3", &[], true), lookup("m39", &["pars19"], false)],
        vec![lookup("m", &[], true)],
    ];
    for lookups in &sets {
        let everything: Vec<u8> = lookups.iter().flat_map(Lookup::buckets).collect();
        for bucket in everything {
            let want = BucketWant::new(lookups, bucket);
            let got = index::decode(b"k", &value, &want).expect("decodes");
            let expected: Vec<&String> = segment
                .terms
                .keys()
                .filter(|t| want.lookups.iter().any(|l| l.matches(t.as_bytes())))
                .collect();
            assert_eq!(
                got.terms.keys().collect::<Vec<_>>(),
                expected,
                "{lookups:?} in bucket {bucket}"
            );
        }
    }
}
