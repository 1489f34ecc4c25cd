"""`SpoolSession`: a session of the OpenAI Agents SDK on Spool.

It implements the SDK's `Session` protocol (`get_items`, `add_items`, `pop_item`,
`clear_session`, all async) on the Spool session whose key is the SDK's `session_id`,
and adds what the SDK's sessions lack: `compact()` (Spool's compaction, with its own
summary or yours), `branch()` (a new session sharing this history without copying it)
and `search()` (full-text search of this session's history)::

    from agents import Agent, Runner
    from spool.agents import SpoolSession

    session = SpoolSession("conversation-42", "spool.db")
    result = await Runner.run(agent, "What city is the Golden Gate Bridge in?", session=session)

The package does not import the SDK: the protocol is structural.

How items are stored: an item that is a plain message (exactly `role` and a text
`content`, the role `user`, `assistant` or `system`) is an entry of that role and
text, so the CLI shows it as written and entries the CLI wrote read back as messages.
Any other item (a model output with content parts, a function call or its output,
reasoning, …) is kept exactly: its JSON is the entry's content and its message id
starts with `ITEM_PREFIX`; a function call's item is also the entry's `tool_calls`, and
a call output is a `tool` entry answering its `call_id`, so compaction pairs them.

After a compaction, the history starts with the summary of what it replaced, as a
`system` message (`summary_item`), followed by the entries it kept and those written
since: what the next model call is to see. `pop_item` never removes the summary.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Callable
from typing import Any, Optional, Union

from . import MAX_PAGE, Spool
from .errors import NotFound
from .types import BranchInfo, CompactionResult, Entry, Prepared, SearchHit

#: The message-id prefix of an entry that holds an SDK item as JSON.
ITEM_PREFIX = "sdk-item-"

_PLAIN_ROLES = ("user", "assistant", "system")


def to_request(item: dict[str, Any]) -> dict[str, Any]:
    """The append request that stores the SDK item `item` (see the module's docs)."""
    role = item.get("role")
    content = item.get("content")
    if (
        len(item) == 2
        and role in _PLAIN_ROLES
        and isinstance(content, str)
    ):
        return {"role": role, "content": content}
    kind = item.get("type")
    request: dict[str, Any] = {
        "content": json.dumps(item, ensure_ascii=False),
        "message_id": ITEM_PREFIX + uuid.uuid4().hex,
    }
    if isinstance(kind, str) and kind.endswith("_output") and isinstance(item.get("call_id"), str):
        request["role"] = "tool"
        request["tool_call_id"] = item["call_id"]
    elif role in _PLAIN_ROLES:
        request["role"] = role
    elif role == "developer":
        request["role"] = "system"
        request["kind"] = "context"
    else:
        request["role"] = "assistant"
    if isinstance(kind, str) and kind.endswith("_call"):
        request["tool_calls"] = item
    return request


def to_item(entry: Entry) -> dict[str, Any]:
    """The SDK item an entry holds: the item itself, or a message of its role and text
    (a `tool` entry answering a call: that call's output)."""
    if entry.get("message_id", "").startswith(ITEM_PREFIX):
        return json.loads(entry["content"])
    role = entry["role"]
    if role == "tool":
        if entry.get("tool_call_id"):
            return {
                "type": "function_call_output",
                "call_id": entry["tool_call_id"],
                "output": entry["content"],
            }
        role = "user"
    return {"role": role, "content": entry["content"]}


def summary_item(text: str) -> dict[str, Any]:
    """The item the summary of a compaction reads as: a system message."""
    return {"role": "system", "content": text}


class SpoolSession:
    """The OpenAI Agents SDK's `Session` on the Spool session under `session_id`.

    `database` is a `Spool` handle (shared by every session on it) or what `Spool`
    opens (a SQLite file, a `postgres://` URL, `":memory:"`); `workspace` applies to the
    latter. `session_settings` is the SDK's `SessionSettings` (or a dict): its `limit`
    is what `get_items()` returns when called without one.

    The session is created by its first `add_items`. The async methods run each call
    in a worker thread (`asyncio.to_thread`, as the SDK's own sessions do), during which
    the GIL is released; the calls of one `SpoolSession` are serialized. With
    `in_thread=False` they run on the event loop's own thread instead: no thread
    hand-off per call (faster on a database in memory or on tmpfs), but a commit that
    waits for the disk holds up the loop meanwhile.
    """

    def __init__(
        self,
        session_id: str,
        database: Union[Spool, str, Any] = "spool.db",
        *,
        workspace: str = "default",
        session_settings: Any = None,
        in_thread: bool = True,
    ) -> None:
        self.session_id = session_id
        self.in_thread = in_thread
        self.session_settings = session_settings
        self.spool = database if isinstance(database, Spool) else Spool(database, workspace)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SpoolSession({self.session_id!r}, workspace={self.spool.workspace!r})"

    async def _run(self, f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.in_thread:
            return await asyncio.to_thread(f, *args, **kwargs)
        return f(*args, **kwargs)

    @property
    def key(self) -> str:
        """The key of the Spool session (the SDK's `session_id`)."""
        return self.session_id

    # -- the SDK's Session protocol --------------------------------------------

    async def get_items(self, limit: Optional[int] = None) -> list[dict[str, Any]]:
        """The conversation history, oldest first: the newest `limit` items (default:
        `session_settings.limit`; none: all of them)."""
        return await self._run(self.get_items_sync, limit)

    async def add_items(self, items: list[dict[str, Any]]) -> None:
        """Appends `items`, in order, in one commit (up to 1000 of them)."""
        if not items:
            return
        await self._run(self.add_items_sync, items)

    async def pop_item(self) -> Optional[dict[str, Any]]:
        """Removes and returns the newest item (`None` when there is none)."""
        return await self._run(self.pop_item_sync)

    async def clear_session(self) -> None:
        """Removes every item: deletes the Spool session (the next `add_items`
        creates it again)."""
        await self._run(self.clear_session_sync)

    # -- beyond the protocol ----------------------------------------------------

    async def compact(
        self,
        context_window_tokens: int,
        summarizer: Optional[Callable[[Prepared], str]] = None,
        **request: Any,
    ) -> CompactionResult:
        """Compacts the history for a model of `context_window_tokens`: older items are
        replaced by a summary message (Spool's own, or what `summarizer` returns for the
        prepared plan; see `Spool.compact`). The items it replaced stay readable in the
        canonical transcript (`spool.entries(key, canonical=True)`)."""
        return await self._run(
            self.spool.compact, self.key, context_window_tokens, summarizer, **request
        )

    async def branch(
        self, session_id: str, *, before: Optional[str] = None, max_tokens: Optional[int] = None
    ) -> SpoolSession:
        """A new session `session_id` that starts with this one's history (or with what
        precedes the entry whose message id is `before`), shared, not copied; later
        items of either stay their own."""
        await self._run(self.branch_sync, session_id, before, max_tokens)
        return SpoolSession(
            session_id, self.spool, session_settings=self.session_settings, in_thread=self.in_thread
        )

    async def search(self, query: str, *, limit: int = 20) -> list[SearchHit]:
        """The best `limit` hits of `query` (Spool's query language) in this session's
        history."""
        return await self._run(self.search_sync, query, limit)

    # -- the same, synchronously ------------------------------------------------

    def _limit(self, limit: Optional[int]) -> Optional[int]:
        if limit is not None:
            return limit
        settings = self.session_settings
        if settings is None:
            return None
        if isinstance(settings, dict):
            return settings.get("limit")
        return getattr(settings, "limit", None)

    def get_items_sync(self, limit: Optional[int] = None) -> list[dict[str, Any]]:
        """`get_items`, blocking."""
        limit = self._limit(limit)
        if limit == 0:
            return []
        with self._lock:
            session = self.spool.get_session(self.key)
            if session is None:
                return []
            summary = self._summary(session)
            try:
                if limit is None or limit < 0:
                    items = [to_item(e) for e in self.spool.entries(self.key)]
                    return summary + items
                newest: list[Entry] = []
                for page in self.spool.pages(
                    self.key, newest_first=True, page_size=min(limit, MAX_PAGE)
                ):
                    newest.extend(page[: limit - len(newest)])
                    if len(newest) >= limit:
                        break
            except NotFound:
                return []
        items = [to_item(e) for e in reversed(newest)]
        return (summary + items)[-limit:]

    def _summary(self, session: dict[str, Any]) -> list[dict[str, Any]]:
        """The summary item of the session's newest compaction, if it has one."""
        if not session.get("compaction_count"):
            return []
        summaries = [
            s
            for s in self.spool.call("list_summaries", key=self.key)
            if s.get("session_id") == session["session_id"]
        ]
        if not summaries:
            return []
        newest = max(summaries, key=lambda s: s["compaction_index"])
        return [summary_item(newest["summary_text"])]

    def add_items_sync(self, items: list[dict[str, Any]]) -> None:
        """`add_items`, blocking: up to 1000 items (`MAX_PAGE`) are one commit, more
        are written 1000 to a commit."""
        if not items:
            return
        requests = [to_request(item) for item in items]
        with self._lock:
            for start in range(0, len(requests), MAX_PAGE):
                chunk = requests[start : start + MAX_PAGE]
                try:
                    self.spool.call_quiet("append_entries", key=self.key, requests=chunk)
                except NotFound:
                    self.spool.get_or_create(self.key)
                    self.spool.call_quiet("append_entries", key=self.key, requests=chunk)

    def pop_item_sync(self) -> Optional[dict[str, Any]]:
        """`pop_item`, blocking: the newest entry is removed and returned in one commit
        (`pop_entry`); `None` when the session has none or does not exist."""
        with self._lock:
            try:
                entry = self.spool.call("pop_entry", key=self.key)
            except NotFound:
                return None
            return None if entry is None else to_item(entry)

    def clear_session_sync(self) -> None:
        """`clear_session`, blocking."""
        with self._lock:
            try:
                self.spool.delete_session(self.key)
            except NotFound:
                pass

    def branch_sync(
        self, session_id: str, before: Optional[str] = None, max_tokens: Optional[int] = None
    ) -> BranchInfo:
        """`branch`, blocking: returns the child's branch record."""
        with self._lock:
            return self.spool.branch(self.key, session_id, before=before, max_tokens=max_tokens)

    def search_sync(self, query: str, limit: int = 20) -> list[SearchHit]:
        """`search`, blocking."""
        hits: list[SearchHit] = []
        for hit in self.spool.search(query, limit=min(max(limit, 20), 100)):
            if hit["session_key"] == self.key:
                hits.append(hit)
                if len(hits) >= limit:
                    break
        return hits
