#!/usr/bin/env python3
"""The postgres benchmark's appends in two Python peers, on the same PostgreSQL server,
for `cargo xtask bench postgres --peers`.

N appends of the same ~100-byte messages as host/benches/postgres.rs (append.py's),
each its own commit, at each peer's default durability (the server's
synchronous_commit=on):

- LangGraph, `PostgresSaver.put(config, checkpoint, ...)` (langgraph-checkpoint-postgres,
  psycopg 3, autocommit connection): one upsert of a checkpoint row per append. Each
  checkpoint holds only the new message in its `messages` channel (LangGraph's cheapest
  use: a graph keeping the whole list in its state writes all of it every step).
- OpenAI Agents SDK, `SQLAlchemySession.add_items([item])` (SQLAlchemy's async engine on
  asyncpg): the session row, the message row and the session's update in one
  transaction per append.

Each peer gets a database of its own (created here). Prints, besides its own lines,
`peer<TAB>name<TAB>value<TAB>unit<TAB>spool figure` lines, which the xtask puts beside
Spool's figure of that name. `--url` is the server's superuser URL; `--n` (or
`SPOOL_BENCH_N`) sets N (default 2000).
"""

import argparse
import asyncio
import os
import time
from importlib.metadata import version

import psycopg
from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from langgraph.checkpoint.postgres import PostgresSaver

# The messages of the SQLite peers' script (its directory is on sys.path).
from append import message

SPOOL_FIGURE = "postgres: appends"


def fresh_database(url: str, name: str) -> str:
    """Creates database `name` on the server; returns its URL."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    return url.rsplit("/", 1)[0] + "/" + name


def langgraph(url: str, n: int) -> float:
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        config = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        channel_version = None

        def put(i: int) -> None:
            nonlocal config, checkpoint, channel_version
            channel_version = saver.get_next_version(channel_version, None)
            checkpoint = create_checkpoint(checkpoint, None, i)
            checkpoint["channel_values"] = {"messages": [message(i)]}
            checkpoint["channel_versions"] = {"messages": channel_version}
            config = saver.put(
                config, checkpoint, {"source": "loop", "step": i}, {"messages": channel_version}
            )

        for i in range(20):
            put(i)
        start = time.perf_counter()
        for i in range(20, 20 + n):
            put(i)
        took = time.perf_counter() - start
        with saver.conn.cursor() as cur:
            cur.execute("SELECT count(*) AS n FROM checkpoints WHERE thread_id = 'bench'")
            count = cur.fetchone()["n"]
        latest = saver.get_tuple({"configurable": {"thread_id": "bench", "checkpoint_ns": ""}})
        if count != n + 20 or latest is None or latest.checkpoint["channel_values"][
            "messages"
        ] != [message(n + 19)]:
            raise RuntimeError(f"langgraph kept {count} checkpoints, not {n + 20}")
    return n / took


async def openai_agents(url: str, n: int) -> float:
    async_url = url.replace("postgres://", "postgresql+asyncpg://", 1)
    session = SQLAlchemySession.from_url("bench", url=async_url, create_tables=True)
    try:
        for i in range(20):
            await session.add_items([message(i)])
        start = time.perf_counter()
        for i in range(20, 20 + n):
            await session.add_items([message(i)])
        took = time.perf_counter() - start
        items = await session.get_items()
        if len(items) != n + 20:
            raise RuntimeError(f"the SDK kept {len(items)} items, not {n + 20}")
    finally:
        await session.engine.dispose()
    return n / took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--n", type=int, default=int(os.environ.get("SPOOL_BENCH_N", "2000")))
    args = parser.parse_args()
    print(
        f"== peers on PostgreSQL (N={args.n}): langgraph-checkpoint-postgres "
        f"{version('langgraph-checkpoint-postgres')}, openai-agents {version('openai-agents')}, "
        f"SQLAlchemy {version('sqlalchemy')}, asyncpg {version('asyncpg')}"
    )
    rate = langgraph(fresh_database(args.url, "peer_langgraph"), args.n)
    print(f"  LangGraph PostgresSaver.put         {rate:>8.0f} appends/s")
    print(f"peer\tlanggraph PostgresSaver.put\t{rate}\tappends/s\t{SPOOL_FIGURE}")
    rate = asyncio.run(openai_agents(fresh_database(args.url, "peer_agents"), args.n))
    print(f"  Agents SDK SQLAlchemySession.add    {rate:>8.0f} appends/s")
    print(f"peer\topenai-agents SQLAlchemySession.add_items\t{rate}\tappends/s\t{SPOOL_FIGURE}")


if __name__ == "__main__":
    main()
