"""Property tests of the runtime invariants (docs/runtime.md §3-5) on random histories and agents.

(a) projection either raises ToolExecutionUnknownError or returns a context that passes
    validation; (b) no running turn's event and no stored notice ever reach the context;
(c) partial events are never stored; (d) every complete event an agent yielded before a
failure is still stored (turn store) or none of the turn's events are (no turn store).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentops.runtime import (
    Event,
    ProjectionInput,
    Runner,
    ToolExecutionUnknownError,
    Turn,
    TurnReason,
    TurnStatus,
    explain_projection,
    inspect_tool_protocol,
    project_default,
)
from agentops.runtime.projection import EntryKind

from .conftest import STORE_KINDS, StoreKind
from .helpers import assistant, call, result, turn, user

TURN_IDS = ["", "t0", "t1", "t2", "t3"]
CALL_IDS = ["c0", "c1", "c2"]

statuses = st.sampled_from([None, *TurnStatus])
event_specs = st.tuples(
    st.sampled_from(TURN_IDS),
    st.sampled_from(["user", "text", "calls", "result", "plain"]),
    st.lists(st.sampled_from(CALL_IDS), min_size=1, max_size=3),
)


def build_history(specs: list[tuple[str, str, list[str]]]) -> list[Event]:
    events: list[Event] = []
    for index, (turn_id, kind, ids) in enumerate(specs, start=1):
        if kind == "user":
            events.append(user(id=index, turn=turn_id))
        elif kind == "text":
            events.append(assistant(id=index, turn=turn_id))
        elif kind == "calls":
            events.append(assistant(calls=[call(c) for c in ids], id=index, turn=turn_id))
        else:
            events.append(result(ids[0], id=index, turn=turn_id, plain=kind == "plain"))
    return events


def build_turns(chosen: list[TurnStatus | None]) -> list[Turn]:
    turns: list[Turn] = []
    for minute, (turn_id, status) in enumerate(zip(TURN_IDS[1:], chosen, strict=False)):
        if status is None:
            continue
        reason = {
            TurnStatus.INTERRUPTED: TurnReason.ABANDONED,
            TurnStatus.FAILED: TurnReason.AGENT_ERROR,
        }.get(status, TurnReason.NONE)
        turns.append(turn(turn_id, status, reason=reason, minute=minute))
    return turns


@settings(max_examples=300, deadline=None)
@given(
    specs=st.lists(event_specs, max_size=25),
    chosen=st.lists(statuses, min_size=4, max_size=4),
)
def test_projection_is_valid_or_raises_and_never_leaks(
    specs: list[tuple[str, str, list[str]]], chosen: list[TurnStatus | None]
) -> None:
    events = build_history(specs)
    turns = build_turns(chosen)
    running = {t.id for t in turns if t.status is TurnStatus.RUNNING}
    explanation = explain_projection(turns, events)
    try:
        context = project_default(ProjectionInput(turns, events))
    except ToolExecutionUnknownError as error:
        # (a) the error is the explanation's first issue
        assert explanation.error is not None
        assert (error.event_id, error.call_ids) == (
            explanation.error.event_id,
            explanation.error.call_ids,
        )
        return
    assert explanation.error is None and list(explanation.context) == context
    assert inspect_tool_protocol(context) == []  # (a)
    stored = {id(e) for e in events}
    for event in context:
        if id(event) in stored:
            assert event.turn_id not in running or not event.turn_id  # (b) running dropped
        else:
            assert (event.id, event.author) == (0, "runner")  # (b) notices are synthetic
    # Every stored event is explained exactly once, in input order.
    explained = [e.event for e in explanation.entries if e.kind is not EntryKind.NOTICE]
    assert [id(e) for e in explained] == [id(e) for e in events]
    kept = [e for e in context if id(e) in stored]
    assert [e.id for e in kept] == sorted(e.id for e in kept)


#: One scripted agent step: ("text",), ("partial",), ("error",), ("stop",),
#: ("calls", [call ids]) or ("result", call id); its shape depends on its first item.
Step = tuple[Any, ...]

step = st.one_of(
    st.just(("text",)),
    st.just(("partial",)),
    st.just(("error",)),
    st.just(("stop",)),
    st.tuples(st.just("calls"), st.lists(st.sampled_from(CALL_IDS), min_size=1, max_size=2)),
    st.tuples(st.just("result"), st.sampled_from(CALL_IDS)),
)
FAST_KINDS = [kind for kind in STORE_KINDS if not kind.fixtures]


class Boom(Exception):
    pass


def make_agent(steps: list[Step]) -> Callable[[list[Event]], AsyncIterator[Event]]:
    async def agent(context: list[Event]) -> AsyncIterator[Event]:
        for item in steps:
            if item[0] == "text":
                yield assistant("t")
            elif item[0] == "partial":
                yield assistant("p", partial=True)
            elif item[0] == "error":
                raise Boom
            elif item[0] == "calls":
                yield assistant(calls=[call(c) for c in item[1]])
            elif item[0] == "result":
                yield result(item[1])

    return agent


async def run_turn(
    runner: Runner, sid: str, steps: list[Step]
) -> tuple[list[Event], int, Exception | None, bool]:
    """(complete yielded events, partial count, raised error, stopped by consumer)."""
    stop_after = next((i for i, s in enumerate(steps) if s[0] == "stop"), None)
    complete: list[Event] = []
    partial = 0
    error: Exception | None = None
    stopped = False
    try:
        async with contextlib.aclosing(runner.run(sid, "go")) as events:
            async for index, event in _enumerate(events):
                if event.partial:
                    assert event.id == 0
                    partial += 1
                else:
                    assert event.id > 0
                    complete.append(event)
                if stop_after is not None and index + 1 >= stop_after:
                    stopped = True
                    break
    except Exception as caught:
        error = caught
    return complete, partial, error, stopped


async def _enumerate(events: AsyncIterator[Event]) -> AsyncIterator[tuple[int, Event]]:
    index = 0
    async for event in events:
        yield index, event
        index += 1


async def check_turns(kind: StoreKind, turns_steps: list[list[Step]]) -> None:
    harness = kind.factory()
    service = harness.service
    sid = (await service.create_session("app", "u")).id
    for steps in turns_steps:
        before = await service.list_events(sid)
        runner = Runner(make_agent(steps), service)
        complete, _, error, stopped = await run_turn(runner, sid, steps)
        after = await service.list_events(sid)
        assert all(not e.partial for e in after)  # (c)
        assert all(e.author != "runner" for e in after)  # (b) notices never stored
        assert after[: len(before)] == before
        new = after[len(before) :]
        if isinstance(error, ToolExecutionUnknownError):
            assert new == [] and complete == []
        elif harness.durable:
            # (d) user event + every complete yielded event, nothing else
            assert [e.id for e in new[1:]] == [e.id for e in complete]
            assert new[0].author == "user"
        elif error is not None or stopped:
            assert new == []  # (d) rolled back
        else:
            assert [e.id for e in new[1:]] == [e.id for e in complete]


@pytest.mark.parametrize("kind", FAST_KINDS, ids=[k.name for k in FAST_KINDS])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns_steps=st.lists(st.lists(step, max_size=6), min_size=1, max_size=3))
def test_runner_stores_exactly_the_complete_events(
    kind: StoreKind, turns_steps: list[list[Step]]
) -> None:
    asyncio.run(check_turns(kind, turns_steps))
