"""The CLI and the Python package on one database file: the CLI writes, Python reads and
appends, the CLI reads what Python wrote.

The CLI is `$SPOOL_CLI` (`cargo xtask test` sets it to the workspace's `spool`), else
the debug build under the repository's target directory; without either, skipped."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import spool
from spool.agents import SpoolSession

KEY = "agent:main:main"


def cli_path() -> Path:
    given = os.environ.get("SPOOL_CLI")
    if given:
        path = Path(given)
        assert path.is_file(), f"SPOOL_CLI names no file: {given}"
        return path
    built = Path(__file__).resolve().parents[2] / "target" / "debug" / "spool"
    if not built.is_file():
        pytest.skip("no spool CLI: set SPOOL_CLI or build it (cargo build -p spool-host)")
    return built


def cli(db: Path, *args: str, workspace: str = "default") -> str:
    run = subprocess.run(
        [str(cli_path()), "--db", str(db), "--workspace", workspace, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, f"spool {' '.join(args)} failed: {run.stderr}"
    return run.stdout


def test_cli_writes_python_reads_and_appends_cli_reads(db_path):
    cli(db_path, "create", KEY, workspace="w")
    cli(db_path, "append", KEY, "--role", "user", "--content", "fix the failing test", workspace="w")
    cli(db_path, "append", KEY, "--role", "assistant", "--content", "the test passes now", workspace="w")

    db = spool.Spool(db_path, workspace="w")
    session = db.get_session(KEY)
    assert session is not None and session["entry_count"] == 2
    assert [(e["role"], e["content"]) for e in db.entries(KEY)] == [
        ("user", "fix the failing test"),
        ("assistant", "the test passes now"),
    ]
    db.append(KEY, "user", "now update the changelog", token_count=7)
    del db

    shown = json.loads(cli(db_path, "show", KEY, "--json", workspace="w"))
    text = json.dumps(shown)
    assert "now update the changelog" in text and "fix the failing test" in text
    assert cli(db_path, "count", KEY, workspace="w").strip().startswith("3")
    # The other workspace of the file is still empty.
    assert spool.Spool(db_path, workspace="default").get_session(KEY) is None


def test_an_agents_sdk_session_written_by_the_cli(db_path):
    cli(db_path, "create", "conversation")
    cli(db_path, "append", "conversation", "--role", "user", "--content", "hello")
    session = SpoolSession("conversation", db_path)
    import asyncio

    async def scenario():
        assert await session.get_items() == [{"role": "user", "content": "hello"}]
        await session.add_items([{"role": "assistant", "content": "hi, what can I fix?"}])

    asyncio.run(scenario())
    assert "hi, what can I fix?" in cli(db_path, "show", "conversation")
