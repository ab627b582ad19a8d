"""Triage rows say why: each reason in plain words, the recorded note, and sessions that a
completed turn's unanswered call blocks ("blocks")."""

from __future__ import annotations

from datetime import datetime, timedelta
from html import escape

import pytest
from django.test import Client
from django.utils import timezone
from pytest_django import DjangoAssertNumQueries

from sessions_app.labels import label_for
from sessions_app.models import Event, Session, Turn
from tests.factories import add_unanswered_call

pytestmark = pytest.mark.django_db

URL = "/turns/"


def session(session_id: str, *, cannot_resume: bool = False) -> Session:
    now = timezone.now()
    return Session.objects.create(
        id=session_id,
        app_name="app",
        title=session_id,
        created_at=now,
        updated_at=now,
        cannot_resume=cannot_resume,
    )


def turn(s: Session, turn_id: str, status: str, started: datetime, **extra: str) -> Turn:
    return Turn.objects.create(
        id=turn_id,
        session=s,
        status=status,
        started_at=started,
        finished_at=started + timedelta(seconds=5),
        **extra,
    )


def test_interrupted_row_shows_its_reason_meaning_and_note(operator_client: Client) -> None:
    s = session("s-1")
    turn(
        s,
        "t-1",
        "interrupted",
        timezone.now(),
        reason="canceled",
        status_note="interrupt marker at line 17",
    )
    html = operator_client.get(URL).content.decode()
    assert "no failure recorded" not in html
    assert "interrupt marker at line 17" in html
    assert escape(label_for("reason", "canceled").help) in html


def test_completed_turn_with_unanswered_call_blocks_the_session(operator_client: Client) -> None:
    now = timezone.now()
    blocked = session("s-blocked", cannot_resume=True)
    turn(blocked, "old", "completed", now - timedelta(hours=2))
    last = turn(blocked, "last", "completed", now - timedelta(hours=1))
    add_unanswered_call(last, name="deploy")
    fine = session("s-fine")
    turn(fine, "ok", "completed", now)
    response = operator_client.get(URL)
    assert [row.turn.id for row in response.context["rows"]] == ["last"]
    html = response.content.decode()
    assert "blocks the session" in html and escape(label_for("status", "blocks").help) in html
    assert "/sessions/s-blocked/protocol/" in html  # where the forms are
    statuses = {f.name: {v.value: v.count for v in f.values} for f in response.context["facets"]}
    assert statuses["status"] == {"blocks": 1}
    filtered = operator_client.get(URL, {"status": "blocks"})
    assert [row.turn.id for row in filtered.context["rows"]] == ["last"]


def test_query_count_with_blocking_rows_and_tokens(
    operator_client: Client, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    now = timezone.now()
    for i in range(6):
        s = session(f"s-{i}", cannot_resume=i % 2 == 0)
        t = turn(s, f"t-{i}", "completed" if i % 2 == 0 else "failed", now - timedelta(hours=i))
        Event.objects.create(
            session=s,
            turn_id=t.id,
            role="assistant",
            created_at=now,
            updated_at=now,
            usage={"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
        )
    with django_assert_num_queries(10):  # + the tool facet's counts (tests/test_triage_tools.py)
        response = operator_client.get(URL)
    assert len(response.context["rows"]) == 6
    assert all(row.tokens.total == 12 for row in response.context["rows"])
