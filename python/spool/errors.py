"""The exceptions of Spool's calls: one class per reason code, under `SpoolError`.

Every failed call raises the class of its code (`spool.StaleEpoch` for `stale_epoch`, …);
`code` and `message` hold the code and its detail. A code this version does not know
raises `SpoolError` itself.
"""

from __future__ import annotations


class SpoolError(Exception):
    """A call Spool refused or could not complete."""

    code: str = ""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.code else self.message


class NotFound(SpoolError):
    """The session, entry or record does not exist (`not_found`)."""

    code = "not_found"


class Conflict(SpoolError):
    """The write conflicts with what is stored, e.g. a key in use (`conflict`)."""

    code = "conflict"


class InvalidArgument(SpoolError, ValueError):
    """An argument is malformed or out of range (`invalid_argument`)."""

    code = "invalid_argument"


class StaleEpoch(SpoolError):
    """The call names an epoch older than the session's (`stale_epoch`): it was reset."""

    code = "stale_epoch"


class Corruption(SpoolError):
    """A stored record could not be decoded (`corruption`)."""

    code = "corruption"


class StorageError(SpoolError):
    """The database failed or could not be opened; nothing was written (`storage`)."""

    code = "storage"


class UnknownOutcome(SpoolError):
    """A commit was sent and its reply lost: applied whole or not at all (`unknown`)."""

    code = "unknown"


class InternalError(SpoolError):
    """A bug inside Spool or its host (`internal`)."""

    code = "internal"


class ResourceLimit(SpoolError):
    """The call went over the memory or execution limit; nothing was written
    (`resource_limit`)."""

    code = "resource_limit"


class IoError(SpoolError, OSError):
    """A file operation of the host failed (`io`)."""

    code = "io"


ERRORS: dict[str, type[SpoolError]] = {
    cls.code: cls
    for cls in (
        NotFound,
        Conflict,
        InvalidArgument,
        StaleEpoch,
        Corruption,
        StorageError,
        UnknownOutcome,
        InternalError,
        ResourceLimit,
        IoError,
    )
}


def from_code(code: str, message: str) -> SpoolError:
    """The exception of `code` (`SpoolError` for a code not listed in `ERRORS`)."""
    cls = ERRORS.get(code)
    if cls is None:
        return SpoolError(message, code)
    return cls(message)
