use super::*;

/// An append's shape: the session record checked and replaced, the entry added.
fn append_batch() -> Batch {
    let mut batch = Batch::default();
    batch.require_equals(b"s".to_vec(), b"old".to_vec());
    batch.require_absent(b"e1".to_vec());
    batch.put(b"s".to_vec(), b"new".to_vec());
    batch.put(b"e1".to_vec(), b"entry".to_vec());
    batch
}

fn state<'a>(pairs: &'a [(&'a [u8], &'a [u8])]) -> impl Fn(&[u8]) -> Option<&'a [u8]> {
    move |key| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

#[test]
fn test_a_lost_commit_is_applied_when_its_keys_hold_what_it_wrote() {
    let now = state(&[(b"s", b"new"), (b"e1", b"entry")]);
    assert_eq!(decide(&append_batch(), now), Lost::Applied);
}

#[test]
fn test_a_lost_commit_is_not_applied_when_its_preconditions_still_hold() {
    let now = state(&[(b"s", b"old")]);
    assert_eq!(decide(&append_batch(), now), Lost::NotApplied);
}

#[test]
fn test_a_lost_commit_after_another_writer_is_undecided() {
    // Another writer replaced the session record: ours may be under it or not.
    let now = state(&[(b"s", b"other"), (b"e1", b"entry")]);
    assert_eq!(decide(&append_batch(), now), Lost::Undecided);
    // Preconditions that hold but that the batch does not change prove nothing.
    let mut batch = Batch::default();
    batch.require_absent(b"a".to_vec());
    batch.put(b"b".to_vec(), b"v".to_vec());
    assert_eq!(decide(&batch, state(&[(b"b", b"w")])), Lost::Undecided);
    // Range deletes are not read back.
    let mut batch = append_batch();
    batch.delete_range(spool::KeyRange::prefix(b"x"));
    assert_eq!(decide(&batch, state(&[])), Lost::Undecided);
}

#[test]
fn test_the_commit_function_takes_the_lock_the_storage_takes() {
    assert!(MIGRATIONS[0].contains(&format!(
        "pg_advisory_xact_lock({LOCK_CLASS}, hashtext(ws))"
    )));
}

#[test]
fn test_urls_name_servers_and_paths_do_not() {
    assert!(is_postgres_url("postgres://u@h/db"));
    assert!(is_postgres_url("PostgreSQL://u@h:5/db"));
    assert!(!is_postgres_url("postgres:/db"));
    assert!(!is_postgres_url("./spool.db"));
    assert!(!is_postgres_url("postgres"));
}

#[test]
fn test_redact_drops_passwords_in_userinfo_and_parameters() {
    assert_eq!(
        redact("postgres://alice:s3cret@h:5432/db?sslmode=x&password=p2"),
        "postgres://alice@h:5432/db?sslmode=x"
    );
    assert_eq!(redact("postgresql://h/db?password=p"), "postgresql://h/db");
    assert_eq!(redact("garbage"), "(not a URL)");
}

#[test]
fn test_describe_names_hosts_ports_and_database_only() {
    let config: Config = "postgres://alice:s3cret@h1:1,h2:2/spool".parse().unwrap();
    assert_eq!(describe(&config), "h1:1,h2:2/spool");
    let config: Config = "postgres://alice@h".parse().unwrap();
    assert_eq!(describe(&config), "h:5432/alice");
}
