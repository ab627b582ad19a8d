"""The context page computed from its kept state on (`sessions_app.pages.context_window`)
equals the whole computation over every stored event (`product_history`,
`explain_projection`, `context_rows`; docs/runtime.md §4-5) after any sequence of writes
and views, on generated sessions and on every corpus file; and a view's cost does not grow
with the session once it has been viewed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.paginator import Paginator
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentops.runtime.model import Content, Event, Role, ToolCall, ToolResponse
from agentops.runtime.projection import explain_projection
from agentops.runtime.protocol import inspect_orphan_results
from agentops.runtime.session import Turn, TurnOutcome, TurnReason, TurnStatus
from sessions_app import models
from sessions_app.ingest import import_file
from sessions_app.pages.context_rows import context_rows, estimate_tokens, mark_refused
from sessions_app.pages.context_window import context_page
from sessions_app.projector import (
    COMPACTION_AUTHOR,
    ProductExplanation,
    compaction_index,
    is_state_only,
    load_outcomes,
    product_history,
)
from sessions_app.store import DjangoSessionService, refresh_resume_status, stream
from sessions_app.store.resume import load_archived_events, load_facts

T0 = datetime(2026, 12, 1, tzinfo=UTC)
_ids = count()

Operation = tuple[str, str, int, list[str]]
CALLS = st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=2, unique=True)
APPEND = st.tuples(
    st.just("append"),
    st.sampled_from(["user", "calls", "calls", "tool", "tool", "text", "state", "compaction"]),
    st.sampled_from([0] * 6 + [1, 2, -1, -2]),  # -1: no turn id, -2: a turn with no record
    CALLS,
)
OTHER = st.tuples(
    st.sampled_from(
        ["begin", "begin", "finish", "finish", "interrupt", "adopt", "outcome", "delete"]
    ),
    st.sampled_from(["completed", "failed", "interrupted"]),
    st.integers(min_value=0, max_value=3),
    CALLS,
)
OPERATIONS = st.lists(st.one_of(APPEND, APPEND, APPEND, OTHER), min_size=1, max_size=40)
OUTCOMES = {
    "completed": TurnOutcome(status=TurnStatus.COMPLETED),
    "failed": TurnOutcome(status=TurnStatus.FAILED, reason=TurnReason.AGENT_ERROR),
    "interrupted": TurnOutcome(status=TurnStatus.INTERRUPTED, reason=TurnReason.CANCELED),
}


def _content(kind: str, calls: list[str], n: int) -> tuple[Content, str]:
    if kind == "calls":
        tool_calls = tuple(ToolCall(id=c, name="f") for c in calls)
        return Content(role=Role.ASSISTANT, tool_calls=tool_calls), "a"
    if kind == "tool":
        response = ToolResponse(tool_call_id=calls[0], name="f", result=n)
        return Content(role=Role.TOOL, tool_response=response), "a"
    if kind == "text":
        return Content(role=Role.ASSISTANT, text=f"**hi** {n}"), "a"
    if kind == "state":
        return Content(role=Role.ASSISTANT), "a"
    if kind == "compaction":
        return Content(role=Role.USER, text=f"summary {n}"), COMPACTION_AUTHOR
    return Content(role=Role.USER, text=f"go {n}"), "u"


def _whole(sid: str, per_page: int, page: str | None) -> tuple[Any, Any, Any, int]:
    """(explanation, page of rows, product, tokens) of the whole computation."""
    turns, active = load_facts(sid)
    outcomes = load_outcomes(sid)
    cut = compaction_index(active)
    compacted, live = product_history(active, outcomes)
    explanation = explain_projection(turns, live)
    pending = models.Event.objects.filter(session_id=sid).values_list("pending_call_ids")
    product = ProductExplanation(
        explanation=explanation,
        compacted=tuple(compacted),
        compaction=live[0] if cut >= 0 else None,
        state_only=tuple(e for e in active[max(cut, 0) :] if is_state_only(e)),
        orphans=tuple(inspect_orphan_results(live)),
        awaiting_user=frozenset(c for (ids,) in pending for c in ids),
    )
    latest = max(turns, key=lambda turn: (turn.started_at, turn.id), default=None)
    rows = context_rows(product, load_archived_events(sid), latest.id if latest else "")
    if explanation.error is not None:
        mark_refused(rows)
    paginator = Paginator(rows, per_page)
    tokens = sum(estimate_tokens(event) for event in explanation.context)
    return explanation, paginator.get_page(page or paginator.num_pages), product, tokens


def assert_page_is_whole(sid: str, per_page: int, page: str | None) -> None:
    explanation, whole, product, tokens = _whole(sid, per_page, page)
    session = models.Session.objects.get(pk=sid)
    streamed, _raw = context_page(session, page, per_page)
    assert streamed.page.paginator.count == whole.paginator.count
    assert streamed.page.number == whole.number
    assert list(streamed.page) == list(whole)
    assert len(streamed.explanation.context) == len(explanation.context)
    assert len(streamed.explanation.notices) == len(explanation.notices)
    assert streamed.explanation.issues == explanation.issues[:1]
    assert streamed.explanation.issue_count == len(explanation.issues)
    assert repr(streamed.explanation.error) == repr(explanation.error)
    assert len(streamed.compacted) == len(product.compacted)
    assert streamed.compaction == product.compaction
    assert len(streamed.orphans) == len(product.orphans)
    assert streamed.tokens == tokens
    latest = streamed.latest_turn
    assert streamed.new_count == sum(
        1 for entry in explanation.entries if latest and entry.event.turn_id == latest.id
    ) - sum(1 for entry in explanation.notices if latest and entry.event.turn_id == latest.id)


def _apply(service: DjangoSessionService, sid: str, step: int, op: Operation, state: Any) -> None:
    name, kind, pick, calls = op
    turns, legacy = state
    if name == "begin" or (name == "adopt" and not legacy):
        turn = Turn(id=f"{sid}-t{step}", session_id=sid, started_at=T0 + timedelta(seconds=step))
        async_to_sync(service.begin_turn)(sid, turn)
        turns.append(turn.id)
    elif name == "adopt":  # a turn record for events stored without one
        turn = Turn(id=legacy.pop(0), session_id=sid, started_at=T0 + timedelta(seconds=step))
        async_to_sync(service.begin_turn)(sid, turn)
        turns.append(turn.id)
    elif name == "append":
        if pick == -2:
            turn_id = f"{sid}-ghost{step % 3}"
            if turn_id not in legacy and turn_id not in turns:
                legacy.append(turn_id)
        else:
            turn_id = "" if pick < 0 or not turns else turns[-1 - pick % len(turns)]
        content, author = _content(kind, calls, step)
        event = Event(session_id=sid, turn_id=turn_id, author=author, content=content)
        async_to_sync(service.append_event)(event)
    elif name == "finish" and turns:
        turn_id = turns[-1 - pick % len(turns)]
        if models.Turn.objects.get(pk=turn_id).status == TurnStatus.RUNNING:
            async_to_sync(service.finalize_turn)(turn_id, OUTCOMES[kind])
    elif name == "interrupt":
        reason = TurnReason.ABANDONED if pick else TurnReason.CANCELED
        async_to_sync(service.interrupt_running_turns)(sid, reason)
    elif name == "outcome":
        assistants = models.Event.objects.filter(session_id=sid, role="assistant")
        row = assistants.exclude(tool_calls=[]).order_by("-id")[pick : pick + 1].first()
        if row is not None and row.tool_calls:
            models.ToolOutcome.objects.get_or_create(
                session_id=sid,
                event=row,
                call_id=row.tool_calls[0]["id"],
                defaults={"outcome": "did_not_run", "reason": "x", "recorded_at": T0},
            )
            refresh_resume_status(sid)
    elif name == "delete":
        rows = models.Event.objects.active().filter(session_id=sid).order_by("-id")
        victim = rows.values_list("id", flat=True)[pick : pick + 1].first()
        if victim is not None:
            async_to_sync(service.delete_event)(sid, victim)


@pytest.mark.django_db
@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    operations=OPERATIONS,
    per_page=st.integers(min_value=1, max_value=3),
    page=st.sampled_from([None, None, "1", "2", "3", "x"]),
)
@example(  # a rewrite of the history before the kept state: an outcome, a delete
    operations=[("begin", "", 0, []), ("append", "calls", 0, ["a"])]
    + [("finish", "completed", 0, [])]
    + [("append", "user", -1, ["a"]), ("append", "text", -2, ["a"])] * 4
    + [("outcome", "", 0, []), ("delete", "", 7, [])],
    per_page=1,
    page=None,
)
@example(  # a running turn's events, dropped, then it completes behind other events
    operations=[("begin", "", 0, []), ("append", "user", 0, ["a"])]
    + [("append", "user", -1, ["a"]), ("append", "text", -2, ["a"])] * 4
    + [("finish", "completed", 0, [])],
    per_page=1,
    page=None,
)
@example(  # events stored without a turn record, kept, then a record for them begins
    operations=[("begin", "", 0, []), ("append", "user", 0, ["a"])]
    + [("finish", "completed", 0, []), ("append", "user", -2, ["a"])]
    + [("append", "text", -2, ["a"]), ("append", "user", -1, ["a"])] * 4
    + [("adopt", "", 0, []), ("append", "text", -1, ["a"]), ("finish", "failed", 0, [])],
    per_page=1,
    page=None,
)
def test_kept_state_gives_the_whole_computation(
    operations: list[Operation], per_page: int, page: str | None
) -> None:
    service = DjangoSessionService()
    sid = async_to_sync(service.create_session)("app", session_id=f"win-{next(_ids)}").id
    state: Any = ([], [])
    for step, op in enumerate(operations):
        _apply(service, sid, step, op, state)
        assert_page_is_whole(sid, per_page, None)  # a view: keeps the state for the next
        if page is not None:
            assert_page_is_whole(sid, per_page, page)


@pytest.mark.django_db
def test_corpus_sessions_paged_from_the_kept_state(corpus: Path) -> None:
    imported = 0
    for path in sorted(corpus.rglob("*.json*")):
        report = import_file(path)
        assert report.status == "imported", path
        for session_id in report.session_ids:
            imported += 1
            for page in (None, None, "1", "2"):  # the second view starts from the kept state
                assert_page_is_whole(session_id, 3, page)
    checkpoints = models.Session.objects.values_list("context_checkpoint", flat=True)
    kept = sum(1 for data in checkpoints if data and data.get("states"))
    assert imported >= 9 and kept >= 5, (imported, kept)  # most were paged from a kept state


def _long_session(sid: str, turns: int) -> None:
    session = models.Session.objects.create(id=sid, app_name="app", created_at=T0, updated_at=T0)
    models.Turn.objects.bulk_create(
        models.Turn(
            id=f"{sid}-{n}", session=session, status="completed", started_at=T0 + timedelta(n)
        )
        for n in range(turns)
    )
    call = {"id": "c1", "name": "t", "arguments": {}}
    models.Event.objects.bulk_create(
        models.Event(session=session, created_at=T0, updated_at=T0, turn_id=f"{sid}-{n}", **f)
        for n in range(turns)
        for f in (
            {"role": "user", "text": f"go {n}"},
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_response": {"tool_call_id": "c1", "name": "t", "result": n}},
            {"role": "assistant", "text": "done"},
        )
    )
    refresh_resume_status(sid)


@pytest.mark.django_db
def test_a_view_costs_the_same_on_a_short_and_a_long_session(
    operator_client: Client, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.AGENTOPS_CONTEXT_ENTRIES_PER_PAGE = 8
    read: list[int] = []
    original = stream.active_event_pages

    def counting(session_id: str, **kwargs: Any) -> Any:
        for events in original(session_id, **kwargs):
            read.append(len(events))
            yield events

    monkeypatch.setattr("sessions_app.pages.context_window.active_event_pages", counting)
    costs = []
    for sid, turns in (("short", 10), ("long", 600)):
        _long_session(sid, turns)
        url = reverse("sessions:context", args=[sid])
        assert operator_client.get(url).status_code == 200  # the first view keeps the state
        read.clear()
        with CaptureQueriesContext(connection) as queries:
            body = operator_client.get(url).content.decode()
        assert f"go {turns - 1}" in body and "resumable" in body
        costs.append((len(queries), sum(read)))
    assert costs[0] == costs[1]
    assert costs[1][1] <= 4 * 8  # events read: the last pages, not the session
