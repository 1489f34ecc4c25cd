use super::*;

#[test]
fn test_file_names_are_safe() {
    assert_eq!(sanitize("agent:main:main"), "agent_main_main");
    assert_eq!(sanitize("../x"), "_.._x");
    assert_eq!(sanitize(""), "_");
    assert_eq!(sanitize(&"k/".repeat(200)).len(), NAME_PART_BYTES);
}

#[test]
fn test_workspaces_never_share_a_directory() {
    let archives = ArchiveDir::new("/a");
    assert_ne!(archives.workspace_dir("a/b"), archives.workspace_dir("a_b"));
    assert!(archives.workspace_dir("default").starts_with("/a"));
}

#[test]
fn test_default_dir_is_beside_the_database() {
    assert_eq!(
        ArchiveDir::default_for(Path::new("spool.db")).path(),
        Path::new("./spool-archives")
    );
    assert_eq!(
        ArchiveDir::default_for(Path::new("/var/db/spool.db")).path(),
        Path::new("/var/db/spool-archives")
    );
}
