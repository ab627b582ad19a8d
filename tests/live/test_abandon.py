"""Stop on a turn whose process died: a stuck running turn that no live run holds is
recorded interrupted/abandoned (as the next run would, docs/runtime.md §3); a recent running turn,
or one whose run lock is held, is left alone."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from sessions_app import live
from sessions_app.models import Event, Session, Turn
from tests.factories import add_unanswered_call, make_session

pytestmark = pytest.mark.django_db(transaction=True)


def _stop(client: Client, session_id: str, turn_id: str = "") -> dict[str, Any]:
    response = client.post(
        reverse("sessions:stop_turns", args=[session_id]),
        {"turn_id": turn_id},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 202
    answer: dict[str, Any] = response.json()
    return answer


def test_stop_records_a_stuck_turn_with_no_live_run_as_abandoned(admin_client: Client) -> None:
    # A session cut off mid-turn long ago (factory times are in the past).
    make_session("s-dead", turns=2, statuses=["completed", "running"])
    dead = Turn.objects.get(session_id="s-dead", status="running")

    answer = _stop(admin_client, "s-dead", dead.id)

    assert answer == {"cancelled_here": 0, "abandoned": [dead.id]}
    dead.refresh_from_db()
    assert (dead.status, dead.reason) == ("interrupted", "abandoned")
    assert dead.finished_at is not None
    assert Turn.objects.get(session_id="s-dead", status="completed")  # untouched
    # A second stop finds nothing left to do.
    assert _stop(admin_client, "s-dead") == {"cancelled_here": 0, "abandoned": []}


def test_stop_leaves_a_running_turn_with_recent_activity_alone(admin_client: Client) -> None:
    make_session("s-busy", turns=1, statuses=["running"])
    turn = Turn.objects.get(session_id="s-busy")
    now = timezone.now()
    Turn.objects.filter(pk=turn.pk).update(started_at=now - timedelta(hours=1))
    Event.objects.filter(turn_id=turn.id).update(created_at=now - timedelta(seconds=5))

    assert _stop(admin_client, "s-busy") == {"cancelled_here": 0, "abandoned": []}
    turn.refresh_from_db()
    assert turn.status == "running"


async def test_a_stuck_turn_whose_run_lock_is_held_is_not_abandoned() -> None:
    session = await sync_to_async(make_session)("s-held", turns=1, statuses=["running"])
    service = live.LiveSessionService()
    async with service.run_lock(session.app_name, session.user_id, session.id):
        assert await live.abandon_stuck_turns("s-held") == []
    status = await Turn.objects.filter(session_id="s-held").values_list("status", flat=True).aget()
    assert status == "running"
    # With the lock free it goes.
    assert len(await live.abandon_stuck_turns("s-held")) == 1


def test_abandoning_refreshes_the_resume_status(admin_client: Client) -> None:
    make_session("s-open", turns=1, statuses=["running"])
    turn = Turn.objects.get(session_id="s-open")
    add_unanswered_call(turn)
    _stop(admin_client, "s-open")
    session = Session.objects.get(pk="s-open")
    # The unanswered call is an open issue; the abandoned turn is cut before it, so the
    # session can resume.
    assert (session.protocol_issue_count, session.cannot_resume) == (1, False)
