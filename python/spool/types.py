"""The records Spool's calls take and return, as `TypedDict`s.

Results are plain dictionaries decoded from the core's JSON: these classes name their
main fields for type checkers and readers (a record may hold more fields than listed
here; see the Rust documentation of the type of the same name in `spool`).
"""

from __future__ import annotations

from typing import Any, Literal, Optional, TypedDict

Role = Literal["user", "assistant", "tool", "system"]


class Session(TypedDict, total=False):
    """A session: its identity, epoch, status and counters."""

    key: str
    session_id: str
    agent_id: Optional[str]
    status: str
    epoch: int
    created_at: int
    updated_at: int
    entry_count: int
    last_entry_id: int
    total_tokens: int
    compaction_count: int


class Entry(TypedDict, total=False):
    """One entry of a transcript."""

    id: int
    message_id: str
    role: Role
    content: str
    created_at: int
    token_count: Optional[int]
    tool_calls: Any
    tool_call_id: Optional[str]
    turn_id: Optional[str]
    reasoning: str
    kind: str


class AppendRequest(TypedDict, total=False):
    """What `append_entries` takes per entry (`role` and `content` are required)."""

    role: Role
    content: str
    token_count: int
    message_id: str
    tool_calls: Any
    tool_call_id: str
    turn_id: str
    reasoning: str
    kind: Literal["context", "summary", "command"]
    expected_epoch: int


class IntentOutcome(TypedDict, total=False):
    """What `get_or_create` and `apply_intent` return."""

    session: Session
    created: bool
    rotated: bool


class TruncateOutcome(TypedDict):
    """What `truncate` and `rollback` return."""

    truncated: bool
    before_count: int
    after_count: int


class BranchInfo(Session, total=False):
    """A branch: the child session's fields, with where it came from."""

    parent_session_key: Optional[str]
    spawn_depth: int
    forked_from_parent: bool


class SearchHit(TypedDict, total=False):
    """One hit of a full-text search."""

    session_key: str
    session_id: str
    entry_id: int
    message_id: str
    role: Role
    created_at: int
    score: float
    snippet: dict[str, Any]


class CompactionResult(TypedDict, total=False):
    """What a compaction did."""

    compaction_id: str
    removed_count: int
    summary: str
    summary_source: str
    coverage_status: str
    skip_reason: Optional[str]


class Prepared(TypedDict, total=False):
    """The plan of a compaction a summarizer gets: the text to summarize (`input`) and
    the obligations the summary must keep."""

    input: str
    obligations: list[dict[str, Any]]
    removed_count: int
