//! The core's error type: expected failures are values with context.

use std::fmt;

/// What kind of failure an [`Error`] is: the stable reason codes, one list for the WIT
/// `error-code` enum (converted by `wit_map!`), the native host's errors, the CLI's
/// `error[code]` and the JS API's `code` (`web/src/ts.rs`'s `ErrorCode`, checked
/// against [`ErrorCode::ALL`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The session, entry or record does not exist.
    NotFound,
    /// The write conflicts with existing state, e.g. a duplicate create.
    Conflict,
    /// An argument is malformed or out of range.
    InvalidArgument,
    /// The write names an epoch older than the session's current one.
    StaleEpoch,
    /// A stored record could not be decoded.
    Corruption,
    /// The storage backend failed; nothing was written.
    Storage,
    /// A commit was sent and its reply lost: applied whole or not at all.
    Unknown,
    /// A bug inside Spool or its driver.
    Internal,
}

impl ErrorCode {
    /// Every code, in the WIT enum's order.
    pub const ALL: [ErrorCode; 8] = [
        ErrorCode::NotFound,
        ErrorCode::Conflict,
        ErrorCode::InvalidArgument,
        ErrorCode::StaleEpoch,
        ErrorCode::Corruption,
        ErrorCode::Storage,
        ErrorCode::Unknown,
        ErrorCode::Internal,
    ];

    /// The code as the CLI and the JS API spell it (`not_found`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NotFound => "not_found",
            ErrorCode::Conflict => "conflict",
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::StaleEpoch => "stale_epoch",
            ErrorCode::Corruption => "corruption",
            ErrorCode::Storage => "storage",
            ErrorCode::Unknown => "unknown",
            ErrorCode::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    /// A commit's reply was lost ([`crate::StorageError::Unknown`]): it applied whole or
    /// not at all, which only reading again tells. Reason code `unknown`.
    Unknown {
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
    /// The stable reason code ([`ErrorCode`]).
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Error::NotFound { .. } => ErrorCode::NotFound,
            Error::Conflict { .. } | Error::ForkConflict { .. } => ErrorCode::Conflict,
            Error::InvalidArgument { .. } => ErrorCode::InvalidArgument,
            Error::StaleEpoch { .. } => ErrorCode::StaleEpoch,
            Error::Corruption { .. } => ErrorCode::Corruption,
            Error::Storage { .. } => ErrorCode::Storage,
            Error::Unknown { .. } => ErrorCode::Unknown,
            Error::Internal { .. } => ErrorCode::Internal,
        }
    }

    /// The stable reason code as text: `not_found`, `conflict`, `invalid_argument`,
    /// `stale_epoch`, `corruption`, `storage`, `unknown` or `internal`.
    pub fn code(&self) -> &'static str {
        self.error_code().as_str()
    }

    /// Builds an [`Error::InvalidArgument`].
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            field,
            reason: reason.into(),
        }
    }

    /// Builds the [`Error::InvalidArgument`] for `field` when its JSON did not parse:
    /// `what` went wrong, then the parser's message with its quotes of the input
    /// shortened ([`shorten_quoted`]).
    pub fn unparsed(field: &'static str, what: &str, cause: &dyn fmt::Display) -> Self {
        Error::invalid(
            field,
            format!("{what}: {}", shorten_quoted(&cause.to_string())),
        )
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
            Error::Unknown { cause } => write!(
                f,
                "the outcome is unknown: the commit was sent but its reply was lost (it \
                 applied whole or not at all; read again to tell): {cause}"
            ),
            Error::Internal { detail } => write!(f, "internal error: {detail}"),
        }
    }
}

impl std::error::Error for Error {}

/// The most characters of someone else's input an error message quotes.
pub const MAX_QUOTED_CHARS: usize = 64;
/// How many characters past [`MAX_QUOTED_CHARS`] a quoted run may hold before
/// [`shorten_quoted`] cuts it: room for the note of an earlier cut.
const CUT_NOTE_CHARS: usize = 32;
/// The most characters of a message [`shorten_quoted`] returns.
pub const MAX_MESSAGE_CHARS: usize = 4096;

/// `input` in backticks for an error message: whole when it is at most
/// [`MAX_QUOTED_CHARS`] characters, else its first characters, `…` and its length, so an
/// error never echoes a large input back.
pub fn quote(input: &str) -> String {
    match input.char_indices().nth(MAX_QUOTED_CHARS) {
        None => format!("`{input}`"),
        Some((cut, _)) => format!("`{}…` ({} bytes)", &input[..cut], input.len()),
    }
}

/// A message written by someone else (a JSON parser, an argument parser) that may quote
/// the input it refused, with every quoted run (between backticks, double quotes, or
/// single quotes opened at the start of a word) that is well over [`MAX_QUOTED_CHARS`]
/// characters cut to that many, `…` and the size cut (a message shortened once stays as
/// it is); and then, should quotes not pair up, cut to at most [`MAX_MESSAGE_CHARS`]
/// characters in all.
pub fn shorten_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(MAX_MESSAGE_CHARS + 64));
    let mut chars = message.chars();
    let mut previous: Option<char> = None;
    while let Some(c) = chars.next() {
        out.push(c);
        let opens = match c {
            '`' | '"' => true,
            '\'' => !previous.is_some_and(char::is_alphanumeric),
            _ => false,
        };
        previous = Some(c);
        if !opens {
            continue;
        }
        // Inside a quoted run: keep it whole unless it runs past the limit and the
        // room a cut's own note takes (so a message shortened once is left as it is),
        // else its first characters, `…` and the size of the rest.
        let mut run = String::new();
        let (mut count, mut skipped, mut escaped, mut closed) = (0usize, 0usize, false, false);
        for q in chars.by_ref() {
            if q == c && !(escaped && c == '"') {
                closed = true;
                break;
            }
            escaped = !escaped && q == '\\';
            count += 1;
            if count <= MAX_QUOTED_CHARS + CUT_NOTE_CHARS {
                run.push(q);
            } else {
                skipped += q.len_utf8();
            }
        }
        if skipped > 0 {
            let cut = run
                .char_indices()
                .nth(MAX_QUOTED_CHARS)
                .map_or(run.len(), |(i, _)| i);
            skipped += run.len() - cut;
            run.truncate(cut);
            run.push_str(&format!("… ({skipped} more bytes)"));
        }
        out.push_str(&run);
        if closed {
            out.push(c);
        }
    }
    match out.char_indices().nth(MAX_MESSAGE_CHARS) {
        None => out,
        Some((cut, _)) => format!("{}… ({} bytes in all)", &out[..cut], out.len()),
    }
}
