//! The session lifecycle through the friendly `Spool` API, and the native reset archive.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use spool::{
    AppendRequest, FinishStatus, Intent, NewContextState, Role, SessionStatus, TurnUsage,
    UpdateRequest,
};
use spool_host::{ArchiveDir, Spool};

const KEY: &str = "agent:main:main";

/// A clock the test can move: every read returns the current value plus one.
fn clock() -> (Arc<AtomicU64>, impl FnMut() -> u64 + Send + 'static) {
    let now = Arc::new(AtomicU64::new(1_000));
    let shared = now.clone();
    (now, move || shared.fetch_add(1, Ordering::SeqCst))
}

fn numbered_ids() -> impl FnMut() -> String + Send + 'static {
    let mut n = 0;
    move || {
        n += 1;
        format!("id-{n}")
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

/// The archive files under `dir` (archives live in one subdirectory per workspace).
fn json_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("read the archive dir")
        .flat_map(|e| {
            let sub = e.expect("dir entry").path();
            assert!(
                sub.is_dir(),
                "only workspace directories in {dir:?}: {sub:?}"
            );
            assert_eq!(mode(&sub), 0o700, "workspace dir mode");
            std::fs::read_dir(sub)
                .expect("read a workspace dir")
                .map(|e| e.expect("dir entry").path())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn test_reset_writes_one_private_archive_beside_the_database() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut spool = Spool::builder()
        .db_path(dir.path().join("spool.db"))
        .ids(numbered_ids())
        .open()
        .expect("open");
    let archives = dir.path().join("spool-archives");
    assert_eq!(spool.archive_dir(), Some(archives.as_path()));
    spool.create_session(KEY).expect("create");
    for text in ["first message", "second message"] {
        spool
            .append_entry(KEY, AppendRequest::new(Role::User, text))
            .expect("append");
    }
    let state = NewContextState {
        provider: "portable".into(),
        model: None,
        state_kind: "structured_summary_v1".into(),
        payload: json!({"summary": "two messages"}),
        covered_through_id: 2,
        expires_at: None,
        portable: true,
        cacheable: false,
    };
    spool.save_state(KEY, state, None).expect("save state");

    let reset = spool.reset(KEY).expect("reset");
    assert!(reset.rotated && !reset.created);
    assert_eq!(reset.session.session_id, "id-2");
    assert_eq!((reset.session.epoch, reset.session.entry_count), (1, 0));
    let status = reset.archive.expect("an existing session is archived");
    assert!(status.written, "{status:?}");
    assert_eq!(status.error, None);

    let files = json_files(&archives);
    assert_eq!(
        files.len(),
        1,
        "exactly one file, no temporary left: {files:?}"
    );
    let file = &files[0];
    assert_eq!(file.extension().and_then(|e| e.to_str()), Some("json"));
    let name = file.file_name().and_then(|n| n.to_str()).expect("name");
    assert!(name.starts_with("agent_main_main-id-1-"), "{name}");
    assert_eq!(mode(file), 0o600, "archive file mode");
    assert_eq!(mode(&archives), 0o700, "archive dir mode");
    let archive: Value =
        serde_json::from_str(&std::fs::read_to_string(file).expect("read")).expect("JSON");
    assert_eq!(archive["session_key"], KEY);
    assert_eq!(archive["session_id"], "id-1");
    assert_eq!(archive["epoch"], 0);
    assert_eq!(archive["transcript_entries"][0]["content"], "first message");
    assert_eq!(
        archive["transcript_entries"].as_array().map(Vec::len),
        Some(2)
    );
    assert!(archive["summaries"].is_array());

    // The reset invalidated the state and emptied the transcript.
    assert!(spool.list_states(KEY, true).expect("states").is_empty());
    let all = spool.list_states(KEY, false).expect("states");
    assert_eq!(all[0].invalid_reason.as_deref(), Some("session_reset"));
    assert!(spool.transcript(KEY).expect("transcript").is_empty());

    // A second reset adds a second file.
    spool.reset(KEY).expect("reset again");
    assert_eq!(json_files(&archives).len(), 2);
}

#[test]
fn test_existing_loose_archive_dir_is_tightened() {
    let dir = tempfile::tempdir().expect("temp dir");
    let archives = dir.path().join("shared");
    std::fs::create_dir(&archives).expect("mkdir");
    std::fs::set_permissions(&archives, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut spool = Spool::builder()
        .archive_dir(&archives)
        .open()
        .expect("open");
    spool.create_session(KEY).expect("create");
    assert!(
        spool
            .reset(KEY)
            .expect("reset")
            .archive
            .expect("status")
            .written
    );
    assert_eq!(mode(&archives), 0o700);
    assert_eq!(json_files(&archives).len(), 1);
}

#[test]
fn test_unwritable_archive_does_not_block_the_reset() {
    let dir = tempfile::tempdir().expect("temp dir");
    let occupied = dir.path().join("not-a-dir");
    std::fs::write(&occupied, b"a regular file").expect("write");
    let mut spool = Spool::builder()
        .db_path(dir.path().join("spool.db"))
        .archive_dir(&occupied)
        .open()
        .expect("open");
    let before = spool.create_session(KEY).expect("create");
    spool
        .append_entry(KEY, AppendRequest::new(Role::User, "keep me?"))
        .expect("append");
    let reset = spool.reset(KEY).expect("the reset still succeeds");
    assert_ne!(reset.session.session_id, before.session_id);
    assert_eq!(reset.session.epoch, 1);
    let status = reset.archive.expect("status");
    assert!(!status.written);
    let error = status.error.expect("a reason");
    assert!(error.contains("not-a-dir"), "{error}");
    assert!(spool.transcript(KEY).expect("transcript").is_empty());
    assert_eq!(
        std::fs::read(&occupied).expect("untouched"),
        b"a regular file"
    );
}

#[test]
fn test_in_memory_spool_keeps_no_archive_and_says_so() {
    let mut spool = Spool::builder().open().expect("open");
    assert_eq!(spool.archive_dir(), None);
    spool.create_session(KEY).expect("create");
    let status = spool.reset(KEY).expect("reset").archive.expect("status");
    assert!(!status.written);
    assert!(status.error.is_some());
    // A custom archiver can be plugged in instead.
    let dir = tempfile::tempdir().expect("temp dir");
    let mut spool = Spool::builder()
        .archiver(ArchiveDir::new(dir.path().join("a")))
        .open()
        .expect("open");
    assert_eq!(spool.archive_dir(), None);
    spool.create_session(KEY).expect("create");
    assert!(
        spool
            .reset(KEY)
            .expect("reset")
            .archive
            .expect("status")
            .written
    );
    assert_eq!(json_files(&dir.path().join("a")).len(), 1);
}

#[test]
fn test_intents_resume_update_finish_through_spool() {
    let (now, tick) = clock();
    let mut spool = Spool::builder()
        .clock(tick)
        .ids(numbered_ids())
        .open()
        .expect("open");
    let first = spool.get_or_create(KEY).expect("get or create");
    assert!(first.created && !first.rotated && first.archive.is_none());
    let again = spool.get_or_create(KEY).expect("get or create");
    assert!(!again.created);
    assert_eq!(again.session.session_id, first.session.session_id);
    let kept = spool.apply_intent(KEY, Intent::Continue).expect("continue");
    assert_eq!(kept.session.session_id, first.session.session_id);
    let err = spool
        .apply_intent(KEY, Intent::NewChat)
        .expect_err("new chat on an existing key");
    assert_eq!(err.code(), "conflict");
    assert!(err.message().contains("session_key conflict"), "{err}");
    let fresh = spool
        .apply_intent("agent:other:main", Intent::NewChat)
        .expect("a free key");
    assert!(fresh.created);

    now.store(5_000, Ordering::SeqCst);
    assert_eq!(spool.resume(KEY).expect("resume").updated_at, 5_000);
    assert_eq!(
        spool.resume("agent:none:main").expect_err("missing").code(),
        "not_found"
    );

    let mut request = UpdateRequest {
        model: Some("claude-opus-4-6".into()),
        channel: Some("cli".into()),
        ..UpdateRequest::default()
    };
    request
        .model_config
        .insert("temperature".into(), json!(0.2));
    request.model_config.insert("top_p".into(), json!(0.9));
    request.metadata.insert("team".into(), json!("core"));
    let updated = spool.update(KEY, request).expect("update");
    assert_eq!(updated.model.as_deref(), Some("claude-opus-4-6"));
    assert_eq!(updated.channel.as_deref(), Some("cli"));
    assert_eq!(updated.model_config["temperature"], json!(0.2));
    assert_eq!(updated.metadata["team"], json!("core"));
    let mut removal = UpdateRequest::default();
    removal.model_config.insert("top_p".into(), Value::Null);
    let updated = spool.update(KEY, removal).expect("update");
    assert!(!updated.model_config.contains_key("top_p"));
    assert_eq!(
        updated.model.as_deref(),
        Some("claude-opus-4-6"),
        "absent fields stay"
    );
    let stale = UpdateRequest {
        expected_epoch: Some(3),
        ..UpdateRequest::default()
    };
    assert_eq!(
        spool.update(KEY, stale).expect_err("stale").code(),
        "stale_epoch"
    );

    now.store(9_000, Ordering::SeqCst);
    let failed = spool
        .finish(KEY, FinishStatus::Failed, Some(0))
        .expect("finish");
    assert_eq!(failed.status, SessionStatus::Failed);
    assert_eq!(failed.ended_at, Some(9_000));
    assert_eq!(failed.runtime_ms, Some(9_000 - first.session.created_at));
    let done = spool
        .archive_session("agent:other:main", None)
        .expect("archive");
    assert_eq!(done.status, SessionStatus::Done);

    let only_failed = spool
        .list_sessions(10, None, None, Some(SessionStatus::Failed))
        .expect("list");
    let keys: Vec<_> = only_failed
        .sessions
        .iter()
        .map(|s| s.key.as_str())
        .collect();
    assert_eq!(keys, [KEY]);
    let other_agent = spool
        .list_sessions(10, None, Some("other".to_owned()), None)
        .expect("list");
    assert_eq!(other_agent.sessions.len(), 1);
    assert_eq!(other_agent.sessions[0].key, "agent:other:main");
}

#[test]
fn test_entries_states_and_cleanups_through_spool() {
    let (now, tick) = clock();
    let mut spool = Spool::builder().clock(tick).open().expect("open");
    spool.create_session(KEY).expect("create");
    let mut ids = Vec::new();
    for i in 0..5 {
        let mut request = AppendRequest::new(Role::Assistant, format!("m{i}"));
        request.token_count = Some(10);
        if i == 4 {
            request.turn_usage = Some(TurnUsage::new("gpt-5", 100, 20));
        }
        ids.push(spool.append_entry(KEY, request).expect("append").message_id);
    }
    let session = spool.get_session(KEY).expect("get").expect("exists");
    assert_eq!(
        (
            session.total_tokens,
            session.input_tokens,
            session.output_tokens
        ),
        (40, 100, 20),
        "usage-bearing messages are not counted twice"
    );
    let last = spool.get_entry(KEY, &ids[4]).expect("get").expect("found");
    assert_eq!(last.turn_usage.expect("usage").model, "gpt-5");
    assert_eq!(spool.count_entries(KEY).expect("count"), 5);

    let outcome = spool.truncate(KEY, 2, None).expect("truncate");
    assert!(outcome.truncated);
    assert_eq!((outcome.before_count, outcome.after_count), (5, 2));
    assert_eq!(spool.count_entries(KEY).expect("count"), 2);
    assert_eq!(spool.get_entry(KEY, &ids[0]).expect("get"), None);
    let nothing = spool.truncate(KEY, 10, None).expect("truncate");
    assert!(!nothing.truncated);

    let state = |kind: &str| NewContextState {
        provider: "portable".into(),
        model: Some("gpt-5".into()),
        state_kind: kind.into(),
        payload: json!({"kind": kind}),
        covered_through_id: 5,
        expires_at: None,
        portable: true,
        cacheable: true,
    };
    let a = spool.save_state(KEY, state("a"), None).expect("save");
    let b = spool.save_state(KEY, state("b"), Some(0)).expect("save");
    assert_eq!((a.id, b.id), (1, 2));
    assert_eq!(b.payload, json!({"kind": "b"}));
    assert_eq!(
        spool
            .save_state(KEY, state("c"), Some(9))
            .expect_err("stale")
            .code(),
        "stale_epoch"
    );
    assert_eq!(
        spool
            .invalidate_states(KEY, Some("a".to_owned()), "manual")
            .expect("inv"),
        1
    );
    let valid = spool.list_states(KEY, true).expect("list");
    assert_eq!(valid.iter().map(|s| s.id).collect::<Vec<_>>(), [2]);
    let all = spool.list_states(KEY, false).expect("list");
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].invalid_reason.as_deref(), Some("manual"));

    // Three more sessions, updated later; cap keeps the newest, prune the recent ones.
    for key in ["agent:b:main", "agent:c:main", "agent:d:main"] {
        now.fetch_add(1_000, Ordering::SeqCst);
        spool.create_session(key).expect("create");
    }
    assert_eq!(spool.cap_sessions(3).expect("cap"), 1);
    assert_eq!(spool.get_session(KEY).expect("get"), None);
    now.fetch_add(10_000, Ordering::SeqCst);
    assert_eq!(spool.prune_stale(11_500).expect("prune"), 1);
    let left = spool.list_sessions(10, None, None, None).expect("list");
    assert_eq!(left.sessions.len(), 2);
    spool
        .delete_session("agent:d:main", Some(0))
        .expect("delete");
    assert_eq!(
        spool
            .delete_session("agent:d:main", None)
            .expect_err("gone")
            .code(),
        "not_found"
    );
    assert_eq!(
        spool.prune_stale(u64::MAX).expect_err("absurd").code(),
        "invalid_argument"
    );
}
