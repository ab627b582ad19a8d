"""Runner.resume (docs/runtime.md §3 "Continuing a turn"): a turn that continues the session
without a new user message, on every registered store kind; and `continuation_problem`.
"""

from __future__ import annotations

import contextlib

import pytest

from agentops.runtime import (
    NOTHING_TO_CONTINUE,
    Content,
    Event,
    NothingToContinueError,
    Role,
    Runner,
    ToolExecutionUnknownError,
    ToolResponse,
    TurnReason,
    TurnStatus,
    TurnStore,
    continuation_problem,
)

from .conftest import StoreHarness
from .helpers import ScriptedAgent, assistant, call, drain, result, roles, user

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def _asking(call_id: str = "c1") -> Event:
    """An assistant event whose call `call_id` waits for a person."""
    event = assistant("May I deploy?", calls=[call(call_id, "deploy", target="staging")])
    return event.model_copy(update={"pending_call_ids": (call_id,)})


def _decision(session_id: str, turn_id: str, call_id: str = "c1") -> Event:
    """The person's decision, stored as the call's result in the asking turn."""
    response = ToolResponse(tool_call_id=call_id, name="deploy", result={"decision": "approved"})
    return Event(
        session_id=session_id,
        turn_id=turn_id,
        author="operator",
        content=Content(role=Role.TOOL, tool_response=response),
    )


async def drain_resume(runner: Runner, session_id: str) -> tuple[list[Event], Exception | None]:
    yielded: list[Event] = []
    try:
        async for event in runner.resume(session_id):
            yielded.append(event)
    except Exception as error:
        return yielded, error
    return yielded, None


async def _turn_count(harness: StoreHarness, session_id: str) -> int:
    if not isinstance(harness.service, TurnStore):
        return 0
    return len(await harness.service.list_turns(session_id))


async def test_pending_call_ids_are_stored_and_listed(store: StoreHarness) -> None:
    sid = (await store.service.create_session("app", "user-1")).id
    await drain(Runner(ScriptedAgent([_asking()]), store.service), sid, "deploy it")
    events = await store.service.list_events(sid)
    assert [e.pending_call_ids for e in events] == [(), ("c1",)]


async def test_resume_continues_after_the_decision_without_a_user_event(
    store: StoreHarness,
) -> None:
    sid = (await store.service.create_session("app", "user-1")).id
    await drain(Runner(ScriptedAgent([_asking()]), store.service), sid, "deploy it")
    asked = (await store.service.list_events(sid))[-1]
    await store.service.append_event(_decision(sid, asked.turn_id))
    agent = ScriptedAgent([assistant("Deployed.")])
    yielded, error = await drain_resume(Runner(agent, store.service), sid)
    assert error is None
    [context] = agent.contexts
    assert roles(context) == ["user", "assistant", "tool"]
    assert context[-1].content.answered_call_id == "c1"
    events = await store.service.list_events(sid)
    assert roles(events) == ["user", "assistant", "tool", "assistant"]
    assert [e.id for e in yielded] == [events[-1].id]
    assert events[-1].turn_id not in {"", asked.turn_id}
    if isinstance(store.service, TurnStore):
        turns = await store.service.list_turns(sid)
        assert [t.status for t in turns] == [TurnStatus.COMPLETED, TurnStatus.COMPLETED]
        assert turns[-1].id == events[-1].turn_id


@pytest.mark.parametrize(
    ("history", "problem"),
    [
        ([], "empty"),
        ([user("hi"), assistant("hello")], "not_tool"),
        ([user("hi")], "not_tool"),
        ([user("hi"), assistant("hello"), result("c9")], "no_call"),
    ],
    ids=["empty", "plain-answer", "user-last", "orphan-result"],
)
async def test_resume_refuses_before_beginning_a_turn(
    store: StoreHarness, history: list[Event], problem: str
) -> None:
    sid = (await store.service.create_session("app", "user-1")).id
    for event in history:
        await store.service.append_event(event.model_copy(update={"session_id": sid}))
    agent = ScriptedAgent([assistant("never")])
    yielded, error = await drain_resume(Runner(agent, store.service), sid)
    assert isinstance(error, NothingToContinueError)
    assert (error.session_id, error.key) == (sid, problem)
    assert error.problem == NOTHING_TO_CONTINUE[problem]
    assert yielded == [] and agent.calls == 0
    assert len(await store.service.list_events(sid)) == len(history)
    assert await _turn_count(store, sid) == 0


async def test_resume_with_a_call_still_awaiting_refuses_and_records_no_turn(
    store: StoreHarness,
) -> None:
    sid = (await store.service.create_session("app", "user-1")).id
    await drain(Runner(ScriptedAgent([_asking()]), store.service), sid, "deploy it")
    turns_before = await _turn_count(store, sid)
    agent = ScriptedAgent([assistant("never")])
    _, error = await drain_resume(Runner(agent, store.service), sid)
    assert isinstance(error, ToolExecutionUnknownError) and error.call_ids == ["c1"]
    assert agent.calls == 0 and await _turn_count(store, sid) == turns_before
    assert len(await store.service.list_events(sid)) == 2


@pytest.mark.turn_store
async def test_caller_stopping_a_continuation_records_consumer_stopped(
    durable_store: StoreHarness,
) -> None:
    sid = (await durable_store.service.create_session("app", "user-1")).id
    await drain(Runner(ScriptedAgent([_asking()]), durable_store.service), sid, "deploy it")
    asked = (await durable_store.service.list_events(sid))[-1]
    await durable_store.service.append_event(_decision(sid, asked.turn_id))
    agent = ScriptedAgent([assistant("one"), assistant("two")])
    run = Runner(agent, durable_store.service).resume(sid)
    async with contextlib.aclosing(run) as events:
        async for _event in events:
            break
    assert isinstance(durable_store.service, TurnStore)
    last = (await durable_store.service.list_turns(sid))[-1]
    assert (last.status, last.reason) == (TurnStatus.INTERRUPTED, TurnReason.CONSUMER_STOPPED)


def test_continuation_problem_names_each_case() -> None:
    asking = assistant("?", calls=[call("a"), call("b")])
    assert continuation_problem([user(), asking, result("a"), result("b")]) == ""
    assert continuation_problem([user(), asking, result("a")]) == "unanswered"
    assert continuation_problem([]) == "empty"
    assert continuation_problem([result("a")]) == "no_call"
    assert continuation_problem([user(), asking, result("a"), result("b"), user()]) == "not_tool"
