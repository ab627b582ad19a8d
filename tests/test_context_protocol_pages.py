"""Projected-context and tool-protocol pages run the real runtime on stored facts."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from sessions_app.models import Event, Session, Turn
from sessions_app.store import refresh_resume_status
from tests.factories import BASE, make_session

pytestmark = pytest.mark.django_db


def add_dangling_call(session: Session, turn: Turn, call_id: str = "call-9", **extra: Any) -> Event:
    event = Event.objects.create(
        session=session, turn_id=turn.id, role="assistant", created_at=BASE, updated_at=BASE,
        tool_calls=[{"id": call_id, "name": "deploy", "arguments": {"env": "prod"}}], **extra,
    )  # fmt: skip
    refresh_resume_status(session.id)  # written outside the store: recomputed
    return event


def test_context_of_a_clean_session_lists_every_event_kept(operator_client: Client) -> None:
    make_session("s-ok", turns=2)
    body = operator_client.get(reverse("sessions:context", args=["s-ok"])).content.decode()
    assert body.count("badge kind-kept") == 4
    assert "resumable" in body and "Projection fails" not in body


def test_context_of_failed_turn_cuts_the_dangling_call_and_adds_a_notice(
    operator_client: Client,
) -> None:
    session = make_session("s-f", turns=1, statuses=["failed"])
    add_dangling_call(session, session.turns.get())
    body = operator_client.get(reverse("sessions:context", args=["s-f"])).content.decode()
    assert body.count("badge kind-kept") == 2
    assert body.count("badge kind-cut") == 1
    assert body.count("badge kind-notice") == 1
    assert "provider_error" in body  # the notice names the failure code, never the message
    assert "Projection fails" not in body


def test_context_of_completed_turn_with_dangling_call_shows_unknown_execution(
    operator_client: Client,
) -> None:
    session = make_session("s-c", turns=1)
    call = add_dangling_call(session, session.turns.get())
    body = operator_client.get(reverse("sessions:context", args=["s-c"])).content.decode()
    assert "The next turn would be refused: unknown whether tools ran" in body
    assert f'<dd class="mono">{call.id}</dd>' in body
    assert "call-9" in body and "tool_execution_unknown" in body


def test_running_turn_is_shown_dropped(operator_client: Client) -> None:
    make_session("s-r", turns=2, statuses=["completed", "running"])
    body = operator_client.get(reverse("sessions:context", args=["s-r"])).content.decode()
    assert body.count("badge kind-dropped") == 2 and "turn still running" in body


def test_protocol_page_lists_exactly_the_unanswered_calls(operator_client: Client) -> None:
    session = make_session("s-p", turns=1)
    add_dangling_call(session, session.turns.get())
    body = operator_client.get(reverse("sessions:protocol", args=["s-p"])).content.decode()
    assert body.count("no result</span>") == 1 and "deploy" in body and "call-9" in body


def test_protocol_page_marks_pending_approval_calls(operator_client: Client) -> None:
    session = make_session("s-a", turns=1, statuses=["interrupted"])
    add_dangling_call(session, session.turns.get(), pending_call_ids=["call-9"])
    body = operator_client.get(reverse("sessions:protocol", args=["s-a"])).content.decode()
    assert "awaiting the user" in body and "no result</span>" not in body


def test_protocol_page_of_clean_session(operator_client: Client) -> None:
    make_session("s-ok")
    body = operator_client.get(reverse("sessions:protocol", args=["s-ok"])).content.decode()
    assert "Every tool call in the active history has its result" in body


def test_resume_status_feeds_the_list_filter(operator_client: Client) -> None:
    session = make_session("s-c", turns=1)
    add_dangling_call(session, session.turns.get())
    make_session("s-ok")
    assert refresh_resume_status("s-c") == (1, True)
    assert refresh_resume_status("s-ok") == (0, False)
    body = operator_client.get(
        reverse("sessions:list"), {"health": "cannot_resume"}
    ).content.decode()
    assert "s-c" in body and "Session s-ok" not in body


def test_outsider_gets_404_on_both_pages(outsider_client: Client) -> None:
    make_session("s-x")
    for name in ("sessions:context", "sessions:protocol"):
        assert outsider_client.get(reverse(name, args=["s-x"])).status_code == 404


def test_plain_text_tool_result_is_shown_as_the_result(operator_client: Client) -> None:
    session = make_session("s-plain", turns=1, events_per_turn=1)
    turn = session.turns.get()
    add_dangling_call(session, turn)
    Event.objects.create(
        session=session, turn_id=turn.id, role="tool", tool_call_id="call-9",
        text="deployed to prod", created_at=BASE, updated_at=BASE,
    )  # fmt: skip
    body = operator_client.get(reverse("sessions:context", args=["s-plain"])).content.decode()
    assert "result for <code>call-9</code><pre>deployed to prod</pre>" in body
    assert '<div class="markdown"><p>deployed to prod</p>' not in body
