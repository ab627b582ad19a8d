"""The streaming tool-protocol pass (`sessions_app.store.stream`) gives exactly what the
runtime's `inspect_tool_protocol` / `inspect_orphan_results` give on the whole history
(docs/runtime.md §5), whatever the page size; the context page reads the history page by
page, the protocol page only the events flagged as they were written."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import islice, pairwise
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from agentops.runtime.errors import ToolExecutionUnknownError
from agentops.runtime.model import Content, Event, Role, ToolCall, ToolResponse
from agentops.runtime.projection import ProjectionInput, project_default, projection_fails
from agentops.runtime.protocol import inspect_orphan_results, inspect_tool_protocol
from agentops.runtime.session import Turn, TurnReason, TurnStatus
from sessions_app import models
from sessions_app.pages import context as _context_page  # noqa: F401  (bound before patching)
from sessions_app.store import refresh_resume_status, stream
from sessions_app.store.stream import inspect_stream, protocol_chunks

CALL_IDS = st.sampled_from(["a", "b", "c"])
STEP = st.tuples(
    st.sampled_from(["user", "calls", "tool", "tool", "tool", "text", "state"]),
    st.sampled_from(["t1", "t1", "t2", ""]),
    st.lists(CALL_IDS, min_size=1, max_size=3),
)


def _event(position: int, kind: str, turn: str, calls: list[str]) -> Event:
    if kind == "calls":
        content = Content(
            role=Role.ASSISTANT, tool_calls=tuple(ToolCall(id=c, name="f") for c in calls)
        )
    elif kind == "tool":
        content = Content(
            role=Role.TOOL, tool_response=ToolResponse(tool_call_id=calls[0], name="f", result="ok")
        )
    elif kind == "text":
        content = Content(role=Role.ASSISTANT, text="hi")
    elif kind == "state":
        content = Content(role=Role.ASSISTANT)
    else:
        content = Content(role=Role.USER, text="go")
    return Event(id=position + 1, session_id="s", turn_id=turn, author="a", content=content)


def _pages(events: list[Event], size: int) -> list[list[Event]]:
    iterator = iter(events)
    return [page for page in iter(lambda: list(islice(iterator, size)), [])]


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(STEP, max_size=40), size=st.integers(min_value=1, max_value=7))
def test_streamed_inspection_equals_the_whole_one(
    steps: list[tuple[str, str, list[str]]], size: int
) -> None:
    events = [_event(n, *step) for n, step in enumerate(steps)]
    chunks = list(protocol_chunks(_pages(events, size)))
    assert [e for chunk in chunks for e in chunk] == events
    found = inspect_stream(chunks)
    assert found.issues == inspect_tool_protocol(events)
    assert found.orphans == inspect_orphan_results(events)
    assert found.count == len(events)
    assert all(found.orphan_events[o.position] is events[o.position] for o in found.orphans)


def test_pieces_end_right_before_a_non_tool_event() -> None:
    steps = [("calls", "t1", ["a"]), ("tool", "t1", ["a"]), ("tool", "t1", ["b"])] * 3
    events = [_event(n, *step) for n, step in enumerate(steps)]
    chunks = list(protocol_chunks(_pages(events, 2)))
    for chunk, following in pairwise(chunks):
        assert following[0].content.role is not Role.TOOL
        assert chunk


@pytest.mark.django_db
def test_protocol_page_reads_only_the_flagged_events(
    operator_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    session = models.Session.objects.create(id="big", created_at=now, updated_at=now)
    rows: list[dict[str, Any]] = []
    for n in range(30):
        rows.append({"role": "user", "text": f"q{n}"})
        rows.append({"role": "assistant", "tool_calls": [{"id": f"call-{n:02d}-x", "name": "f"}]})
        if n % 7:  # every seventh call has no result
            answer = {"tool_call_id": f"call-{n:02d}-x", "result": "ok"}
            rows.append(
                {"role": "tool", "tool_call_id": answer["tool_call_id"], "tool_response": answer}
            )
    answer = {"tool_call_id": "nobody", "result": "ok"}
    rows.append({"role": "tool", "tool_call_id": "nobody", "tool_response": answer})
    models.Event.objects.bulk_create(
        [models.Event(session=session, created_at=now, updated_at=now, **r) for r in rows]
    )
    refresh_resume_status("big")  # rows written outside the store: recomputed
    monkeypatch.setattr(stream, "CHUNK_EVENTS", 4)
    seen: list[int] = []
    original = stream.active_event_pages

    def counting(session_id: str, **kwargs: Any) -> Any:
        for page in original(session_id, chunk=4):
            seen.append(len(page))
            yield page

    monkeypatch.setattr(stream, "active_event_pages", counting)
    body = operator_client.get(reverse("sessions:protocol", args=["big"])).content.decode()
    assert seen == []  # no page of the history is read (`store.page_facts`)
    for n in range(30):
        assert (f"call-{n:02d}-x" in body) == (n % 7 == 0), n
    assert "nobody" in body and 'id="unreadable"' not in body


def _session_of(events: int) -> str:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    sid = f"s{events}"
    session = models.Session.objects.create(id=sid, created_at=now, updated_at=now)
    models.Turn.objects.create(id=f"{sid}-t", session=session, status="completed", started_at=now)
    models.Event.objects.bulk_create(
        [
            models.Event(session=session, turn_id=f"{sid}-t", role=role, text="x",
                         created_at=now, updated_at=now)
            for n in range(events // 2)
            for role in ("user", "assistant")
        ]
    )  # fmt: skip
    return sid


@pytest.mark.django_db
def test_context_page_queries_grow_only_by_one_per_page_of_events(
    operator_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    monkeypatch.setattr(stream, "CHUNK_EVENTS", 10)
    monkeypatch.setattr(
        stream.active_event_pages, "__kwdefaults__", {"chunk": 10, "archived": False}
    )
    small, large = _session_of(8), _session_of(38)
    operator_client.get(reverse("sessions:context", args=[small]))  # warm caches
    for page in ("sessions:context", "sessions:protocol"):
        counts = []
        for sid in (small, large):
            with CaptureQueriesContext(connection) as queries:
                assert operator_client.get(reverse(page, args=[sid])).status_code == 200
            counts.append(len(queries))
        # Context: 8 events, one page; 38 events, four pages of 10. Protocol: the
        # flagged events only (`store.page_facts`), whatever the length.
        growth = 3 if page == "sessions:context" else 0
        assert counts[1] - counts[0] == growth, (page, counts)
        assert counts[0] <= 14, (page, counts)


_REASONS = {
    TurnStatus.RUNNING: TurnReason.NONE,
    TurnStatus.COMPLETED: TurnReason.NONE,
    TurnStatus.INTERRUPTED: TurnReason.CANCELED,
    TurnStatus.FAILED: TurnReason.AGENT_ERROR,
}
STATUSES = st.dictionaries(
    st.sampled_from(["t1", "t2"]),
    st.sampled_from(list(TurnStatus)),
)


@settings(max_examples=400, deadline=None)
@given(steps=st.lists(STEP, max_size=40), statuses=STATUSES)
def test_the_streamed_projection_verdict_equals_project_default(
    steps: list[tuple[str, str, list[str]]], statuses: dict[str, TurnStatus]
) -> None:
    """`projection_fails` (reads the history once, `store.resume_paged`) says whether
    `project_default` raises, on any history and any turn statuses."""
    events = [_event(n, *step) for n, step in enumerate(steps)]
    turns = [
        Turn(
            id=turn_id,
            session_id="s",
            status=status,
            reason=_REASONS[status],
            started_at=datetime(2026, 1, 1, tzinfo=UTC),
        )
        for turn_id, status in statuses.items()
    ]
    try:
        project_default(ProjectionInput(turns=turns, events=events))
        fails = False
    except ToolExecutionUnknownError:
        fails = True
    assert projection_fails(statuses, iter(events)) is fails
