"""A next-context view that would read many events (no kept state yet) answers at once
and reads them in a background thread (sessions_app/pages/context_background.py)."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from django.test import Client

from sessions_app.pages import context_background
from tests.factories import make_session

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/sessions/s-long/context/"


def _entries(body: str) -> str:
    found = re.search(r'<ol class="projection">.*?</ol>', body, re.S)
    assert found is not None, body[:2000]
    return found.group(0)


def _page(client: Client) -> str:
    response = client.get(URL)
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def long_session(settings: Any) -> None:
    settings.AGENTOPS_CONTEXT_BACKGROUND_EVENTS = 10
    settings.AGENTOPS_CONTEXT_ENTRIES_PER_PAGE = 5
    make_session("s-long", turns=6, events_per_turn=4)


def test_a_long_first_view_answers_at_once_then_shows_the_same_page(
    operator_client: Client, long_session: None, settings: Any
) -> None:
    first = _page(operator_client)
    assert 'id="context-pending"' in first and "more than 10 events" in first
    assert 'hx-trigger="every 3s"' in first and 'class="projection"' not in first
    assert context_background.wait_for("s-long")
    ready = _page(operator_client)
    assert 'id="context-pending"' not in ready
    settings.AGENTOPS_CONTEXT_BACKGROUND_EVENTS = 0  # computed in the request, from scratch
    from sessions_app.models import Session

    Session.objects.filter(pk="s-long").update(context_checkpoint=None)
    assert _entries(_page(operator_client)) == _entries(ready)


def test_one_pass_per_session_while_it_runs(
    operator_client: Client, long_session: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    release, calls = threading.Event(), []
    real = context_background.context_page  # type: ignore[attr-defined]

    def held(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name.startswith("context-"):
            calls.append(args)
            release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(context_background, "context_page", held)
    assert 'id="context-pending"' in _page(operator_client)
    assert 'id="context-pending"' in _page(operator_client)
    release.set()
    assert context_background.wait_for("s-long")
    assert len(calls) == 1
    assert 'class="projection"' in _page(operator_client)


def test_a_failed_pass_is_computed_in_the_next_request(
    operator_client: Client, long_session: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = context_background.context_page  # type: ignore[attr-defined]

    def failing(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name.startswith("context-"):
            raise RuntimeError("disk on fire")
        return real(*args, **kwargs)

    monkeypatch.setattr(context_background, "context_page", failing)
    assert 'id="context-pending"' in _page(operator_client)
    assert context_background.wait_for("s-long")
    assert 'class="projection"' in _page(operator_client)


def test_a_short_read_is_computed_in_the_request(operator_client: Client, settings: Any) -> None:
    settings.AGENTOPS_CONTEXT_BACKGROUND_EVENTS = 100
    make_session("s-long", turns=6, events_per_turn=4)
    assert 'class="projection"' in _page(operator_client)


def test_a_read_that_stays_long_after_a_pass_is_computed_in_the_request(
    operator_client: Client, long_session: None, settings: Any
) -> None:
    settings.AGENTOPS_CONTEXT_BACKGROUND_EVENTS = 1  # the kept state leaves a page to read
    assert 'id="context-pending"' in _page(operator_client)
    assert context_background.wait_for("s-long")
    assert 'class="projection"' in _page(operator_client)
    assert 'class="projection"' in _page(operator_client)
