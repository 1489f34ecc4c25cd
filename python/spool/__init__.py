"""Spool in Python: sessions and transcripts of AI agents in a SQLite file (or PostgreSQL).

The same component as the `spool` CLI runs underneath (on wasmtime, through the native
host), so a database the CLI wrote opens here and the reverse::

    import spool
    db = spool.Spool("spool.db", workspace="default")
    db.append("agent:main:main", "user", "fix the failing test")

Every call of Spool's operation table is available: the common ones as methods below,
any other through `Spool.call(name, **args)` or as a method of the same name
(`db.list_states(key="k")`). Results are plain dictionaries (see `spool.types`); a
refusal raises the exception class of its code (see `spool.errors`). Calls release
the GIL while they run; one handle may be shared between threads (its calls run one
at a time).

`spool.agents.SpoolSession` is a session of the OpenAI Agents SDK on Spool.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any, Optional, Union

from . import _native
from .errors import (
    ERRORS,
    Conflict,
    Corruption,
    InternalError,
    InvalidArgument,
    IoError,
    NotFound,
    ResourceLimit,
    SpoolError,
    StaleEpoch,
    StorageError,
    UnknownOutcome,
    from_code,
)
from .types import (
    AppendRequest,
    BranchInfo,
    CompactionResult,
    Entry,
    IntentOutcome,
    Prepared,
    Role,
    SearchHit,
    Session,
    TruncateOutcome,
)

__all__ = [
    "Spool",
    "SpoolSession",
    "SpoolError",
    "NotFound",
    "Conflict",
    "InvalidArgument",
    "StaleEpoch",
    "Corruption",
    "StorageError",
    "UnknownOutcome",
    "InternalError",
    "ResourceLimit",
    "IoError",
    "ERRORS",
    "CALLS",
    "AppendRequest",
    "BranchInfo",
    "CompactionResult",
    "Entry",
    "IntentOutcome",
    "Prepared",
    "Role",
    "SearchHit",
    "Session",
    "TruncateOutcome",
]

#: Every call of the operation table: name -> (its fields, those the host fills in).
CALLS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    name: (tuple(fields), tuple(fills)) for name, fields, fills in _native.Native.calls()
}

#: The largest page a transcript read returns.
MAX_PAGE = 1000

PathLike = Union[str, "os.PathLike[str]"]


def _raise(error: _native.NativeError) -> SpoolError:
    code, message = error.args
    return from_code(code, message)


class Spool:
    """Sessions and transcripts in one workspace of one database.

    `database` is a SQLite file (created with its directories if missing), a
    `postgres://` URL, or `None` / `":memory:"` for a private in-memory database.
    `durability="normal"` trades the newest commits on an operating-system crash for
    speed (SQLite's `synchronous=NORMAL`); the default `"full"` has every commit on
    disk when it returns. Reset archives go to `archive_dir` (default: `spool-archives`
    beside the database file).
    """

    def __init__(
        self,
        database: Optional[PathLike] = "spool.db",
        workspace: str = "default",
        *,
        durability: str = "full",
        archive_dir: Optional[PathLike] = None,
    ) -> None:
        if database is not None and os.fspath(database) == ":memory:":
            database = None
        try:
            self._native = _native.Native(
                None if database is None else os.fspath(database),
                workspace,
                durability,
                None if archive_dir is None else os.fspath(archive_dir),
            )
        except _native.NativeError as e:
            raise _raise(e) from None
        self._workspace = workspace

    @property
    def workspace(self) -> str:
        """The workspace this handle acts in."""
        return self._workspace

    def __repr__(self) -> str:
        return f"Spool(workspace={self._workspace!r})"

    # -- any call ---------------------------------------------------------------

    def call(self, op: str, /, **args: Any) -> Any:
        """Runs the table call `op` with its fields as keyword arguments and returns its
        result. `now_ms` and the ids a call gives what it creates are filled in when
        left out (or `None`)."""
        try:
            text = self._native.call(op, json.dumps(args))
        except _native.NativeError as e:
            raise _raise(e) from None
        return json.loads(text)

    def call_quiet(self, op: str, /, **args: Any) -> None:
        """`call` without reading the result (neither serialized nor decoded): for
        writes whose result the caller does not need."""
        try:
            self._native.call(op, json.dumps(args), False)
        except _native.NativeError as e:
            raise _raise(e) from None

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name in CALLS:

            def call(**args: Any) -> Any:
                return self.call(name, **args)

            call.__name__ = name
            call.__doc__ = f"The table call `{name}`: fields {', '.join(CALLS[name][0])}."
            return call
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- sessions ---------------------------------------------------------------

    def create_session(self, key: str) -> Session:
        """Creates the session under `key` (a key in use raises `Conflict`)."""
        return self.call("create_session", key=key)

    def get_session(self, key: str) -> Optional[Session]:
        """The session under `key`, or `None`."""
        return self.call("get_session", key=key)

    def get_or_create(self, key: str) -> IntentOutcome:
        """The session under `key`, created when missing (`created` says which)."""
        return self.call("get_or_create", key=key)

    def sessions(
        self, *, agent_id: Optional[str] = None, status: Optional[str] = None
    ) -> Iterator[Session]:
        """Every session (of `agent_id`, in `status`), most recently updated first,
        read a page at a time."""
        cursor = None
        while True:
            page = self.call(
                "list_sessions", limit=MAX_PAGE, cursor=cursor, agent_id=agent_id, status=status
            )
            yield from page["sessions"]
            cursor = page.get("next_cursor")
            if cursor is None:
                return

    def delete_session(self, key: str, *, expected_epoch: Optional[int] = None) -> None:
        """Deletes the session under `key` and everything it owns."""
        self.call("delete_session", key=key, expected_epoch=expected_epoch)

    def reset(self, key: str) -> IntentOutcome:
        """Resets the session under `key`: the old generation is archived, the epoch
        goes up by one and the transcript starts empty."""
        return self.call("apply_intent", key=key, intent="reset_same_key")

    def finish(
        self, key: str, status: str = "done", *, expected_epoch: Optional[int] = None
    ) -> Session:
        """Ends the session under `key` with `status`."""
        return self.call("finish", key=key, status=status, expected_epoch=expected_epoch)

    # -- transcripts ------------------------------------------------------------

    def append(self, key: str, role: Role, content: str, **fields: Any) -> Entry:
        """Appends one entry (`fields`: the rest of an `AppendRequest`, such as
        `token_count`, `message_id`, `tool_calls`, `expected_epoch`)."""
        request = dict(fields, role=role, content=content)
        return self.call("append_entry", key=key, request=request)

    def append_entries(self, key: str, requests: list[AppendRequest]) -> list[Entry]:
        """Appends `requests`, in order, in one commit."""
        return self.call("append_entries", key=key, requests=requests)

    def count_entries(self, key: str) -> int:
        """The number of entries in the transcript of `key`."""
        return self.call("count_entries", key=key)

    def get_entry(self, key: str, message_id: str) -> Optional[Entry]:
        """The entry with `message_id`, or `None`."""
        return self.call("get_entry", key=key, message_id=message_id)

    def pages(
        self,
        key: str,
        *,
        canonical: bool = False,
        newest_first: bool = False,
        page_size: int = MAX_PAGE,
    ) -> Iterator[list[Entry]]:
        """The transcript of `key` a page at a time (memory does not grow with the
        session): the active transcript, or with `canonical` every entry ever written,
        compacted ones included."""
        op = "read_canonical_page" if canonical else "read_page"
        order = "newest_first" if newest_first else "oldest_first"
        cursor = None
        while True:
            page = self.call(
                op, key=key, request={"order": order, "cursor": cursor, "limit": page_size}
            )
            yield page["entries"]
            cursor = page.get("next_cursor")
            if cursor is None:
                return

    def entries(self, key: str, *, canonical: bool = False, newest_first: bool = False) -> Iterator[Entry]:
        """The entries of `key` one at a time, read a page at a time."""
        for page in self.pages(key, canonical=canonical, newest_first=newest_first):
            yield from page

    def transcript(self, key: str) -> list[Entry]:
        """The whole active transcript of `key`, oldest first."""
        return list(self.entries(key))

    def last_entries(self, key: str, n: int) -> list[Entry]:
        """The newest `n` entries of `key` (at most `MAX_PAGE`), oldest first."""
        if n <= 0:
            return []
        page = self.call(
            "read_page", key=key, request={"order": "newest_first", "limit": min(n, MAX_PAGE)}
        )
        return page["entries"][::-1]

    def truncate(
        self, key: str, max_messages: int, *, expected_epoch: Optional[int] = None
    ) -> TruncateOutcome:
        """Keeps the newest `max_messages` entries of `key`."""
        return self.call(
            "truncate", key=key, max_messages=max_messages, expected_epoch=expected_epoch
        )

    def rollback(
        self, key: str, turns: int = 1, *, expected_epoch: Optional[int] = None
    ) -> TruncateOutcome:
        """Drops the last `turns` turns of `key`: every entry from the first user message
        of the earliest dropped turn on."""
        return self.call("rollback", key=key, turns=turns, expected_epoch=expected_epoch)

    def search(self, query: str, *, limit: int = 20) -> Iterator[SearchHit]:
        """Full-text search of the workspace's transcripts, best first, fetched `limit`
        hits a page at a time (stop iterating to stop reading)."""
        cursor = None
        while True:
            page = self.call("search", query=query, limit=limit, cursor=cursor)
            yield from page["hits"]
            cursor = page.get("next_cursor")
            if cursor is None:
                return

    # -- compaction and branches -----------------------------------------------

    def compact(
        self,
        key: str,
        context_window_tokens: int,
        summarizer: Optional[Callable[[Prepared], str]] = None,
        **request: Any,
    ) -> CompactionResult:
        """Compacts the transcript of `key` for a model of `context_window_tokens`.

        Without `summarizer`, Spool's built-in summary. With one (any LLM call), it gets
        the prepared plan (`input`, the text to summarize; `obligations`, what the
        summary must keep) and returns the summary text; it is not called when nothing
        needs compacting, and when it raises, nothing is written and its exception
        propagates. `request`: the rest of the compaction request (`config`, …).
        """
        request = dict(request, context_window_tokens=context_window_tokens)
        if summarizer is None:
            return self.call("compact", key=key, request=request)

        def summarize(plan: str) -> str:
            summary = summarizer(json.loads(plan))
            if not isinstance(summary, str):
                raise TypeError(f"the summarizer returned {type(summary).__name__}, not str")
            return summary

        try:
            text = self._native.compact_with(key, json.dumps(request), summarize)
        except _native.NativeError as e:
            raise _raise(e) from None
        return json.loads(text)

    def branch(
        self,
        parent_key: str,
        child_key: str,
        *,
        fork: bool = True,
        before: Optional[str] = None,
        max_tokens: Optional[int] = None,
    ) -> BranchInfo:
        """Branches `child_key` off `parent_key`, sharing its history without copying
        it: all of it (`fork`, the default), only what precedes the message `before`, or
        none (`fork=False`). Over `max_tokens` of shared history, the branch starts
        empty."""
        request: dict[str, Any] = {
            "fork_transcript": fork and before is None,
            "fork_before_message_id": before,
            "max_fork_tokens": max_tokens,
        }
        return self.call("branch", parent_key=parent_key, child_key=child_key, request=request)

    def lineage(self, key: str) -> dict[str, Any]:
        """The ancestry of `key` and what it inherits."""
        return self.call("lineage", key=key)

    def list_children(self, key: str) -> list[BranchInfo]:
        """The branches made from `key`."""
        return self.call("list_children", key=key)


def __getattr__(name: str) -> Any:
    # `spool.SpoolSession` without importing the adapter until it is used.
    if name == "SpoolSession":
        from .agents import SpoolSession

        return SpoolSession
    raise AttributeError(f"module 'spool' has no attribute {name!r}")
