//! The host's error type: failures of the component's API calls (with their reason
//! codes) and failures of the machinery around it (SQLite, wasmtime, files).

use std::fmt;

use spool::StorageError;

/// A failed host call.
///
/// [`Error::code`] gives a stable reason code for every variant; the CLI prints it as
/// `error[<code>]: <message>`.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The component refused or failed the call (its WIT `error` record).
    Spool {
        /// The reason code: one of [`spool::ErrorCode`] (`not_found`, `conflict`, …),
        /// or one of the CLI's own (`import_failed`, `summarizer`).
        code: String,
        /// Human-readable detail (key, field, cause).
        message: String,
    },
    /// A storage backend called directly (not through the component) failed.
    Storage(StorageError),
    /// The SQLite database could not be opened or set up.
    Sqlite {
        /// The database path (empty for an in-memory database).
        path: String,
        /// SQLite's message.
        message: String,
    },
    /// The PostgreSQL database could not be reached or set up: a malformed URL, a
    /// refused connection, a failed authentication, a missing database.
    Postgres {
        /// The server and database (`host:port/database`), never the password.
        target: String,
        /// What went wrong.
        message: String,
    },
    /// The WebAssembly runtime failed: the component trapped (a bug) or could not be
    /// compiled or instantiated.
    Wasm {
        /// What the host was doing.
        context: String,
        /// The runtime's message: for a trap, its cause.
        message: String,
        /// The guest's stack at the trap, when there was one (for bug reports).
        backtrace: Option<String>,
    },
    /// The component went over a resource limit of its instance (see
    /// [`ResourceLimits`](crate::ResourceLimits)): its memory, or the execution limit
    /// (fuel) of one call. Nothing was written, and the instance stays usable.
    ResourceLimit {
        /// Which limit: `memory` or `fuel`.
        limit: &'static str,
        /// What the call was and what it needed.
        message: String,
    },
    /// A file operation failed.
    Io {
        /// What the host was doing.
        context: String,
        /// The cause.
        source: std::io::Error,
    },
}

impl Error {
    /// The component's refusal or failure with `code`.
    pub fn spool(code: spool::ErrorCode, message: String) -> Self {
        Error::Spool {
            code: code.as_str().to_owned(),
            message,
        }
    }

    /// The stable reason code: the component's own code for [`Error::Spool`], `storage`
    /// for [`Error::Storage`], [`Error::Sqlite`] and [`Error::Postgres`], `internal` for [`Error::Wasm`],
    /// `resource_limit` for [`Error::ResourceLimit`] and `io` for [`Error::Io`].
    pub fn code(&self) -> &str {
        match self {
            Error::Spool { code, .. } => code,
            Error::Storage(StorageError::Corrupt { .. }) => "corruption",
            Error::Storage(StorageError::Unknown(_)) => "unknown",
            Error::Storage(_) | Error::Sqlite { .. } | Error::Postgres { .. } => "storage",
            Error::Wasm { .. } => "internal",
            Error::ResourceLimit { .. } => "resource_limit",
            Error::Io { .. } => "io",
        }
    }

    /// The message without the code.
    pub fn message(&self) -> String {
        match self {
            Error::Spool { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }

    pub(crate) fn wasm(context: impl Into<String>, error: &wasmtime::Error) -> Self {
        let context = context.into();
        match error.downcast_ref::<wasmtime::WasmBacktrace>() {
            // A trap: the backtrace is the context wasmtime added; the cause is the trap.
            Some(backtrace) => Error::Wasm {
                context,
                message: error.root_cause().to_string(),
                backtrace: Some(backtrace.to_string()),
            },
            None => Error::Wasm {
                context,
                message: format!("{error:#}"),
                backtrace: None,
            },
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Spool { message, .. } => f.write_str(message),
            Error::Storage(e) => write!(f, "storage failed: {e}"),
            Error::Sqlite { path, message } if path.is_empty() => {
                write!(f, "cannot open the database: {message}")
            }
            Error::Sqlite { path, message } => {
                write!(f, "cannot open the database {path}: {message}")
            }
            Error::Postgres { target, message } => {
                write!(f, "cannot use the PostgreSQL database {target}: {message}")
            }
            Error::Wasm {
                context, message, ..
            } => write!(f, "{context}: {message}"),
            Error::ResourceLimit { message, .. } => f.write_str(message),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Storage(e) => Some(e),
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<StorageError> for Error {
    fn from(error: StorageError) -> Self {
        Error::Storage(error)
    }
}

/// The failure of [`Spool::compact_with`](crate::Spool::compact_with): the summarizer's
/// own error, or a failure of Spool's prepare or commit. When the summarizer fails,
/// nothing was written.
#[derive(Debug)]
pub enum CompactWithError<E> {
    /// The summarizer closure returned an error; the transcript is untouched.
    Summarizer(E),
    /// Preparing or committing the compaction failed.
    Spool(Error),
}

impl<E> CompactWithError<E> {
    /// The stable reason code: `summarizer` for [`CompactWithError::Summarizer`], the
    /// [`Error::code`] otherwise.
    pub fn code(&self) -> &str {
        match self {
            CompactWithError::Summarizer(_) => "summarizer",
            CompactWithError::Spool(e) => e.code(),
        }
    }
}

impl<E: fmt::Display> fmt::Display for CompactWithError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompactWithError::Summarizer(e) => {
                write!(f, "the summarizer failed (nothing was written): {e}")
            }
            CompactWithError::Spool(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for CompactWithError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CompactWithError::Summarizer(e) => Some(e),
            CompactWithError::Spool(e) => Some(e),
        }
    }
}

impl<E> From<Error> for CompactWithError<E> {
    fn from(error: Error) -> Self {
        CompactWithError::Spool(error)
    }
}
