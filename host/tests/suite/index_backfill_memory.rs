//! The search backfill in bounded memory: history of more than 20 MB, written before the
//! index (its index rows removed), is indexed through the component in a guest whose
//! linear memory may grow to 8 MiB at most, and is then found whole.

use spool::{AppendRequest, Role};
use spool_host::Spool;

const KEY: &str = "agent:big:main";
const LIMIT: usize = 8 * 1024 * 1024;

/// About `bytes` of prose whose words vary with `seed` (a large vocabulary).
fn text(seed: u64, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 16);
    let mut n = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    while out.len() < bytes {
        n ^= n << 13;
        n ^= n >> 7;
        n ^= n << 17;
        out.push_str(&format!("w{:x} ", n % 50_000));
    }
    out
}

#[test]
fn test_backfill_of_a_20_mb_history_fits_in_8_mib_of_guest_memory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("spool.db");
    let mut spool = Spool::open(&db).expect("open");
    spool.create_session(KEY).expect("create");
    let mut total = 0usize;
    for batch in 0..20u64 {
        let requests: Vec<AppendRequest> = (0..20u64)
            .map(|i| {
                let n = batch * 20 + i + 1;
                // Entries of 48 KiB, and three tool outputs of 1 MiB.
                let size = if n % 150 == 0 { 1024 * 1024 } else { 48 * 1024 };
                AppendRequest::new(Role::Tool, format!("marker{n} {}", text(n, size)))
            })
            .collect();
        total += requests.iter().map(|r| r.content.len()).sum::<usize>();
        spool.append_entries(KEY, requests).expect("append");
    }
    drop(spool);
    assert!(total > 20 * 1024 * 1024, "{total} bytes");
    let conn = rusqlite::Connection::open(&db).expect("sqlite");
    // The search index's rows (tag `I`): what a database from before the index lacks.
    let removed = conn
        .execute("DELETE FROM kv WHERE substr(key, 1, 1) = x'49'", [])
        .expect("remove the index rows");
    assert!(removed > 0, "the appends wrote index rows");
    drop(conn);

    let mut limited = Spool::builder()
        .db_path(&db)
        .memory_limit(LIMIT)
        .open()
        .expect("open with a memory limit");
    let mut cursor = None;
    let mut indexed = 0u64;
    loop {
        let progress = limited
            .index_backfill(cursor.clone())
            .unwrap_or_else(|e| panic!("backfill under {LIMIT} bytes: {e}"));
        indexed += u64::from(progress.indexed_entries);
        cursor = progress.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    // A tail shorter than a block is left to appends (queries read it whole).
    let block = spool::search::index::BLOCK_ENTRIES;
    assert!((400 - (block - 1)..=400).contains(&indexed), "{indexed}");
    for n in [1, 150, 399, 400] {
        let page = limited
            .search(format!("marker{n}"), 5u32, None)
            .expect("search");
        assert_eq!(page.unindexed, 0);
        let ids: Vec<u64> = page.hits.iter().map(|h| h.entry_id).collect();
        assert_eq!(ids, [n], "marker{n}");
    }
}
