"""Fixtures of the `spool` package's tests."""

from __future__ import annotations

import pytest

import spool


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "spool.db"


@pytest.fixture
def db(db_path):
    return spool.Spool(db_path)


def pytest_terminal_summary(terminalreporter):
    """Ends with the counts in cargo test's shape, which `cargo xtask test` adds up."""
    stats = terminalreporter.stats
    passed = len(stats.get("passed", []))
    failed = len(stats.get("failed", [])) + len(stats.get("error", []))
    skipped = len(stats.get("skipped", []))
    status = "ok" if failed == 0 else "FAILED"
    terminalreporter.write_line(
        f"test result: {status}. {passed} passed; {failed} failed; {skipped} ignored"
    )
