"""The streaming context page (`sessions_app.pages.context_stream`) gives exactly the rows,
page, counts, issues and error of the whole computation (`product_history`,
`explain_projection`, `context_rows`; docs/runtime.md §4-5) on generated histories, and the
page reads the history a page of events at a time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.paginator import Paginator
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentops.runtime.model import Content, Event, Role, ToolCall, ToolResponse
from agentops.runtime.projection import explain_projection
from agentops.runtime.protocol import inspect_orphan_results
from agentops.runtime.session import Turn, TurnReason, TurnStatus
from sessions_app import models
from sessions_app.pages.context_rows import context_rows, mark_refused
from sessions_app.pages.context_stream import stream_context
from sessions_app.projector import (
    COMPACTION_AUTHOR,
    ProductExplanation,
    RecordedOutcome,
    compaction_index,
    is_state_only,
    product_history,
)
from sessions_app.store import stream

NOW = datetime(2026, 1, 1, tzinfo=UTC)
TURNS = ["t1", "t2", "t3", "t4"]
STATUSES = st.sampled_from(["completed", "failed", "interrupted", "running", None])
STEP = st.tuples(
    st.sampled_from(["user", "calls", "tool", "tool", "tool", "text", "state", "compaction"]),
    st.sampled_from([*TURNS, ""]),
    st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3),
    st.booleans(),  # archived
    st.booleans(),  # a recorded outcome for the first call
)


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


def _history(steps: list[Any], statuses: list[str | None]) -> Any:
    active: list[Event] = []
    archived: list[Event] = []
    outcomes: dict[tuple[int, str], RecordedOutcome] = {}
    for n, (kind, turn, calls, is_archived, outcome) in enumerate(steps):
        content, author = _content(kind, calls, n)
        event = Event(id=n + 1, session_id="s", turn_id=turn, author=author, content=content)
        (archived if is_archived else active).append(event)
        if kind == "calls" and outcome:
            outcomes[(event.id, calls[0])] = RecordedOutcome(
                event.id, calls[0], "f", "did_not_run", None, "", "op", NOW
            )
    turns = [
        Turn(
            id=turn,
            session_id="s",
            status=TurnStatus(status),
            reason=TurnReason.NONE
            if status in ("completed", "running")
            else TurnReason.AGENT_ERROR,
            started_at=NOW,
        )
        for turn, status in zip(TURNS, statuses, strict=True)
        if status is not None
    ]
    return turns, active, archived, outcomes


@pytest.mark.django_db
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(STEP, max_size=30),
    statuses=st.lists(STATUSES, min_size=4, max_size=4),
    per_page=st.integers(min_value=1, max_value=6),
    page=st.sampled_from([None, "1", "2", "3", "9", "0", "x"]),
)
def test_streamed_context_equals_the_whole_computation(
    steps: list[Any], statuses: list[str | None], per_page: int, page: str | None
) -> None:
    turns, active, archived, outcomes = _history(steps, statuses)
    cut = compaction_index(active)
    compacted, live = product_history(active, outcomes)
    explanation = explain_projection(turns, live)
    product = ProductExplanation(
        explanation=explanation,
        compacted=tuple(compacted),
        compaction=live[0] if cut >= 0 else None,
        state_only=tuple(e for e in active[max(cut, 0) :] if is_state_only(e)),
        orphans=tuple(inspect_orphan_results(live)),
    )
    latest = max(turns, key=lambda turn: (turn.started_at, turn.id), default=None)
    rows = context_rows(product, archived, latest.id if latest is not None else "")
    if explanation.error is not None:
        mark_refused(rows)
    paginator = Paginator(rows, per_page)
    whole = paginator.get_page(page or paginator.num_pages)

    streamed = stream_context(
        {turn.id: turn for turn in turns},
        iter(active),
        iter(archived),
        outcomes,
        live_start=active[cut].id if cut >= 0 else 0,
        per_page=per_page,
        page=page,
    )
    assert streamed.page.paginator.count == paginator.count, (steps, statuses)
    assert streamed.page.number == whole.number
    shown = [(row.kind, row.view.event.id) for row in streamed.page]
    assert shown == [(row.kind, row.view.event.id) for row in whole], (steps, statuses)
    assert list(streamed.page) == list(whole)
    assert len(streamed.explanation.context) == len(explanation.context)
    assert len(streamed.explanation.notices) == len(explanation.notices)
    assert streamed.explanation.issues == explanation.issues[:1]
    assert streamed.explanation.issue_count == len(explanation.issues)
    assert repr(streamed.explanation.error) == repr(explanation.error)
    assert len(streamed.compacted) == len(compacted)
    assert streamed.compaction == product.compaction
    assert len(streamed.orphans) == len(product.orphans)


@pytest.mark.django_db
def test_context_page_reads_events_a_page_at_a_time(
    operator_client: Client, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.AGENTOPS_CONTEXT_ENTRIES_PER_PAGE = 5
    session = models.Session.objects.create(id="big", created_at=NOW, updated_at=NOW)
    models.Turn.objects.bulk_create(
        [
            models.Turn(
                id=f"t{n}", session=session, status="completed", started_at=NOW + timedelta(n)
            )
            for n in range(12)
        ]
    )
    models.Event.objects.bulk_create(
        [
            models.Event(
                session=session,
                turn_id=f"t{n}",
                role=role,
                text=f"message-{n:02d}-{role}",
                created_at=NOW,
                updated_at=NOW,
            )
            for n in range(12)
            for role in ("user", "assistant")
        ]
    )
    seen: list[int] = []
    original = stream.active_event_pages

    def counting(session_id: str, **kwargs: Any) -> Any:
        for events in original(session_id, chunk=4, **kwargs):
            seen.append(len(events))
            yield events

    monkeypatch.setattr("sessions_app.pages.context_window.active_event_pages", counting)
    url = reverse("sessions:context", args=["big"])
    body = operator_client.get(url).content.decode()
    assert max(seen) == 4 and sum(seen) == 24
    # The last page by default: 24 rows, 5 a page -> rows 21-24.
    assert "message-11-assistant" in body and "message-10-user" in body
    assert "message-09-assistant" not in body
    # The view kept the pass's state at the last page's first row (after the tenth turn):
    # the next view reads the 4 events after it and shows the same.
    seen.clear()
    again = operator_client.get(url).content.decode()
    assert again.split("<main", 1)[1] == body.split("<main", 1)[1]
    assert sum(seen) == 4
    seen.clear()
    earlier = operator_client.get(url, {"page": "4"}).content.decode()
    assert "message-07-assistant" in earlier and "message-06-user" not in earlier
    # Then the events after the state kept before page 4 (after row 14), not all 24.
    assert sum(seen) == 4 + 10
    first = operator_client.get(url, {"page": "1"}).content.decode()
    assert "message-00-user" in first and "message-03-user" not in first


@pytest.mark.django_db
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(STEP, max_size=30),
    statuses=st.lists(STATUSES, min_size=4, max_size=4),
    per_page=st.integers(min_value=1, max_value=4),
    page=st.sampled_from([None, "1", "2", "3", "9", "0", "x"]),
)
@example(  # a running turn's events between a call and its result (dropped: they answer)
    steps=[
        ("calls", "t1", ["a"], False, False),
        ("user", "t2", ["a"], False, False),
        ("tool", "t1", ["a"], False, False),
    ],
    statuses=["completed", "running", None, None],
    per_page=1,
    page=None,
)
def test_a_pass_resumed_from_any_kept_state_equals_the_whole_pass(
    steps: list[Any], statuses: list[str | None], per_page: int, page: str | None
) -> None:
    turns, active, archived, outcomes = _history(steps, statuses)
    cut = compaction_index(active)
    common: dict[str, Any] = {
        "live_start": active[cut].id if cut >= 0 else 0,
        "per_page": per_page,
        "page": page,
    }
    by_id = {turn.id: turn for turn in turns}
    whole = stream_context(
        by_id, iter(active), iter(archived), outcomes, checkpoint=lambda _piece: True,
        margin=100, **common,
    )  # fmt: skip
    plain = stream_context(by_id, iter(active), iter(archived), outcomes, **common)
    assert list(whole.page) == list(plain.page)  # keeping states changes nothing
    assert repr(whole.explanation) == repr(plain.explanation)
    for state in whole.checkpoints:
        resumed = stream_context(
            by_id,
            (e for e in active if e.id > state.upto),
            (e for e in archived if e.id > state.upto),
            {key: outcome for key, outcome in outcomes.items() if key[0] > state.upto},
            start=state,
            compaction=whole.compaction,
            **common,
        )
        assert resumed.page.paginator.count == whole.page.paginator.count
        assert resumed.page.number == whole.page.number
        if whole.page.start_index() - 1 >= state.rows:
            assert list(resumed.page) == list(whole.page), (steps, statuses, state)
        ours, theirs = resumed.explanation, whole.explanation
        assert (ours.context, ours.notices, ours.issues, ours.issue_count) == (
            theirs.context,
            theirs.notices,
            theirs.issues,
            theirs.issue_count,
        )
        assert repr(ours.error) == repr(theirs.error)
        assert (resumed.tokens, resumed.new_count) == (whole.tokens, whole.new_count)
        assert (len(resumed.orphans), len(resumed.compacted)) == (
            len(whole.orphans),
            len(whole.compacted),
        )
