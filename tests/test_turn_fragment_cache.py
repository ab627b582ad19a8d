"""The session page renders each turn once per process for the values it shows (Django's
fragment cache in templates/sessions/detail.html): a turn that changed in any shown value
is rendered anew, never served stale."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse

from sessions_app.models import Event, Turn
from tests.factories import make_session

pytestmark = pytest.mark.django_db


def _page(client: Client) -> str:
    response = client.get(reverse("sessions:detail", args=["s-cache"]))
    assert response.status_code == 200
    return response.content.decode()


def _turns(page: str) -> str:
    return page[page.index('<article class="turn') : page.index('id="timeline-end"')]


#: One shown value of a turn changed at a time, and what the page then says.
CHANGES = {
    "status": ({"status": "interrupted", "reason": "canceled"}, 'data-status="interrupted"'),
    "failure code": ({"failure_code": "openai.rate_limit_error"}, "openai.rate_limit_error"),
    "failure stage": ({"failure_stage": "tool"}, "stage-tool"),
    "failure message": ({"failure_message": "quota reached"}, "— quota reached"),
    "status note": ({"status_note": "Recovered at start"}, "Recovered at start"),
    "stopped by": ({"stopped_by": "ada (the page)"}, "Stop requested by ada (the page)"),
}


@pytest.mark.parametrize("change", CHANGES, ids=str)
def test_a_turn_rendered_before_shows_a_changed_value(operator_client: Client, change: str) -> None:
    make_session("s-cache", turns=1, statuses=["failed"])
    first = _page(operator_client)
    assert _turns(_page(operator_client)) == _turns(first)  # from the cache: the same turns
    fields, shown = CHANGES[change]
    assert shown not in first
    Turn.objects.filter(pk="s-cache-t00000").update(**fields)
    assert shown in _page(operator_client)


def test_a_running_turn_rendered_before_shows_its_end_and_its_events(
    operator_client: Client,
) -> None:
    make_session("s-cache", turns=1, statuses=["running"], events_per_turn=3)
    assert "still running" in _page(operator_client)
    turn = Turn.objects.get(pk="s-cache-t00000")
    Turn.objects.filter(pk=turn.pk).update(
        status="completed", finished_at=turn.started_at + timedelta(seconds=42)
    )
    after = _page(operator_client)
    assert "still running" not in after and "took 42" in after
    Event.objects.filter(turn_id=turn.id).order_by("id").last().delete()  # type: ignore[union-attr]
    assert 'data-count="2"' in _page(operator_client)


def test_the_same_turn_values_in_another_session_link_to_that_session(
    operator_client: Client,
) -> None:
    make_session("s-cache", turns=1)
    _page(operator_client)
    make_session("s-other", turns=1)
    Turn.objects.filter(session_id="s-other").update(
        started_at=Turn.objects.get(session_id="s-cache").started_at
    )
    body = operator_client.get(reverse("sessions:detail", args=["s-other"])).content.decode()
    assert "/sessions/s-other/turns/" in body and "/sessions/s-cache/" not in body
