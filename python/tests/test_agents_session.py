"""SpoolSession against the OpenAI Agents SDK: the behaviours the SDK's own session
tests assert of its SQLiteSession, the runner using it, and what Spool adds."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json

import pytest

import spool
from spool.agents import ITEM_PREFIX, SpoolSession

agents = pytest.importorskip("agents")
from agents import Agent, RunConfig, Runner, set_tracing_disabled  # noqa: E402
from agents.memory import Session, SessionSettings  # noqa: E402

from fake_model import FakeModel, text_message  # noqa: E402

RUNNERS = ["run", "run_sync", "run_streamed"]

# The runs here trace nothing to OpenAI.
set_tracing_disabled(True)


def run(coro):
    return asyncio.run(coro)


async def run_agent(method, agent, input, **kwargs):
    if method == "run":
        return await Runner.run(agent, input, **kwargs)
    if method == "run_sync":

        def in_thread():
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                return Runner.run_sync(agent, input, **kwargs)
            finally:
                loop.close()

        return await asyncio.to_thread(in_thread)
    result = Runner.run_streamed(agent, input, **kwargs)
    async for _ in result.stream_events():
        pass
    return result


def test_it_is_a_session_of_the_sdk(db_path):
    assert isinstance(SpoolSession("s", db_path), Session)


@pytest.mark.parametrize("method", RUNNERS)
def test_the_runner_sends_the_history_of_the_session(db_path, method):
    async def scenario():
        session = SpoolSession("test_session_123", db_path)
        model = FakeModel()
        agent = Agent(name="test", model=model)
        model.set_next_output([text_message("San Francisco")])
        first = await run_agent(method, agent, "What city is the Golden Gate Bridge in?", session=session)
        assert first.final_output == "San Francisco"
        model.set_next_output([text_message("California")])
        second = await run_agent(method, agent, "What state is it in?", session=session)
        assert second.final_output == "California"
        sent = model.last_input
        assert [item.get("content") for item in sent if item.get("role") == "user"] == [
            "What city is the Golden Gate Bridge in?",
            "What state is it in?",
        ]
        # The model's answer came back exactly as the SDK gave it.
        answers = [item for item in sent if item.get("type") == "message"]
        assert answers[0]["content"][0]["text"] == "San Francisco"
        assert len(await session.get_items()) == 4

    run(scenario())


@pytest.mark.parametrize("method", RUNNERS)
def test_sessions_keep_their_histories_apart(db_path, method):
    async def scenario():
        model = FakeModel()
        agent = Agent(name="test", model=model)
        one, two = SpoolSession("session_1", db_path), SpoolSession("session_2", db_path)
        model.set_next_output([text_message("I like cats")])
        await run_agent(method, agent, "I like cats", session=one)
        model.set_next_output([text_message("I like dogs")])
        await run_agent(method, agent, "I like dogs", session=two)
        model.set_next_output([text_message("Yes, you mentioned cats")])
        await run_agent(method, agent, "What did I say I like?", session=one)
        said = [i.get("content") for i in model.last_input if i.get("role") == "user"]
        assert said == ["I like cats", "What did I say I like?"]

    run(scenario())


def test_the_session_input_callback_sees_the_stored_history(db_path):
    async def scenario():
        model = FakeModel()
        agent = Agent(name="test", model=model)
        session = SpoolSession("session_1", db_path)
        history = [
            {"role": "user", "content": "Hello there."},
            {"role": "assistant", "content": "Hi, I'm here to assist you."},
        ]
        await session.add_items(history)

        def only_user(history, new_input):
            return [item for item in history if item["role"] == "user"] + new_input

        new_input = [{"role": "user", "content": "What your name?"}]
        model.set_next_output([text_message("I'm gpt-4o")])
        await Runner.run(
            agent, new_input, session=session, run_config=RunConfig(session_input_callback=only_user)
        )
        assert model.last_input == [history[0], new_input[0]]

    run(scenario())


def test_add_get_and_clear(db_path):
    async def scenario():
        session = SpoolSession("direct_test", db_path)
        assert await session.get_items() == []
        items = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"}]
        await session.add_items(items)
        assert await session.get_items() == items
        await session.add_items([])
        assert await session.get_items() == items
        await session.clear_session()
        assert await session.get_items() == []
        await session.clear_session()  # clearing an empty session is fine
        await session.add_items(items[:1])  # and it can be written again
        assert await session.get_items() == items[:1]

    run(scenario())


def test_pop_item_returns_the_newest_until_empty(db_path):
    async def scenario():
        session = SpoolSession("pop_test", db_path)
        assert await session.pop_item() is None
        items = [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi there!"},
            {"role": "user", "content": "How are you?"},
        ]
        await session.add_items(items)
        assert await session.pop_item() == items[2]
        assert await session.get_items() == items[:2]
        assert await session.pop_item() == items[1]
        assert await session.get_items() == items[:1]
        assert await session.pop_item() == items[0]
        assert await session.pop_item() is None
        assert await session.get_items() == []

    run(scenario())


def test_pop_item_keeps_what_came_before_in_the_turn(db_path):
    """Popping an item after the turn's user message keeps the items between them,
    exactly, ids included."""

    async def scenario():
        session = SpoolSession("pop_turn", db_path)
        call = {"type": "function_call", "call_id": "c1", "name": "run", "arguments": "{}", "id": "fc1"}
        items = [
            {"role": "user", "content": "run the tests"},
            call,
            {"type": "function_call_output", "call_id": "c1", "output": "Exit code 101"},
            {"role": "assistant", "content": "they fail"},
        ]
        await session.add_items(items)
        before = session.spool.transcript(session.key)
        assert await session.pop_item() == items[3]
        assert await session.get_items() == items[:3]
        after = session.spool.transcript(session.key)
        assert [e["message_id"] for e in after] == [e["message_id"] for e in before[:3]]
        # No user message at all: still the newest item goes.
        only = SpoolSession("no_user", db_path)
        await only.add_items([{"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}])
        assert await only.pop_item() == {"role": "assistant", "content": "b"}
        assert await only.get_items() == [{"role": "assistant", "content": "a"}]

    run(scenario())


def test_pop_item_only_touches_its_session(db_path):
    async def scenario():
        one, two = SpoolSession("session_1", db_path), SpoolSession("session_2", db_path)
        await one.add_items([{"role": "user", "content": "Session 1 message"}])
        await two.add_items(
            [{"role": "user", "content": "Session 2 message 1"}, {"role": "user", "content": "Session 2 message 2"}]
        )
        assert (await two.pop_item())["content"] == "Session 2 message 2"
        assert [i["content"] for i in await one.get_items()] == ["Session 1 message"]
        assert [i["content"] for i in await two.get_items()] == ["Session 2 message 1"]

    run(scenario())


def test_get_items_with_limit_returns_the_newest_in_order(db_path):
    async def scenario():
        session = SpoolSession("count_test", db_path)
        items = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"{'Message' if i % 2 == 0 else 'Response'} {i // 2 + 1}"}
            for i in range(6)
        ]
        await session.add_items(items)
        assert await session.get_items() == items
        assert await session.get_items(limit=2) == items[-2:]
        assert await session.get_items(limit=4) == items[-4:]
        assert await session.get_items(limit=10) == items
        assert await session.get_items(limit=0) == []

    run(scenario())


def test_get_items_over_a_page(db_path):
    async def scenario():
        session = SpoolSession("big", db_path)
        items = [{"role": "user", "content": f"m{i}"} for i in range(spool.MAX_PAGE + 10)]
        await session.add_items(items)
        assert await session.get_items(limit=spool.MAX_PAGE + 5) == items[5:]
        assert await session.get_items() == items

    run(scenario())


def test_session_settings_limit_is_the_default_limit(db_path):
    async def scenario():
        session = SpoolSession("settings", db_path, session_settings=SessionSettings(limit=2))
        items = [{"role": "user", "content": f"m{i}"} for i in range(5)]
        await session.add_items(items)
        assert await session.get_items() == items[-2:]
        assert await session.get_items(limit=3) == items[-3:]

    run(scenario())


def test_unicode_and_sql_look_alikes_round_trip(db_path):
    async def scenario():
        session = SpoolSession("unicode_test", db_path)
        items = [
            {"role": "user", "content": "こんにちは"},
            {"role": "assistant", "content": "😊👍"},
            {"role": "user", "content": "Привет"},
            {"role": "assistant", "content": "O'Reilly"},
            {"role": "user", "content": "Robert'); DROP TABLE students;--"},
            {"role": "user", "content": '"SELECT * FROM users WHERE name = "admin";"'},
        ]
        await session.add_items(items)
        assert await session.get_items() == items

    run(scenario())


def test_any_item_round_trips_exactly(db_path):
    async def scenario():
        session = SpoolSession("items", db_path)
        items = [
            {"role": "developer", "content": "be brief"},
            {"role": "user", "content": [{"type": "input_text", "text": "look"}]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{\"path\": \".\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "README.md"},
            {"role": "user", "content": "{\"role\": \"user\", \"content\": \"json in text\"}"},
            {"role": "assistant", "content": "hi", "type": "message"},
        ]
        await session.add_items(items)
        assert await session.get_items() == items
        entries = session.spool.transcript(session.key)
        # Plain messages stay plain entries; the others are kept whole.
        assert entries[5]["content"] == items[5]["content"] and not entries[5]["message_id"].startswith(ITEM_PREFIX)
        assert json.loads(entries[3]["content"]) == items[3] and entries[3]["tool_calls"] == items[3]
        assert (entries[4]["role"], entries[4]["tool_call_id"]) == ("tool", "c1")
        assert entries[0]["role"] == "system"

    run(scenario())


def test_concurrent_writers_from_threads(db_path):
    async def scenario():
        session = SpoolSession("concurrent_test", db_path)
        items = [{"role": "user", "content": f"Message {i}"} for i in range(10)]

        def add(item):
            loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(session.add_items([item]))
            finally:
                loop.close()

        with concurrent.futures.ThreadPoolExecutor(max_workers=5) as pool:
            list(pool.map(add, items))
        assert {i["content"] for i in await session.get_items()} == {f"Message {i}" for i in range(10)}

    run(scenario())


def test_compact_replaces_old_items_with_a_summary(db_path):
    async def scenario():
        session = SpoolSession("long", db_path)
        await session.add_items(
            [{"role": "user", "content": f"Goal: ship v{i}. " + "details " * 60} for i in range(30)]
        )
        result = await session.compact(2000, lambda plan: "Summary: ship every version.")
        assert result["removed_count"] > 0
        items = await session.get_items()
        assert len(items) == 30 - result["removed_count"] + 1
        assert items[0] == {"role": "system", "content": result["summary"]}
        assert result["summary"].startswith("Summary: ship every version.")
        assert items[-1]["content"].startswith("Goal: ship v29.")
        assert (await session.get_items(limit=2))[-1] == items[-1]
        assert await session.get_items(limit=len(items) + 5) == items
        canonical = list(session.spool.entries(session.key, canonical=True))
        assert len(canonical) == 30
        # Popping takes entries, never the summary.
        await session.pop_item()
        assert (await session.get_items())[0] == items[0]

    run(scenario())


def test_branch_shares_history_and_diverges(db_path):
    async def scenario():
        session = SpoolSession("main", db_path)
        await session.add_items([{"role": "user", "content": "fix the test"}, {"role": "assistant", "content": "done"}])
        alt = await session.branch("main-alt")
        assert await alt.get_items() == await session.get_items()
        await alt.add_items([{"role": "user", "content": "try another way"}])
        assert len(await session.get_items()) == 2 and len(await alt.get_items()) == 3

    run(scenario())


def test_search_stays_in_its_session(db_path):
    async def scenario():
        db = spool.Spool(db_path)
        one, two = SpoolSession("one", db), SpoolSession("two", db)
        await one.add_items([{"role": "user", "content": "the parser drops nested lists"}])
        await two.add_items([{"role": "user", "content": "the parser is fine"}])
        hits = await one.search("parser")
        assert [h["session_key"] for h in hits] == ["one"]
        assert await one.search("lexer") == []

    run(scenario())


def test_calls_on_the_event_loop_thread_behave_the_same(db_path):
    async def scenario():
        session = SpoolSession("on_loop", db_path, in_thread=False)
        model = FakeModel()
        agent = Agent(name="test", model=model)
        model.set_next_output([text_message("Hello")])
        await Runner.run(agent, "Hi there", session=session)
        items = await session.get_items()
        assert items[0] == {"role": "user", "content": "Hi there"}
        assert items[1]["content"][0]["text"] == "Hello"
        assert await session.pop_item() == items[1]
        branch = await session.branch("on_loop_alt")
        assert branch.in_thread is False and await branch.get_items() == items[:1]
        await session.clear_session()
        assert await session.get_items() == []

    run(scenario())
