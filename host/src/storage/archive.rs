//! [`ArchiveDir`]: the native reset-archive store, one private JSON file per reset.
//!
//! A reset hands the host the old generation of a session (its canonical transcript and
//! summaries); the host keeps it durably before the reset commits. Natively that is a
//! file `<dir>/<workspace>/<key>-<session id>-<archived_at>.json` (workspace, key and id
//! reduced to file-name safe characters; the workspace part also carries a hash of the
//! exact name, so two workspaces never share a directory) holding the archive as
//! compact JSON (`workspace`, `session_key`, `session_id`, `epoch`, `archived_at`,
//! `transcript_entries`, `summaries`), written so that it is either complete or absent:
//!
//! 1. the directories are created with mode `0700` (existing ones are tightened to
//!    `0700`);
//! 2. the JSON goes to a fresh temporary file (mode `0600`) in the same directory, which
//!    is `fsync`ed;
//! 3. the temporary file is renamed to its final name and the directory is `fsync`ed,
//!    so the new name survives a crash.
//!
//! Any failure is returned as the reason text; the reset still completes and reports
//! the archive as not written.
//!
//! A file is only half of an archive: the reset's own commit records it
//! ([`spool::ArchivedReset`]). [`ArchiveDir::read`] reads the file a record names and
//! checks it against the record; a file no record names (a reset that failed or was
//! killed after writing it) is never listed. Files written before archives recorded
//! their workspace (directly in `<dir>`) are left as they are and not listed either.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use spool::compaction::summarize::fingerprint;
use spool::{ArchivedReset, Archiver, ResetArchive};

/// The name of the default archive directory, beside the database file.
pub const DEFAULT_ARCHIVE_DIR_NAME: &str = "spool-archives";

/// At most this many bytes of the key, and of the session id, go into a file name.
const NAME_PART_BYTES: usize = 96;

/// Keeps reset archives as JSON files in one directory, one subdirectory per workspace.
///
/// ```
/// use spool::{Archiver, ResetArchive};
/// use spool_host::ArchiveDir;
///
/// let dir = tempfile::tempdir()?;
/// let archives = ArchiveDir::new(dir.path().join("archives"));
/// let archive = ResetArchive {
///     session_key: "agent:main:main".into(),
///     session_id: "s1".into(),
///     epoch: 0,
///     archived_at: 1_000,
///     transcript_entries: Vec::new(),
///     summaries: Vec::new(),
/// };
/// archives.write_archive("default", &archive)?;
/// let file = archives.file_path("default", &archive);
/// assert!(file.ends_with("agent_main_main-s1-1000.json"));
/// assert!(std::fs::read_to_string(file)?.contains("\"session_id\":\"s1\""));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveDir {
    dir: PathBuf,
}

/// An archive file's JSON: the archive and the workspace it belongs to.
#[derive(Serialize, Deserialize)]
struct Stored<A> {
    workspace: String,
    #[serde(flatten)]
    archive: A,
}

/// Why a recorded archive cannot be read back.
#[derive(Debug)]
pub enum ArchiveReadError {
    /// The file could not be read (it may be missing).
    Io(PathBuf, io::Error),
    /// The file is not the archive its record names (other content, damaged, another
    /// workspace's).
    Mismatch(PathBuf, String),
}

impl std::fmt::Display for ArchiveReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArchiveReadError::Io(path, e) => write!(f, "cannot read {}: {e}", path.display()),
            ArchiveReadError::Mismatch(path, why) => write!(f, "{}: {why}", path.display()),
        }
    }
}

impl std::error::Error for ArchiveReadError {}

impl ArchiveDir {
    /// An archive store in `dir` (created on the first archive, not now).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ArchiveDir { dir: dir.into() }
    }

    /// The default archive directory of the database at `db_path`:
    /// `<directory of the db>/spool-archives`.
    pub fn default_for(db_path: &Path) -> Self {
        let parent = db_path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        ArchiveDir::new(parent.join(DEFAULT_ARCHIVE_DIR_NAME))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The directory of `workspace`'s archives: `<dir>/<sanitized workspace>-<hash>`,
    /// the hash (FNV-64 of the exact name, hex) telling apart workspaces whose names
    /// sanitize alike.
    pub fn workspace_dir(&self, workspace: &str) -> PathBuf {
        self.dir.join(format!(
            "{}-{}",
            sanitize(workspace),
            fingerprint(workspace.as_bytes())
        ))
    }

    /// The file name an archive is kept under:
    /// `<sanitized key>-<sanitized session id>-<archived_at>.json`, where every byte
    /// other than an ASCII letter, digit, `-`, `_` or `.` becomes `_` and each part is
    /// cut to a file-system-safe length.
    pub fn file_name(archive: &ResetArchive) -> String {
        name_of(
            &archive.session_key,
            &archive.session_id,
            archive.archived_at,
        )
    }

    /// Where the archive of `workspace` is kept.
    pub fn file_path(&self, workspace: &str, archive: &ResetArchive) -> PathBuf {
        self.workspace_dir(workspace).join(Self::file_name(archive))
    }

    /// Writes `archive` of `workspace` durably; returns the path of the file.
    pub fn write(&self, workspace: &str, archive: &ResetArchive) -> io::Result<PathBuf> {
        let json = serde_json::to_vec(&Stored {
            workspace: workspace.to_owned(),
            archive,
        })
        .map_err(io::Error::other)?;
        ensure_private_dir(&self.dir)?;
        let dir = self.workspace_dir(workspace);
        ensure_private_dir(&dir)?;
        let target = dir.join(Self::file_name(archive));
        let temp = dir.join(temp_name());
        let written = write_synced(&temp, &json).and_then(|()| fs::rename(&temp, &target));
        if let Err(e) = written {
            // Best effort: a leftover temporary file is harmless but untidy.
            let _ = fs::remove_file(&temp);
            return Err(e);
        }
        sync_dir(&dir)?;
        sync_dir(&self.dir)?;
        Ok(target)
    }

    /// Reads back the archive `record` names in `workspace` and checks that the file
    /// is that archive, whole ([`ArchivedReset::check`]).
    pub fn read(
        &self,
        workspace: &str,
        record: &ArchivedReset,
    ) -> Result<ResetArchive, ArchiveReadError> {
        let path = self.workspace_dir(workspace).join(name_of(
            &record.session_key,
            &record.session_id,
            record.archived_at,
        ));
        let bytes = fs::read(&path).map_err(|e| ArchiveReadError::Io(path.clone(), e))?;
        let stored: Stored<ResetArchive> = serde_json::from_slice(&bytes).map_err(|e| {
            ArchiveReadError::Mismatch(path.clone(), format!("not an archive: {e}"))
        })?;
        if stored.workspace != workspace {
            return Err(ArchiveReadError::Mismatch(
                path,
                format!("the archive is of workspace `{}`", stored.workspace),
            ));
        }
        record
            .check(&stored.archive)
            .map_err(|why| ArchiveReadError::Mismatch(path, why))?;
        Ok(stored.archive)
    }
}

impl Archiver for ArchiveDir {
    fn write_archive(&self, workspace: &str, archive: &ResetArchive) -> Result<(), String> {
        self.write(workspace, archive).map(drop).map_err(|e| {
            format!(
                "cannot write the reset archive of `{}` to {}: {e}",
                archive.session_key,
                self.dir.display()
            )
        })
    }
}

fn name_of(key: &str, session_id: &str, archived_at: u64) -> String {
    format!(
        "{}-{}-{archived_at}.json",
        sanitize(key),
        sanitize(session_id)
    )
}

fn sanitize(part: &str) -> String {
    let mut out: String = part
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
                char::from(b)
            } else {
                '_'
            }
        })
        .take(NAME_PART_BYTES)
        .collect();
    // Never a hidden file, never `.` or `..`.
    if out.starts_with('.') || out.is_empty() {
        out.insert(0, '_');
    }
    out
}

/// A name no other writer (thread or process) uses at the same time.
fn temp_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        ".tmp-{}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        crate::random_id()
    )
}

#[cfg(unix)]
fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            if meta.permissions().mode() & 0o077 != 0 {
                fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
            }
            Ok(())
        }
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "the path exists and is not a directory",
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
            // The umask may have loosened nothing (0700 has no group/other bits), but
            // a directory created concurrently by someone else might have; check again.
            let meta = fs::metadata(dir)?;
            if meta.permissions().mode() & 0o077 != 0 {
                fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
            }
            Ok(())
        }
        Err(e) => Err(e),
    }
}

#[cfg(not(unix))]
fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)
}

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
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
}
