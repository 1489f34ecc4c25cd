//! The compiled-component cache: stored on first load, hit afterwards, replaced when
//! unusable, skipped when the directory cannot be written.

use spool_host::{CacheStatus, Runtime, SqliteStorage};

fn works(runtime: &Runtime) {
    let mut instance = runtime
        .instantiate(
            SqliteStorage::open_in_memory().expect("open"),
            spool::NoArchive,
        )
        .expect("instantiate");
    instance
        .call(
            "default",
            spool::ops::CreateSession {
                key: "agent:a:main".to_owned(),
                session_id: "s1".to_owned(),
                now_ms: 1,
            },
        )
        .expect("create");
    assert!(
        instance
            .call(
                "default",
                spool::ops::GetSession {
                    key: "agent:a:main".to_owned()
                }
            )
            .expect("get")
            .is_some()
    );
}

#[test]
fn test_cache_is_stored_then_hit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = Runtime::load(Some(dir.path())).expect("load");
    assert_eq!(first.cache_status(), &CacheStatus::Stored);
    let file = first.cache_file().expect("cache file").to_path_buf();
    assert!(file.is_file() && file.starts_with(dir.path()));
    let second = Runtime::load(Some(dir.path())).expect("load again");
    assert_eq!(second.cache_status(), &CacheStatus::Hit);
    works(&first);
    works(&second);
    // Only the cache file is left: no temporary files.
    let names: Vec<_> = std::fs::read_dir(dir.path()).expect("list").collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn test_corrupt_cache_file_is_recompiled_and_replaced() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = Runtime::load(Some(dir.path()))
        .expect("load")
        .cache_file()
        .expect("file")
        .to_path_buf();
    std::fs::write(&file, b"definitely not a compiled component").expect("corrupt it");
    let runtime = Runtime::load(Some(dir.path())).expect("load over a corrupt file");
    assert_eq!(runtime.cache_status(), &CacheStatus::Stored);
    works(&runtime);
    let again = Runtime::load(Some(dir.path())).expect("load the replaced file");
    assert_eq!(again.cache_status(), &CacheStatus::Hit);
}

#[test]
fn test_unwritable_cache_dir_still_works() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A directory below a regular file cannot be created, even by root.
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, b"").expect("write");
    let runtime = Runtime::load(Some(&blocker.join("cache"))).expect("load without a cache");
    assert!(
        matches!(runtime.cache_status(), CacheStatus::Uncached(reason) if reason.contains("cache")),
        "{:?}",
        runtime.cache_status()
    );
    works(&runtime);
}

#[test]
fn test_no_cache_dir_compiles() {
    let runtime = Runtime::load(None).expect("load");
    assert!(matches!(runtime.cache_status(), CacheStatus::Uncached(_)));
    assert!(runtime.cache_file().is_none());
    works(&runtime);
}
