"""Rows stored before validation existed (or written around it) never make a page fail:
the pages render them, showing the raw value where it cannot be understood."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from sessions_app.models import Event, Session, Turn
from tests.factories import BASE

pytestmark = pytest.mark.django_db

SID = "s-odd"

ODD_EVENTS: dict[str, dict[str, Any]] = {
    "finish_reason": {"role": "assistant", "text": "x", "finish_reason": "exploded"},
    "usage_string": {"role": "assistant", "text": "x", "usage": "lots of tokens"},
    "usage_bad_numbers": {"role": "assistant", "text": "x", "usage": {"prompt_tokens": "many"}},
    "role": {"role": "narrator", "text": "x"},
    "tool_calls_dict": {"role": "assistant", "tool_calls": {"id": "c1"}},
    "tool_calls_items": {"role": "assistant", "tool_calls": ["call", {"name": 3}]},
    "parts_string": {"role": "user", "parts": "just text"},
    "parts_items": {"role": "user", "parts": [1, {"type": "image_url"}]},
    "tool_response_list": {"role": "tool", "tool_call_id": "c1", "tool_response": [1, 2]},
    "state_delta_list": {"role": "assistant", "text": "x", "state_delta": [1]},
    "pending_ids_string": {"role": "assistant", "text": "x", "pending_call_ids": "c1"},
}
ODD_TURNS: dict[str, dict[str, Any]] = {
    "newline_id": {"id": "t\nnewline"},
    "reason": {"id": "t-reason", "status": "failed", "reason": "gremlins"},
    "failure_stage": {"id": "t-stage", "status": "failed", "failure_stage": "nowhere"},
}


def _store(turn: dict[str, Any], event: dict[str, Any]) -> None:
    session = Session.objects.create(id=SID, app_name="odd", created_at=BASE, updated_at=BASE)
    fields = {"status": "completed", "started_at": BASE, **turn}
    Turn.objects.bulk_create([Turn(session=session, **fields)])
    Event.objects.bulk_create(
        [Event(session=session, turn_id=fields["id"], created_at=BASE, updated_at=BASE, **event)]
    )


PAGES: list[Callable[[str], str]] = [
    lambda t: f"/sessions/{SID}/",
    lambda t: f"/sessions/{SID}/turns/",
    lambda t: f"/sessions/{SID}/context/",
    lambda t: f"/sessions/{SID}/protocol/",
    lambda t: f"/sessions/{SID}/todos/",
    lambda t: f"/sessions/{SID}/export/",
    lambda t: "/turns/",
    lambda t: "/turns/?status=failed",
    lambda t: f"/sessions/?q={SID}",
]


@pytest.mark.parametrize("odd", sorted(ODD_EVENTS))
def test_pages_render_odd_stored_events(admin_client: Client, odd: str) -> None:
    _store({"id": "t-1"}, ODD_EVENTS[odd])
    for page in PAGES:
        url = page("t-1")
        assert admin_client.get(url).status_code == 200, url
    event = Event.objects.get()
    assert admin_client.get(f"/sessions/{SID}/turns/t-1/events/").status_code == 200
    assert admin_client.get(f"/sessions/{SID}/events/{event.id}/raw/").status_code == 200


@pytest.mark.parametrize("odd", sorted(ODD_TURNS))
def test_pages_render_odd_stored_turns(admin_client: Client, odd: str) -> None:
    _store(ODD_TURNS[odd], {"role": "assistant", "text": "hello"})
    for page in PAGES:
        url = page(ODD_TURNS[odd]["id"])
        assert admin_client.get(url).status_code == 200, url


def test_unreadable_rows_are_shown_raw_on_the_runtime_pages(admin_client: Client) -> None:
    # A call without its result, marked as the store marks it when written
    # (`store.page_facts`): the protocol page reads the flagged events only.
    call = {"tool_calls": [{"id": "c1", "name": "t", "arguments": {}}], "unanswered_calls": [0]}
    _store({"id": "t-1"}, {**ODD_EVENTS["finish_reason"], **call})
    for page in ("context", "protocol"):
        body = admin_client.get(f"/sessions/{SID}/{page}/").content.decode()
        assert 'id="unreadable"' in body and "exploded" in body, page


def test_the_protocol_page_reads_only_flagged_events(admin_client: Client) -> None:
    _store({"id": "t-1"}, ODD_EVENTS["finish_reason"])
    body = admin_client.get(f"/sessions/{SID}/protocol/").content.decode()
    assert 'id="unreadable"' not in body and "has its result" in body


def test_a_turn_id_no_url_can_hold_is_shown_as_text(admin_client: Client) -> None:
    _store(ODD_TURNS["newline_id"], {"role": "assistant", "text": "hello"})
    body = admin_client.get(f"/sessions/{SID}/").content.decode()
    assert "cannot be part of a URL" in body and "t\\nnewline" in body


@pytest.mark.parametrize("session_id", ["s\nline", "s/slash", "."])
def test_lists_render_sessions_whose_id_no_url_can_hold(
    admin_client: Client, session_id: str
) -> None:
    session = Session.objects.create(
        id=session_id, app_name="odd", created_at=BASE, updated_at=BASE
    )
    Turn.objects.bulk_create(
        [Turn(id="t-x", session=session, status="failed", started_at=BASE, reason="agent_error")]
    )
    for url in ("/sessions/", "/turns/", "/turns/?status=failed"):
        assert admin_client.get(url).status_code == 200, url
