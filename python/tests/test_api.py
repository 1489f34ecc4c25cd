"""The Python API over the native host: calls, results, errors, pages, threads."""

from __future__ import annotations

import sys
import threading

import pytest

import spool
from spool import errors

KEY = "agent:main:main"


def test_a_session_round_trips_through_the_file(db_path):
    first = spool.Spool(db_path, workspace="w1")
    created = first.create_session(KEY)
    assert created["key"] == KEY and created["epoch"] == 0
    entry = first.append(KEY, "user", "fix the failing test", token_count=12)
    assert (entry["role"], entry["content"], entry["token_count"]) == ("user", "fix the failing test", 12)
    del first
    again = spool.Spool(db_path, workspace="w1")
    session = again.get_session(KEY)
    assert session is not None
    assert (session["entry_count"], session["total_tokens"]) == (1, 12)
    assert [e["content"] for e in again.transcript(KEY)] == ["fix the failing test"]
    # Another workspace of the same file does not see it.
    assert spool.Spool(db_path, workspace="w2").get_session(KEY) is None


def test_each_error_code_raises_its_class(db):
    db.create_session(KEY)
    with pytest.raises(spool.Conflict) as conflict:
        db.create_session(KEY)
    assert conflict.value.code == "conflict" and isinstance(conflict.value, spool.SpoolError)
    with pytest.raises(spool.NotFound):
        db.append("agent:none:none", "user", "hi")
    with pytest.raises(spool.InvalidArgument) as invalid:
        db.append(KEY, "narrator", "hi")
    assert isinstance(invalid.value, ValueError)
    with pytest.raises(spool.InvalidArgument):
        db.call("no_such_call")
    with pytest.raises(spool.InvalidArgument):
        db.call("count_entries", key=KEY, unknown_field=1)
    # A reset moves the epoch on: a write fenced on the old one is stale.
    epoch = db.get_session(KEY)["epoch"]
    db.reset(KEY)
    with pytest.raises(spool.StaleEpoch) as stale:
        db.append(KEY, "user", "late", expected_epoch=epoch)
    assert stale.value.code == "stale_epoch"
    assert "stale_epoch" in str(stale.value)


def test_every_code_has_a_class_and_unknown_codes_stay_spool_errors():
    for code, cls in errors.ERRORS.items():
        error = errors.from_code(code, "detail")
        assert type(error) is cls and error.code == code and error.message == "detail"
    other = errors.from_code("summarizer", "it failed")
    assert type(other) is spool.SpoolError and other.code == "summarizer"


def test_the_database_that_cannot_be_opened_is_a_storage_error(tmp_path):
    (tmp_path / "not-a-db").write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(spool.StorageError):
        spool.Spool(tmp_path / "not-a-db")
    with pytest.raises(spool.InvalidArgument):
        spool.Spool(tmp_path / "x.db", durability="sometimes")


def test_in_memory_databases_are_private():
    a, b = spool.Spool(":memory:"), spool.Spool(None)
    a.create_session(KEY)
    assert a.get_session(KEY) is not None and b.get_session(KEY) is None


def test_pages_iterate_the_whole_transcript_in_order(db):
    db.create_session(KEY)
    n = 2 * spool.MAX_PAGE + 5
    requests = [{"role": "user", "content": f"message {i}"} for i in range(n)]
    for start in range(0, n, spool.MAX_PAGE):
        db.append_entries(KEY, requests[start : start + spool.MAX_PAGE])
    with pytest.raises(spool.InvalidArgument, match="at most 1000"):
        db.append_entries(KEY, requests[: spool.MAX_PAGE + 1])
    pages = list(db.pages(KEY))
    assert [len(p) for p in pages] == [spool.MAX_PAGE, spool.MAX_PAGE, 5]
    contents = [e["content"] for e in db.entries(KEY)]
    assert contents == [f"message {i}" for i in range(n)]
    newest = [e["content"] for e in db.entries(KEY, newest_first=True)]
    assert newest == contents[::-1]
    assert [e["content"] for e in db.last_entries(KEY, 3)] == contents[-3:]
    assert db.count_entries(KEY) == n


def test_any_table_call_is_a_method(db):
    db.create_session(KEY)
    db.append(KEY, "user", "hello", message_id="m-1")
    assert db.count_entries(KEY) == 1
    # Not wrapped by the class: reached through the table.
    entry = db.get_entry(key=KEY, message_id="m-1")
    assert entry["content"] == "hello"
    states = db.list_states(key=KEY)
    assert states == []
    assert "append_entry" in spool.CALLS and "now_ms" in spool.CALLS["append_entry"][1]
    with pytest.raises(AttributeError):
        db.not_a_call  # noqa: B018
    assert db.call_quiet("append_entry", key=KEY, request={"role": "user", "content": "x"}) is None
    assert db.count_entries(KEY) == 2
    with pytest.raises(spool.NotFound):
        db.call_quiet("append_entry", key="agent:none:none", request={"role": "user", "content": "x"})


def test_compact_with_a_python_summarizer(db):
    db.create_session(KEY)
    db.append_entries(
        KEY,
        [
            {"role": "user", "content": f"Goal: ship v{i}. " + "x " * 100, "token_count": 200}
            for i in range(20)
        ],
    )
    seen = []

    def summarize(plan):
        seen.append(plan)
        lines = [o["text"] for o in plan["obligations"]]
        return f"Summary of {plan['removed_count']} entries:\n" + "\n".join(lines)

    result = db.compact(KEY, 1000, summarize)
    assert len(seen) == 1 and result["summary_source"] == "llm"
    assert result["removed_count"] == seen[0]["removed_count"] > 0
    assert result["summary"].startswith("Summary of")
    # The compacted entries stay in the canonical transcript.
    assert len(list(db.entries(KEY, canonical=True))) > len(db.transcript(KEY))


def test_a_failing_summarizer_writes_nothing(db):
    db.create_session(KEY)
    db.append_entries(
        KEY, [{"role": "user", "content": "word " * 100, "token_count": 200} for _ in range(20)]
    )
    before = db.transcript(KEY)

    def failing(plan):
        raise RuntimeError("the model is down")

    with pytest.raises(RuntimeError, match="the model is down"):
        db.compact(KEY, 1000, failing)
    with pytest.raises(TypeError):
        db.compact(KEY, 1000, lambda plan: 42)
    assert db.transcript(KEY) == before
    built_in = db.compact(KEY, 1000)
    assert built_in["removed_count"] > 0


def test_branches_share_history(db):
    db.create_session(KEY)
    for i, text in enumerate(["fix the test", "done: the test passes", "now the docs"]):
        db.append(KEY, "user", text, message_id=f"m-{i}")
    fork = db.branch(KEY, "agent:main:alt")
    assert (fork["key"], fork["entry_count"], fork["forked_from_parent"]) == ("agent:main:alt", 3, True)
    before = db.branch(KEY, "agent:main:retry", before="m-1")
    assert [e["content"] for e in db.transcript("agent:main:retry")] == ["fix the test"]
    assert before["entry_count"] == 1
    empty = db.branch(KEY, "agent:main:empty", fork=False)
    assert empty["entry_count"] == 0
    db.append("agent:main:alt", "user", "try another way")
    assert db.count_entries(KEY) == 3
    assert {c["key"] for c in db.list_children(KEY)} == {
        "agent:main:alt",
        "agent:main:retry",
        "agent:main:empty",
    }


def test_search_finds_words_across_sessions(db):
    for key, text in [("a", "the parser drops nested lists"), ("b", "the lexer is fine")]:
        db.create_session(key)
        db.append(key, "user", text)
    hits = list(db.search("parser"))
    assert [h["session_key"] for h in hits] == ["a"]
    assert list(db.search("nothingmatches")) == []


def test_sessions_iterate_every_session(db):
    keys = {f"agent:k{i}:main" for i in range(5)}
    for key in keys:
        db.create_session(key)
    assert {s["key"] for s in db.sessions()} == keys


def test_truncate_and_rollback(db):
    db.create_session(KEY)
    for role, text in [("user", "a"), ("assistant", "b"), ("user", "c"), ("assistant", "d")]:
        db.append(KEY, role, text)
    rolled = db.rollback(KEY, 1)
    assert (rolled["before_count"], rolled["after_count"]) == (4, 2)
    truncated = db.truncate(KEY, 1)
    assert truncated["after_count"] == 1
    assert [e["content"] for e in db.transcript(KEY)] == ["b"]


def test_threads_share_one_handle(db):
    db.create_session(KEY)

    def write(t):
        for i in range(25):
            db.append(KEY, "user", f"thread {t} message {i}")

    threads = [threading.Thread(target=write, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    contents = [e["content"] for e in db.transcript(KEY)]
    assert len(contents) == 100
    for t in range(4):
        mine = [c for c in contents if c.startswith(f"thread {t} ")]
        assert mine == [f"thread {t} message {i}" for i in range(25)]


def test_calls_release_the_gil(db):
    """While one thread is inside a call, another runs Python.

    With a long switch interval, the thread that holds the GIL keeps it until it
    releases it itself: a counting thread only counts while the main thread waits inside
    a native call that let the GIL go."""
    db.create_session(KEY)
    for _ in range(2):
        db.append_entries(KEY, [{"role": "user", "content": "word " * 200} for _ in range(1000)])
    ticks = 0
    go, stop = threading.Event(), threading.Event()

    def count():
        nonlocal ticks
        go.wait()
        while not stop.is_set():
            ticks += 1

    interval = sys.getswitchinterval()
    counter = threading.Thread(target=count)
    counter.start()
    sys.setswitchinterval(1.0)
    try:
        go.set()
        db.compact(KEY, 1000)  # one long native call
        counted = ticks
    finally:
        stop.set()
        sys.setswitchinterval(interval)
        counter.join()
    assert counted > 0
