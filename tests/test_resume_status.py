"""The resume status kept incrementally (`sessions_app.store.resume_delta`) equals the full
recomputation (`resume_status` of every stored fact) after any sequence of operations,
and finalising costs the same on a short and a long session (docs/runtime.md §4-5)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentops.runtime.model import Content, Event, Role, ToolCall, ToolResponse
from agentops.runtime.session import Turn, TurnOutcome, TurnReason, TurnStatus
from sessions_app import models
from sessions_app.projector import load_outcomes
from sessions_app.store import DjangoSessionService, load_facts, resume_delta, resume_status
from sessions_app.store import resume as resume_module

T0 = datetime(2026, 12, 1, tzinfo=UTC)
_ids = count()

# -- operations -----------------------------------------------------------------------------

Operation = tuple[str, str, int, list[str]]
NO_CALLS: list[str] = []
CALL_IDS = st.sampled_from(["a", "b"])
#: (kind, turn pick, payload). Turn pick: -1 = no turn (legacy), otherwise an index into the
#: session's turns modulo their number (biased towards the newest by the sampler below).
APPEND = st.tuples(
    st.just("append"),
    st.sampled_from(["user", "calls", "tool", "tool", "text"]),
    st.sampled_from([0] * 8 + [1, 2, -1]),
    st.lists(CALL_IDS, min_size=1, max_size=2, unique=True),
)
BEGIN = st.tuples(st.just("begin"), st.just(""), st.just(0), st.just(NO_CALLS))
FINISH = st.tuples(
    st.just("finish"),
    st.sampled_from(["completed", "failed", "interrupted"]),
    st.sampled_from([0, 0, 1]),
    st.just(NO_CALLS),
)
INTERRUPT = st.tuples(st.just("interrupt"), st.just(""), st.just(0), st.just(NO_CALLS))
OPERATIONS = st.lists(
    st.one_of(BEGIN, APPEND, APPEND, APPEND, APPEND, FINISH, FINISH, INTERRUPT),
    min_size=1,
    max_size=30,
)

# Each path of the incremental rules at least once, whatever the random examples hit.
_B: Operation = ("begin", "", 0, [])
_I: Operation = ("interrupt", "", 0, [])


def _a(kind: str, *calls: str, pick: int = 0) -> tuple[str, str, int, list[str]]:
    return ("append", kind, pick, list(calls) or ["a"])


def _f(kind: str, pick: int = 0) -> tuple[str, str, int, list[str]]:
    return ("finish", kind, pick, [])


EXAMPLES = [
    [_B, _a("user"), _a("calls", "a"), _f("completed")],  # completed with a dangling call
    [_B, _a("user"), _a("calls", "a", "b"), _a("tool", "a"), _a("tool", "b"), _f("completed")],
    [_B, _a("user"), _a("calls", "a"), _f("failed"), _B, _a("user"), _f("completed")],
    [_B, _a("user"), _a("calls", "a"), _B, _a("tool", "a", pick=1), _f("completed", 1)],
    [_B, _a("user"), _a("calls", "a"), _a("user", pick=-1), _a("tool", "a"), _I],
    [_B, _a("tool", "a"), _a("calls", "a"), _f("completed")],  # starts inside a tool run
    [_B, _B, _a("user", pick=1), _a("calls", "a", pick=1), _a("user"), _I],  # interleaved
    # A turn finishing between another turn's call and its result splits that group.
    [
        _B,
        _a("calls", "a"),
        _B,
        _a("user"),
        _a("tool", "a", pick=1),
        _f("completed", 1),
        _f("failed"),
    ],
]

OUTCOMES = {
    "completed": TurnOutcome(status=TurnStatus.COMPLETED),
    "failed": TurnOutcome(status=TurnStatus.FAILED, reason=TurnReason.AGENT_ERROR),
    "interrupted": TurnOutcome(status=TurnStatus.INTERRUPTED, reason=TurnReason.CANCELED),
}


def content_of(kind: str, calls: list[str]) -> Content:
    if kind == "user":
        return Content(role=Role.USER, text="hi")
    if kind == "text":
        return Content(role=Role.ASSISTANT, text="ok")
    if kind == "calls":
        return Content(
            role=Role.ASSISTANT, tool_calls=tuple(ToolCall(id=c, name="t") for c in calls)
        )
    response = ToolResponse(tool_call_id=calls[0], name="t", result=1)
    return Content(role=Role.TOOL, tool_response=response)


def stored_status(session_id: str) -> tuple[int, bool]:
    row = models.Session.objects.get(pk=session_id)
    return row.protocol_issue_count, row.cannot_resume


def recomputed_status(session_id: str) -> tuple[int, bool]:
    turns, events = load_facts(session_id)
    return resume_status(turns, events, load_outcomes(session_id))


def _examples(test: Any) -> Any:
    for operations in EXAMPLES:
        test = example(operations=operations)(test)
    return test


@pytest.mark.django_db
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations=OPERATIONS)
@_examples
def test_incremental_status_equals_full_recomputation(
    operations: list[tuple[str, str, int, list[str]]],
) -> None:
    service = DjangoSessionService()
    sid = async_to_sync(service.create_session)("app", session_id=f"prop-{next(_ids)}").id
    turns: list[str] = []
    for step, (op, kind, pick, calls) in enumerate(operations):
        if op == "begin":
            turn = Turn(
                id=f"{sid}-t{step}", session_id=sid, started_at=T0 + timedelta(seconds=step)
            )
            async_to_sync(service.begin_turn)(sid, turn)
            turns.append(turn.id)
        elif op == "append":
            turn_id = "" if pick < 0 or not turns else turns[-1 - pick % len(turns)]
            event = Event(session_id=sid, turn_id=turn_id, content=content_of(kind, calls))
            async_to_sync(service.append_event)(event)
        elif op == "finish" and turns:
            turn_id = turns[-1 - pick % len(turns)]
            if models.Turn.objects.get(pk=turn_id).status == TurnStatus.RUNNING:
                async_to_sync(service.finalize_turn)(turn_id, OUTCOMES[kind])
        elif op == "interrupt":  # abandoned turns are recomputed in full: not this path
            async_to_sync(service.interrupt_running_turns)(sid, TurnReason.CANCELED)
        assert stored_status(sid) == recomputed_status(sid), (step, op, kind)


# -- finalize cost --------------------------------------------------------------------------


def _turn_events(session_id: str, turn_id: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "name": "t", "arguments": {}}
    response = {"tool_call_id": "c1", "name": "t", "result": 1}
    return [
        {"turn_id": turn_id, "role": "user", "text": "hi"},
        {"turn_id": turn_id, "role": "assistant", "tool_calls": [call]},
        {"turn_id": turn_id, "role": "tool", "tool_response": response},
        {"turn_id": turn_id, "role": "assistant", "text": "done"},
    ]


def _session_with_history(session_id: str, turns: int) -> None:
    session = models.Session.objects.create(
        id=session_id, app_name="app", created_at=T0, updated_at=T0
    )
    rows = []
    for index in range(turns):
        turn_id = f"{session_id}-old{index}"
        models.Turn.objects.create(
            id=turn_id,
            session=session,
            status=TurnStatus.COMPLETED,
            started_at=T0 + timedelta(seconds=index),
            finished_at=T0 + timedelta(seconds=index),
        )
        rows += [
            models.Event(session=session, created_at=T0, updated_at=T0, **fields)
            for fields in _turn_events(session_id, turn_id)
        ]
    models.Event.objects.bulk_create(rows)


@pytest.fixture
def validated(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many stored events each resume-status computation validated."""
    sizes: list[int] = []
    original = resume_module.protocol_events

    def counting(session_id: str, facts: Any) -> list[Event]:
        events = original(session_id, facts)
        sizes.append(len(events))
        return events

    monkeypatch.setattr(resume_module, "protocol_events", counting)
    monkeypatch.setattr(resume_delta, "protocol_events", counting)
    yield sizes


def _finalize_cost(session_id: str, old_turns: int, validated: list[int]) -> tuple[int, int]:
    """(queries, events validated) of finalising a 4-event turn after `old_turns` turns."""
    _session_with_history(session_id, old_turns)
    service = DjangoSessionService()
    turn = Turn(id=f"{session_id}-new", session_id=session_id, started_at=T0 + timedelta(days=1))
    async_to_sync(service.begin_turn)(session_id, turn)
    for fields in _turn_events(session_id, turn.id):
        content = content_of(
            {"user": "user", "tool": "tool"}.get(
                fields["role"], "calls" if "tool_calls" in fields else "text"
            ),
            ["c1"],
        )
        async_to_sync(service.append_event)(
            Event(session_id=session_id, turn_id=turn.id, content=content)
        )
    validated.clear()
    with CaptureQueriesContext(connection) as queries:
        async_to_sync(service.finalize_turn)(turn.id, OUTCOMES["completed"])
    assert stored_status(session_id) == recomputed_status(session_id) == (0, False)
    return len(queries), sum(validated)


@pytest.mark.django_db
def test_finalize_cost_does_not_grow_with_the_session(validated: list[int]) -> None:
    short = _finalize_cost("short", 2, validated)
    long = _finalize_cost("long", 300, validated)
    # savepoint, UPDATE turn, SELECT turn, UPDATE session, SELECT the turn's events onwards,
    # SELECT their outcomes, release: only the turn's own 4 events are validated.
    assert short == long == (7, 4)
