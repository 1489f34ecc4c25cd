//! Identities created by this build name their keys by a short minted data id (record
//! format 7): what the keys hold, how ids are claimed and given back, and that a
//! branch still reads the generated message ids of a minted parent it outlives.

use crate::support;

use spool::{AppendRequest, BranchRequest, Intent, MemoryStorage, Role, keys, run};

const WS: &str = "default";
const KEY: &str = "agent:main:main";
const SID: &str = "464ba903-01ca-4b8c-a114-bc8d7bf7f7fe";

fn data_id(storage: &MemoryStorage, key: &str) -> String {
    run(storage, spool::session_data_id(WS, key))
        .expect("read")
        .expect("a session")
}

fn oldest_first() -> spool::PageRequest {
    spool::PageRequest {
        order: spool::Order::OldestFirst,
        cursor: None,
        limit: 100,
    }
}

fn say(storage: &MemoryStorage, key: &str, text: &str, now: u64) -> spool::Entry {
    run(
        storage,
        spool::append_entry(WS, key, AppendRequest::new(Role::User, text), now),
    )
    .expect("append")
}

#[test]
fn test_a_new_identity_keys_its_records_by_a_short_minted_id() {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, SID, 1)).expect("create");
    for i in 0..3 {
        say(&storage, KEY, &format!("entry {i}"), 1_764_000_000_000 + i);
    }
    let id = data_id(&storage, KEY);
    assert!(
        keys::is_minted(&id) && id.len() >= 3 && id.len() < SID.len(),
        "{id}"
    );
    let rows = support::dump(&storage, WS);
    let entries: Vec<&spool::Kv> = rows
        .iter()
        .filter(|kv| kv.key.starts_with(&keys::entries(&id)))
        .collect();
    assert_eq!(entries.len(), 3);
    for kv in &entries {
        // `e`, the id and its terminator, then a 7-byte time and a 2-byte id.
        assert_eq!(kv.key.len(), 1 + id.len() + 1 + 7 + 2, "{:?}", kv.key);
    }
    // The session id is in the session record and the registry, in no key.
    for kv in &rows {
        let holds = |bytes: &[u8]| bytes.windows(SID.len()).any(|w| w == SID.as_bytes());
        assert!(!holds(&kv.key), "{}", keys::display(&kv.key));
    }
    let registry: Vec<&spool::Kv> = rows
        .iter()
        .filter(|kv| kv.key[0] == keys::DATA_ID)
        .collect();
    assert_eq!(registry.len(), 1);
    assert_eq!(registry[0].key, keys::data_id(&id));
    assert_eq!(registry[0].value, SID.as_bytes());
    // Reads give the entries their generated message ids under the session id.
    let entry = run(&storage, spool::get_entry(WS, KEY, &format!("{SID}-2")))
        .expect("get")
        .expect("found");
    assert_eq!(entry.content, "entry 1");
}

#[test]
fn test_colliding_ids_each_get_a_slot_of_their_own() {
    // 300 session ids in 3,844 two-character slots collide several times over.
    let storage = MemoryStorage::new();
    let count = 300;
    for n in 0..count {
        let key = format!("agent:main:s{n}");
        run(
            &storage,
            spool::create_session(WS, &key, &format!("sid-{n}"), 1),
        )
        .expect("create");
        say(&storage, &key, &format!("only in {n}"), 2);
    }
    let ids: Vec<String> = (0..count)
        .map(|n| data_id(&storage, &format!("agent:main:s{n}")))
        .collect();
    let distinct: std::collections::BTreeSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), count, "every identity has its own keys");
    assert!(
        ids.iter().any(|id| id.len() > 3),
        "a collision took a longer id: {ids:?}"
    );
    for n in 0..count {
        let page = run(
            &storage,
            spool::read_page(WS, &format!("agent:main:s{n}"), oldest_first()),
        )
        .expect("read");
        let contents: Vec<&str> = page.entries.iter().map(|e| e.content.as_str()).collect();
        assert_eq!(contents, [format!("only in {n}").as_str()]);
    }
    // Deleting every other session gives its slot back; the others keep theirs.
    for n in (0..count).step_by(2) {
        run(
            &storage,
            spool::delete_session(WS, &format!("agent:main:s{n}"), None),
        )
        .expect("delete");
    }
    let registry = support::dump(&storage, WS)
        .into_iter()
        .filter(|kv| kv.key[0] == keys::DATA_ID)
        .count();
    assert_eq!(registry, count / 2);
}

#[test]
fn test_one_session_id_under_two_keys_shares_its_keys_as_before() {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, SID, 1)).expect("create");
    run(
        &storage,
        spool::create_session(WS, "agent:main:twin", SID, 1),
    )
    .expect("create");
    assert_eq!(data_id(&storage, KEY), data_id(&storage, "agent:main:twin"));
}

#[test]
fn test_a_branch_reads_its_reset_parents_generated_message_ids() {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, SID, 1)).expect("create");
    for i in 0..3 {
        say(&storage, KEY, &format!("parent {i}"), 10 + i);
    }
    let child = "agent:main:child";
    run(
        &storage,
        spool::branch(WS, KEY, child, BranchRequest::fork("child-sid"), 20),
    )
    .expect("branch");
    // The parent's identity is retired (its branch still reads it): no session record
    // names it any more, the branch's layer does.
    run(
        &storage,
        spool::apply_intent(WS, KEY, Intent::ResetSameKey, "next-sid", 30),
    )
    .expect("reset");
    let found = run(&storage, spool::get_entry(WS, child, &format!("{SID}-2")))
        .expect("get")
        .expect("the inherited entry");
    assert_eq!(found.content, "parent 1");
    let page = run(&storage, spool::read_page(WS, child, oldest_first())).expect("read");
    let ids: Vec<String> = page.entries.iter().map(|e| e.message_id.clone()).collect();
    assert_eq!(ids, [1, 2, 3].map(|n| format!("{SID}-{n}")));
    // The child's own appends carry its own session id.
    let own = say(&storage, child, "child 4", 40);
    assert_eq!(own.message_id, "child-sid-4");
    assert_ne!(data_id(&storage, child), data_id(&storage, KEY));
}

#[test]
fn test_a_reset_back_to_an_earlier_session_id_starts_empty_while_branches_read_the_old() {
    let storage = MemoryStorage::new();
    run(&storage, spool::create_session(WS, KEY, SID, 1)).expect("create");
    for i in 0..2 {
        say(&storage, KEY, &format!("first {i}"), 10 + i);
    }
    let child = "agent:main:child";
    run(
        &storage,
        spool::branch(WS, KEY, child, BranchRequest::fork("child-sid"), 20),
    )
    .expect("branch");
    for (sid, now) in [("second-sid", 30), (SID, 40)] {
        run(
            &storage,
            spool::apply_intent(WS, KEY, Intent::ResetSameKey, sid, now),
        )
        .expect("reset");
    }
    let page = run(&storage, spool::read_page(WS, KEY, oldest_first())).expect("read");
    assert!(page.entries.is_empty(), "{:?}", page.entries);
    let own = say(&storage, KEY, "third generation", 50);
    assert_eq!(own.id, 1);
    let page = run(&storage, spool::read_page(WS, child, oldest_first())).expect("read");
    let contents: Vec<&str> = page.entries.iter().map(|e| e.content.as_str()).collect();
    assert_eq!(contents, ["first 0", "first 1"]);
}
