#!/usr/bin/env python3
"""Appends/s through the Python package's `SpoolSession`, beside the OpenAI Agents SDK's
`SQLiteSession` and LangGraph's `SqliteSaver`, for `cargo xtask bench python`.

The workload of host/benches/peers/append.py (whose peer measurements this reuses): N
appends of the same ~100-byte messages, each `add_items([message])` its own commit, on
disk (--disk-dir) and on tmpfs (/dev/shm when present), every database in WAL with
synchronous=FULL (Spool's default durability, `full`). Then the history is read back
and checked. SpoolSession runs twice: in a worker thread per call (its default, as the
SDK's sessions do) and with `in_thread=False` (on the event loop's thread).

Prints `figure` lines (Spool's rate, and SpoolSession over each peer: the goal is >= 3x
the SDK's own SQLiteSession on tmpfs) and `peer` lines beside Spool's rate.
`SPOOL_BENCH_N` or --n sets N (default 10000).
"""

import asyncio
import shutil
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "host" / "benches" / "peers"))

from append import appends_per_second, langgraph, openai_agents, peer, run  # noqa: E402

import spool  # noqa: E402
from spool.agents import SpoolSession  # noqa: E402

GOAL_OVER_SQLITE_SESSION = 3.0


async def spool_session(directory: Path, n: int, in_thread: bool) -> float:
    db = spool.Spool(directory / f"spool-{in_thread}.db")
    session = SpoolSession("bench", db, in_thread=in_thread)
    session.spool.get_or_create(session.key)  # not timed
    return await appends_per_second(session, n, "SpoolSession")


def figure(name: str, value: float, unit: str, goal: str) -> None:
    print(f"figure\t{name}\t{value}\t{unit}\t{goal}", flush=True)


def regime(label: str, where: str, parent: Path, n: int) -> None:
    directory = Path(tempfile.mkdtemp(prefix="spool-python-", dir=parent))
    try:
        ours = asyncio.run(spool_session(directory, n, in_thread=True))
        on_loop = asyncio.run(spool_session(directory, n, in_thread=False))
        sdk, _ = asyncio.run(openai_agents(directory, n))
        lg, _ = langgraph(directory, n)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(f"{n} appends {where}, each its own commit (WAL, synchronous=FULL):")
    print(f"  spool SpoolSession.add_items          : {ours:9.0f} appends/s")
    print(f"  the same, in_thread=False             : {on_loop:9.0f} appends/s")
    print(f"  openai-agents SQLiteSession.add_items : {sdk:9.0f} appends/s ({ours / sdk:.2f}x)")
    print(f"  langgraph SqliteSaver.put             : {lg:9.0f} appends/s ({ours / lg:.2f}x)")
    name = f"python: SpoolSession.add_items, {label}"
    figure(name, ours, "appends/s", "-")
    peer(f"openai-agents SQLiteSession.add_items, {label}", sdk, "appends/s", name)
    peer(f"langgraph SqliteSaver.put, {label}", lg, "appends/s", name)
    goal = f">= {GOAL_OVER_SQLITE_SESSION}" if label == "tmpfs" else "-"
    figure(f"python: SpoolSession/SQLiteSession, {label}", ours / sdk, "ratio", goal)
    figure(f"python: SpoolSession/SqliteSaver, {label}", ours / lg, "ratio", "-")
    figure(f"python: SpoolSession(in_thread=False).add_items, {label}", on_loop, "appends/s", "-")
    figure(
        f"python: SpoolSession(in_thread=False)/SQLiteSession, {label}", on_loop / sdk, "ratio", "-"
    )


def main() -> None:
    run(
        __doc__.splitlines()[0],
        f"python {sys.version.split()[0]}; openai-agents {version('openai-agents')}, "
        f"langgraph-checkpoint-sqlite {version('langgraph-checkpoint-sqlite')}",
        regime,
    )


if __name__ == "__main__":
    main()
