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
//! 2. the JSON goes to a fresh temporary file (mode `0600`) in the same directory as the
//!    reset hands it over — its head, each page of its transcript, its summaries
//!    ([`ArchiveDir::begin`], [`ArchiveFile`]), so memory does not grow with the
//!    archive — and the file is `fsync`ed;
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
use spool::{ArchiveWriter, ArchivedReset, Archiver, Entry, ResetArchive};

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

/// One archive being written, part by part ([`ArchiveDir::begin`]): complete once
/// [`finish`](Self::finish) returns, absent if it is dropped before.
#[derive(Debug)]
pub struct ArchiveFile {
    out: Option<io::BufWriter<fs::File>>,
    temp: PathBuf,
    target: PathBuf,
    dir: PathBuf,
    root: PathBuf,
    json: ArchiveJson,
}

/// An archive's JSON, part by part: the head (the object left open for its entries),
/// the entries as they come, then the summaries that close it. The same bytes whether
/// they go to a file ([`ArchiveFile`]) or to a database; [`parse_archive`] reads them.
#[derive(Debug, Default)]
pub(crate) struct ArchiveJson {
    /// No entry written yet.
    started: bool,
}

impl ArchiveJson {
    /// The head of the archive of `workspace` whose head is `head` (its entries and
    /// summaries are ignored).
    pub(crate) fn head(workspace: &str, head: &ResetArchive) -> io::Result<Vec<u8>> {
        #[derive(Serialize)]
        struct Head<'a> {
            workspace: &'a str,
            session_key: &'a str,
            session_id: &'a str,
            epoch: u64,
            archived_at: u64,
        }
        let mut json = serde_json::to_vec(&Head {
            workspace,
            session_key: &head.session_key,
            session_id: &head.session_id,
            epoch: head.epoch,
            archived_at: head.archived_at,
        })
        .map_err(io::Error::other)?;
        // The same object as a whole archive's JSON, left open for its entries.
        json.pop();
        json.extend_from_slice(br#","transcript_entries":["#);
        Ok(json)
    }

    /// The next entries of the transcript.
    pub(crate) fn entries(&mut self, entries: &[Entry]) -> io::Result<Vec<u8>> {
        let mut json = Vec::new();
        for entry in entries {
            if self.started {
                json.push(b',');
            }
            serde_json::to_writer(&mut json, entry).map_err(io::Error::other)?;
            self.started = true;
        }
        Ok(json)
    }

    /// The summaries, closing the archive.
    pub(crate) fn tail(summaries: &[serde_json::Value]) -> io::Result<Vec<u8>> {
        let mut json = br#"],"summaries":"#.to_vec();
        serde_json::to_writer(&mut json, summaries).map_err(io::Error::other)?;
        json.push(b'}');
        Ok(json)
    }
}

/// Reads the archive JSON `bytes` ([`ArchiveJson`]) and checks that it is the archive
/// `record` names in `workspace`, whole; `Err` says what is wrong.
pub(crate) fn parse_archive(
    bytes: &[u8],
    workspace: &str,
    record: &ArchivedReset,
) -> Result<ResetArchive, String> {
    let stored: Stored<ResetArchive> =
        serde_json::from_slice(bytes).map_err(|e| format!("not an archive: {e}"))?;
    if stored.workspace != workspace {
        return Err(format!(
            "the archive is of workspace `{}`",
            stored.workspace
        ));
    }
    record.check(&stored.archive)?;
    Ok(stored.archive)
}

impl ArchiveFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        match &mut self.out {
            Some(out) => out.write_all(bytes),
            None => Err(io::Error::other("the archive is already finished")),
        }
    }

    /// Writes the next entries of the transcript.
    pub fn append(&mut self, entries: &[Entry]) -> io::Result<()> {
        let json = self.json.entries(entries)?;
        self.write(&json)
    }

    /// Writes the summaries, syncs the file, renames it into place and syncs the
    /// directories; returns its path.
    pub fn finish(mut self, summaries: &[serde_json::Value]) -> io::Result<PathBuf> {
        self.write(&ArchiveJson::tail(summaries)?)?;
        let out = self.out.take().expect("written above");
        out.into_inner()
            .map_err(io::IntoInnerError::into_error)?
            .sync_all()?;
        fs::rename(&self.temp, &self.target)?;
        sync_dir(&self.dir)?;
        sync_dir(&self.root)?;
        Ok(self.target.clone())
    }
}

impl Drop for ArchiveFile {
    fn drop(&mut self) {
        // Unfinished (or failed to rename): best effort, a leftover temporary file is
        // harmless but untidy.
        if self.out.take().is_some() || !self.target.exists() {
            let _ = fs::remove_file(&self.temp);
        }
    }
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
        let mut file = self.begin(workspace, archive)?;
        file.append(&archive.transcript_entries)?;
        file.finish(&archive.summaries)
    }

    /// Starts the archive of `workspace` whose head is `head` (its entries and summaries
    /// are ignored): a temporary file the parts are written to as they come, renamed
    /// into place by [`ArchiveFile::finish`] (dropped before, it is removed).
    pub fn begin(&self, workspace: &str, head: &ResetArchive) -> io::Result<ArchiveFile> {
        let json = ArchiveJson::head(workspace, head)?;
        ensure_private_dir(&self.dir)?;
        let dir = self.workspace_dir(workspace);
        ensure_private_dir(&dir)?;
        let temp = dir.join(temp_name());
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let file = options.open(&temp)?;
        let mut out = ArchiveFile {
            out: Some(io::BufWriter::new(file)),
            target: dir.join(Self::file_name(head)),
            temp,
            dir,
            root: self.dir.clone(),
            json: ArchiveJson::default(),
        };
        out.write(&json)?;
        Ok(out)
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
        parse_archive(&bytes, workspace, record)
            .map_err(|why| ArchiveReadError::Mismatch(path, why))
    }
}

/// Why the archive of `session_key` could not be kept in `dir`.
fn failed(session_key: &str, dir: &Path, e: &io::Error) -> String {
    format!(
        "cannot write the reset archive of `{session_key}` to {}: {e}",
        dir.display()
    )
}

/// An [`ArchiveFile`] as the core's [`ArchiveWriter`].
struct Writing {
    file: ArchiveFile,
    session_key: String,
}

impl ArchiveWriter for Writing {
    fn append(&mut self, entries: &[Entry]) -> Result<(), String> {
        self.file
            .append(entries)
            .map_err(|e| failed(&self.session_key, &self.file.root, &e))
    }

    fn finish(self: Box<Self>, summaries: &[serde_json::Value]) -> Result<(), String> {
        let root = self.file.root.clone();
        let Writing { file, session_key } = *self;
        file.finish(summaries)
            .map(drop)
            .map_err(|e| failed(&session_key, &root, &e))
    }
}

impl Archiver for ArchiveDir {
    fn write_archive(&self, workspace: &str, archive: &ResetArchive) -> Result<(), String> {
        self.write(workspace, archive)
            .map(drop)
            .map_err(|e| failed(&archive.session_key, &self.dir, &e))
    }

    fn archive_writer(
        &self,
        workspace: &str,
        head: &ResetArchive,
    ) -> Option<Result<Box<dyn ArchiveWriter + Send>, String>> {
        Some(
            self.begin(workspace, head)
                .map(|file| {
                    Box::new(Writing {
                        file,
                        session_key: head.session_key.clone(),
                    }) as Box<dyn ArchiveWriter + Send>
                })
                .map_err(|e| failed(&head.session_key, &self.dir, &e)),
        )
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

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
#[path = "tests/archive.rs"]
mod tests;
