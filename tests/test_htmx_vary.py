"""Views that answer an htmx request with a fragment and a plain one with a page (or a
redirect) say so with `Vary: HX-Request`, so no cache hands one the other's answer."""

from __future__ import annotations

import pytest
from django.http.response import HttpResponseBase
from django.test import Client
from django.urls import reverse

from sessions_app.models import Event, Turn
from tests.factories import make_session

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def varies_on_hx_request(response: HttpResponseBase) -> bool:
    return "hx-request" in {name.strip().lower() for name in response.get("Vary", "").split(",")}


@pytest.fixture
def session_urls() -> dict[str, tuple[str, dict[str, str]]]:
    """Each GET view with a fragment answer -> (URL, the htmx headers that pick it)."""
    make_session("s-v", statuses=["failed"], todos=[{"content": "a", "status": "pending"}])
    turn = Turn.objects.get(session_id="s-v")
    event = Event.objects.filter(session_id="s-v").first()
    assert event is not None
    return {
        "sessions:list": (reverse("sessions:list"), {"HX-Target": "session-results"}),
        "sessions:detail": (reverse("sessions:detail", args=["s-v"]), {"HX-Target": "timeline"}),
        "sessions:turns": (reverse("sessions:turns", args=["s-v"]), {"HX-Target": "timeline"}),
        "sessions:turn_events": (
            reverse("sessions:turn_events", args=["s-v", turn.id]),
            {},
        ),
        "sessions:event_raw": (reverse("sessions:event_raw", args=["s-v", event.id]), {}),
        "turn_queue": (reverse("turn_queue"), {"HX-Target": "triage-results"}),
    }


@pytest.mark.parametrize(
    "name",
    [
        "sessions:list",
        "sessions:detail",
        "sessions:turns",
        "sessions:turn_events",
        "sessions:event_raw",
        "turn_queue",
    ],
)
def test_page_or_fragment_views_vary_on_hx_request(
    operator_client: Client, session_urls: dict[str, tuple[str, dict[str, str]]], name: str
) -> None:
    url, target = session_urls[name]
    page = operator_client.get(url)
    fragment = operator_client.get(url, headers={**HTMX, **target})
    assert page.status_code == fragment.status_code == 200
    assert page.content != fragment.content
    assert varies_on_hx_request(page) and varies_on_hx_request(fragment)


@pytest.mark.parametrize(
    "name,args,data",
    [
        ("add", (), {"content": "b"}),
        ("edit", (0,), {"content": "a2"}),
        ("status", (0,), {"status": "completed"}),
        ("move", (0,), {"direction": "down"}),
        ("delete", (0,), {}),
        ("clear", (), {}),
    ],
)
def test_todo_edits_vary_on_hx_request(
    admin_client: Client, name: str, args: tuple[int, ...], data: dict[str, str]
) -> None:
    make_session(
        "s-t",
        todos=[{"content": "a", "status": "pending"}, {"content": "z", "status": "pending"}],
    )
    url = reverse(f"todos:{name}", args=["s-t", *args])
    fragment = admin_client.post(url, {**data, "version": 1}, headers=HTMX)
    assert fragment.status_code == 200 and b'id="todos"' in fragment.content
    page = admin_client.post(url, {**data, "version": 1})  # now a stale version: 409 page
    assert page.status_code == 409 and b"<html" in page.content
    redirect = admin_client.post(url, {**data, "version": 2})
    assert redirect.status_code == 302
    assert all(varies_on_hx_request(r) for r in (fragment, page, redirect))
