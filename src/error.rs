//! The core's error type: expected failures are values with context.

use std::fmt;

/// A failed Spool operation.
///
/// Every variant maps to a stable reason code ([`Error::code`]) shared by the
/// WIT API, the CLI and the JS API.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The named thing does not exist.
    NotFound {
        /// What was looked for (`session`, `cursor`, …).
        what: &'static str,
        /// The key or id that was looked for.
        key: String,
    },
    /// The write conflicts with existing state.
    Conflict {
        /// Why.
        reason: String,
    },
    /// An argument is malformed or out of range.
    InvalidArgument {
        /// The argument.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The write names an epoch older than the session's current one.
    StaleEpoch {
        /// The session key.
        key: String,
        /// The epoch the writer read.
        expected: u64,
        /// The session's current epoch.
        actual: u64,
    },
    /// A stored record could not be decoded.
    Corruption {
        /// The storage key of the record, printed readably.
        key: String,
        /// What failed.
        detail: String,
    },
    /// The storage backend failed; nothing was written by the failing commit.
    Storage {
        /// The backend's own message.
        cause: String,
    },
    /// A provider fork cannot proceed as asked. Reason code `conflict`, like
    /// [`Error::Conflict`], with a machine-readable fork reason kept verbatim
    /// ([`Error::fork_reason`]): Spool's own (`request_changed`, `stale_transition`,
    /// `turn_running`, `turn_interrupted`, `target_exists`, `target_reserved`,
    /// `inconsistent_identity`, `source_changed`, `operation_failed`) or one a host or
    /// provider gave (e.g. `attachment_unsupported`).
    ForkConflict {
        /// The fork reason code.
        reason: String,
        /// What happened, for people.
        detail: String,
    },
    /// A bug inside Spool or its driver (an operation was driven out of order).
    Internal {
        /// What went wrong.
        detail: String,
    },
}

impl Error {
    /// The stable reason code: `not_found`, `conflict`, `invalid_argument`,
    /// `stale_epoch`, `corruption`, `storage` or `internal`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotFound { .. } => "not_found",
            Error::Conflict { .. } | Error::ForkConflict { .. } => "conflict",
            Error::InvalidArgument { .. } => "invalid_argument",
            Error::StaleEpoch { .. } => "stale_epoch",
            Error::Corruption { .. } => "corruption",
            Error::Storage { .. } => "storage",
            Error::Internal { .. } => "internal",
        }
    }

    /// Builds an [`Error::InvalidArgument`].
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            field,
            reason: reason.into(),
        }
    }

    /// Builds an [`Error::ForkConflict`].
    pub fn fork_conflict(reason: impl Into<String>, detail: impl Into<String>) -> Self {
        Error::ForkConflict {
            reason: reason.into(),
            detail: detail.into(),
        }
    }

    /// The fork reason of an [`Error::ForkConflict`] (e.g. `attachment_unsupported`),
    /// kept verbatim from where the conflict was found.
    pub fn fork_reason(&self) -> Option<&str> {
        match self {
            Error::ForkConflict { reason, .. } => Some(reason),
            _ => None,
        }
    }

    /// Builds an [`Error::Internal`].
    pub fn internal(detail: impl Into<String>) -> Self {
        Error::Internal {
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotFound { what, key } => write!(f, "{what} not found: {key}"),
            Error::Conflict { reason } => f.write_str(reason),
            Error::ForkConflict { reason, detail } => {
                write!(f, "fork conflict ({reason}): {detail}")
            }
            Error::InvalidArgument { field, reason } => {
                write!(f, "invalid argument `{field}`: {reason}")
            }
            Error::StaleEpoch {
                key,
                expected,
                actual,
            } => write!(
                f,
                "stale epoch for session {key}: the write read epoch {expected}, the session is at {actual}"
            ),
            Error::Corruption { key, detail } => {
                write!(f, "corrupt record at {key}: {detail}")
            }
            Error::Storage { cause } => write!(f, "storage failed: {cause}"),
            Error::Internal { detail } => write!(f, "internal error: {detail}"),
        }
    }
}

impl std::error::Error for Error {}
