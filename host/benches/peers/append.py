#!/usr/bin/env python3
"""The append benchmark's workload in two Python peers, for `cargo xtask bench --peers`.

N appends of the same ~100-byte messages as host/benches/append.rs, each its own
commit, on disk (--disk-dir) and on tmpfs (/dev/shm when present), WAL with
synchronous=FULL, then the bytes on disk per message (database file + WAL after a
TRUNCATE checkpoint, divided by N):

- OpenAI Agents SDK, `SQLiteSession.add_items([item])`: one INSERT OR IGNORE of the
  session row, the message row, an UPDATE of the session row and a commit, in a worker
  thread (`asyncio.to_thread`). The SDK turns WAL on for each connection it opens; this
  script's subclass also sets synchronous=FULL on each.
- LangGraph, `SqliteSaver.put(config, checkpoint, ...)`: one INSERT OR REPLACE of a
  checkpoint row and a commit. The saver turns WAL on; the connection is this script's,
  with synchronous=FULL. Each checkpoint holds only the new message in its `messages`
  channel (the saver stores channel values inline, so a graph keeping the whole list in
  its state would write all of it every step): LangGraph's cheapest use.

Prints, besides its own lines, `peer<TAB>name<TAB>value<TAB>unit<TAB>spool figure` lines,
which the xtask puts beside Spool's figure of that name. `SPOOL_BENCH_N` or --n sets N
(default 10000).
"""

import argparse
import asyncio
import os
import shutil
import sqlite3
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

from agents.memory.sqlite_session import SQLiteSession
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

FULL = 2  # PRAGMA synchronous answers 2 for FULL


def content(i: int) -> str:
    """The text of message i, the same as append.rs's."""
    return (
        f"message {i}: the parser drops the last element of nested lists; "
        "moving the check after the push fixes it."
    )


def message(i: int) -> dict:
    return {"role": "user" if i % 2 == 0 else "assistant", "content": content(i)}


def bytes_on_disk(db: Path) -> int:
    """The database file plus its WAL once checkpointed (TRUNCATE empties the WAL)."""
    conn = sqlite3.connect(db)
    try:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        conn.close()
    if busy != 0:
        raise RuntimeError(f"the checkpoint of {db} was blocked")
    wal = Path(f"{db}-wal")
    return db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


class DurableSQLiteSession(SQLiteSession):
    """The SDK's session with synchronous=FULL on every connection it opens."""

    @staticmethod
    def _configure_connection(conn: sqlite3.Connection) -> None:
        SQLiteSession._configure_connection(conn)
        conn.execute("PRAGMA synchronous=FULL")
        if conn.execute("PRAGMA synchronous").fetchone()[0] != FULL:
            raise RuntimeError("synchronous=FULL did not take")


async def appends_per_second(session, n: int, name: str) -> float:
    """Times n `add_items([message(i)])` calls of an Agents SDK session, then checks
    that its history holds all n, the last one last."""
    started = time.perf_counter()
    for i in range(n):
        await session.add_items([message(i)])
    elapsed = time.perf_counter() - started
    items = await session.get_items()
    if len(items) != n or items[-1]["content"] != content(n - 1):
        raise RuntimeError(f"{name} kept {len(items)} items of {n}")
    return n / elapsed


async def openai_agents(directory: Path, n: int) -> tuple[float, float]:
    db = directory / "openai-agents.db"
    session = DurableSQLiteSession("bench", db)
    try:
        rate = await appends_per_second(session, n, "openai-agents")
    finally:
        session.close()
    return rate, bytes_on_disk(db) / n


def langgraph(directory: Path, n: int) -> tuple[float, float]:
    db = directory / "langgraph.db"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        conn.execute("PRAGMA synchronous=FULL")
        saver = SqliteSaver(conn)
        saver.setup()
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        sync = conn.execute("PRAGMA synchronous").fetchone()[0]
        if mode != "wal" or sync != FULL:
            raise RuntimeError(f"langgraph: journal_mode={mode}, synchronous={sync}")
        config = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        channel_version = None
        started = time.perf_counter()
        for i in range(n):
            channel_version = saver.get_next_version(channel_version, None)
            checkpoint = create_checkpoint(checkpoint, None, i)
            checkpoint["channel_values"] = {"messages": [message(i)]}
            checkpoint["channel_versions"] = {"messages": channel_version}
            config = saver.put(
                config,
                checkpoint,
                {"source": "loop", "step": i},
                {"messages": channel_version},
            )
        elapsed = time.perf_counter() - started
        (count,) = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
        latest = saver.get_tuple({"configurable": {"thread_id": "bench", "checkpoint_ns": ""}})
        if count != n or latest is None or latest.checkpoint["channel_values"][
            "messages"
        ] != [message(n - 1)]:
            raise RuntimeError(f"langgraph kept {count} checkpoints of {n}")
    finally:
        conn.close()
    return n / elapsed, bytes_on_disk(db) / n


def peer(name: str, value: float, unit: str, against: str) -> None:
    print(f"peer\t{name}\t{value}\t{unit}\t{against}", flush=True)


def regime(label: str, where: str, parent: Path, n: int) -> None:
    directory = Path(tempfile.mkdtemp(prefix="spool-peers-", dir=parent))
    try:
        oa_rate, oa_bytes = asyncio.run(openai_agents(directory, n))
        lg_rate, lg_bytes = langgraph(directory, n)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(f"{n} appends {where}, each its own commit (WAL, synchronous=FULL):")
    print(f"  openai-agents SQLiteSession.add_items: {oa_rate:9.0f} appends/s, {oa_bytes:.0f} B/message")
    print(f"  langgraph SqliteSaver.put            : {lg_rate:9.0f} appends/s, {lg_bytes:.0f} B/message")
    peer(f"openai-agents add_items, {label}", oa_rate, "appends/s", f"append {label}: component")
    peer(f"langgraph SqliteSaver.put, {label}", lg_rate, "appends/s", f"append {label}: component")
    if label == "disk":
        peer("openai-agents bytes/message", oa_bytes, "B/entry", "bytes/entry: component")
        peer("langgraph bytes/message", lg_bytes, "B/entry", "bytes/entry: component")


def run(description: str, header: str, regime) -> None:
    """Reads --disk-dir and --n (or `SPOOL_BENCH_N`), prints `header`, and runs
    `regime(label, where, parent, n)` on disk and, when the machine has one, on tmpfs."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--disk-dir", type=Path, required=True, help="a directory on disk")
    parser.add_argument("--n", type=int, default=int(os.environ.get("SPOOL_BENCH_N", "10000")))
    args = parser.parse_args()
    print(header)
    args.disk_dir.mkdir(parents=True, exist_ok=True)
    regime("disk", f"on disk ({args.disk_dir})", args.disk_dir, args.n)
    shm = Path("/dev/shm")
    if shm.is_dir():
        regime("tmpfs", "on tmpfs (/dev/shm)", shm, args.n)
    else:
        print("no /dev/shm on this machine: the tmpfs regime is skipped")


def main() -> None:
    run(
        __doc__.splitlines()[0],
        f"peers: openai-agents {version('openai-agents')}, "
        f"langgraph-checkpoint-sqlite {version('langgraph-checkpoint-sqlite')}, "
        f"SQLite {sqlite3.sqlite_version}",
        regime,
    )


if __name__ == "__main__":
    main()
