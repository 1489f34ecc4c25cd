//! Where `spool import opencode` finds sessions: opencode's SQLite database (1.2 and
//! later), its older JSON files, or documents `opencode export` printed. Each session
//! is handed to the core as one document, `{info, messages: [{info, parts}]}`
//! ([`spool::import::parse_opencode`] says what becomes of it); this module only reads.
//!
//! - The database (`opencode.db`, a file starting with SQLite's header): tables
//!   `session` (`id`, `parent_id`, `directory`, `title`, `version`, `time_created`,
//!   `time_updated`), `message` (`id`, `session_id`, `time_created`, `data`: the
//!   message's fields as JSON) and `part` (`id`, `message_id`, `session_id`, `data`).
//!   Opened read-only; sessions in creation order (a sub-agent after the session that
//!   spawned it), messages by creation time then id, parts by id.
//! - The JSON files (`storage/`): `session/<project>/<session>.json`,
//!   `message/<session>/<message>.json`, `part/<message>/<part>.json`; sessions by
//!   their creation time, messages and parts by id (opencode's ids sort by time).
//! - A directory holding `opencode.db` or `storage/` (opencode's data directory,
//!   `~/.local/share/opencode`) is read as both; a `storage` directory (holding
//!   `session/`) as the JSON files; another directory as the exported documents
//!   (`*.json`) it holds, by file name (a sub-agent's session read before the session
//!   that spawned it is imported standalone); any other file as an exported document.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use spool_host::Error;

/// One session found: where it came from (shown in the report) and its document.
pub(crate) struct Found {
    pub(crate) path: PathBuf,
    pub(crate) document: Result<String, Error>,
}

/// The sessions under `path`, in the order to import them.
pub(crate) fn find(path: &Path) -> Vec<Found> {
    let failed = |e: Error| {
        vec![Found {
            path: path.to_owned(),
            document: Err(e),
        }]
    };
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) => return failed(io(path, e)),
    };
    if meta.is_dir() {
        let (db, storage) = (path.join("opencode.db"), path.join("storage"));
        if path.join("session").is_dir() {
            return from_storage(path);
        }
        let mut out = Vec::new();
        if db.is_file() {
            out.extend(from_database(&db));
        }
        if storage.join("session").is_dir() {
            out.extend(from_storage(&storage));
        }
        if out.is_empty() {
            // Exported documents, by file name.
            for file in sorted_dir(path, &mut out) {
                if file.extension().is_some_and(|e| e == "json") && file.is_file() {
                    let document = read(&file);
                    out.push(Found {
                        path: file,
                        document,
                    });
                }
            }
        }
        if out.is_empty() {
            return failed(Error::Io {
                context: format!(
                    "cannot import {}: it holds no opencode.db, storage/, session/ or *.json",
                    path.display()
                ),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no opencode data"),
            });
        }
        return out;
    }
    match is_sqlite(path) {
        Ok(true) => from_database(path),
        Ok(false) => vec![Found {
            path: path.to_owned(),
            document: read(path),
        }],
        Err(e) => failed(e),
    }
}

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        context: format!("cannot read {}", path.display()),
        source,
    }
}

fn is_sqlite(path: &Path) -> Result<bool, Error> {
    use std::io::Read as _;
    let mut head = [0u8; 16];
    let mut file = std::fs::File::open(path).map_err(|e| io(path, e))?;
    let n = file.read(&mut head).map_err(|e| io(path, e))?;
    Ok(n == 16 && &head == b"SQLite format 3\0")
}

/// A JSON file's text, at most the size one document may have.
fn read(path: &Path) -> Result<String, Error> {
    let (text, _) = super::import::read_log(path)?;
    Ok(text)
}

fn sqlite_error(path: &Path, e: &rusqlite::Error) -> Error {
    Error::Sqlite {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Every session of an opencode database.
fn from_database(db: &Path) -> Vec<Found> {
    let flags =
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let sessions = rusqlite::Connection::open_with_flags(db, flags).and_then(|conn| {
        let mut stmt = conn.prepare(
            "SELECT id, parent_id, directory, title, version, time_created, time_updated \
             FROM session ORDER BY time_created, id",
        )?;
        let rows = stmt
            .query_map([], |r| {
                let info = json!({
                    "id": r.get::<_, String>(0)?,
                    "parentID": r.get::<_, Option<String>>(1)?,
                    "directory": r.get::<_, Option<String>>(2)?,
                    "title": r.get::<_, Option<String>>(3)?,
                    "version": r.get::<_, Option<String>>(4)?,
                    "time": {
                        "created": r.get::<_, Option<i64>>(5)?,
                        "updated": r.get::<_, Option<i64>>(6)?,
                    },
                });
                Ok(info)
            })?
            .collect::<Result<Vec<Value>, _>>()?;
        drop(stmt);
        Ok((conn, rows))
    });
    let (conn, sessions) = match sessions {
        Ok(found) => found,
        Err(e) => {
            return vec![Found {
                path: db.to_owned(),
                document: Err(sqlite_error(db, &e)),
            }];
        }
    };
    sessions
        .into_iter()
        .map(|info| {
            let id = info["id"].as_str().unwrap_or_default().to_owned();
            let document = session_rows(&conn, &id)
                .map_err(|e| sqlite_error(db, &e))
                .map(|messages| json!({"info": info, "messages": messages}).to_string());
            Found {
                path: PathBuf::from(format!("{}#{id}", db.display())),
                document,
            }
        })
        .collect()
}

/// A session's messages, each with its parts, from the database.
fn session_rows(conn: &rusqlite::Connection, session: &str) -> rusqlite::Result<Vec<Value>> {
    let mut parts: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut stmt =
        conn.prepare("SELECT id, message_id, data FROM part WHERE session_id = ?1 ORDER BY id")?;
    let rows = stmt.query_map([session], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    for row in rows {
        let (id, message, data) = row?;
        let mut part = object(&data);
        part.insert("id".into(), id.into());
        part.insert("sessionID".into(), session.into());
        part.insert("messageID".into(), message.clone().into());
        parts.entry(message).or_default().push(Value::Object(part));
    }
    let mut stmt = conn
        .prepare("SELECT id, data FROM message WHERE session_id = ?1 ORDER BY time_created, id")?;
    let rows = stmt.query_map([session], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, data) = row?;
        let mut info = object(&data);
        info.insert("id".into(), id.clone().into());
        info.insert("sessionID".into(), session.into());
        let parts = parts.remove(&id).unwrap_or_default();
        out.push(json!({"info": info, "parts": parts}));
    }
    Ok(out)
}

/// A `data` column's JSON object (an empty one when it is not one: the core reports
/// what it lacks).
fn object(data: &str) -> Map<String, Value> {
    match serde_json::from_str(data) {
        Ok(Value::Object(o)) => o,
        _ => Map::new(),
    }
}

/// Every session of opencode's JSON files under `storage`.
fn from_storage(storage: &Path) -> Vec<Found> {
    let mut sessions: Vec<(u64, String, PathBuf)> = Vec::new();
    let mut out = Vec::new();
    for project in sorted_dir(&storage.join("session"), &mut out) {
        for file in sorted_dir(&project, &mut out) {
            if file.extension().is_none_or(|e| e != "json") {
                continue;
            }
            match read(&file).map(|t| object(&t)) {
                Ok(info) => {
                    let created = info
                        .get("time")
                        .and_then(|t| t.get("created"))
                        .and_then(Value::as_u64)
                        .unwrap_or(0);
                    let id = info
                        .get("id")
                        .and_then(Value::as_str)
                        .map_or_else(|| stem(&file), str::to_owned);
                    sessions.push((created, id, file));
                }
                Err(e) => out.push(Found {
                    path: file,
                    document: Err(e),
                }),
            }
        }
    }
    sessions.sort();
    for (_, id, file) in sessions {
        let document = storage_document(storage, &id, &file);
        out.push(Found {
            path: file,
            document,
        });
    }
    out
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The entries of `dir`, sorted by path; a directory that cannot be read is reported
/// in `out` (one that does not exist holds nothing).
fn sorted_dir(dir: &Path, out: &mut Vec<Found>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            out.push(Found {
                path: dir.to_owned(),
                document: Err(io(dir, e)),
            });
            return Vec::new();
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    paths
}

/// One session's document from the JSON files.
fn storage_document(storage: &Path, id: &str, file: &Path) -> Result<String, Error> {
    let info = object(&read(file)?);
    let mut ignored = Vec::new();
    let mut messages = Vec::new();
    for message in sorted_dir(&storage.join("message").join(id), &mut ignored) {
        if message.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let info = object(&read(&message)?);
        let message_id = info
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| stem(&message), str::to_owned);
        let mut parts = Vec::new();
        for part in sorted_dir(&storage.join("part").join(&message_id), &mut ignored) {
            if part.extension().is_some_and(|e| e == "json") {
                parts.push(Value::Object(object(&read(&part)?)));
            }
        }
        messages.push(json!({"info": info, "parts": parts}));
    }
    if let Some(failed) = ignored.into_iter().find_map(|f| f.document.err()) {
        return Err(failed);
    }
    Ok(json!({"info": info, "messages": messages}).to_string())
}
