"""Demo data: every outcome the dashboard shows, loaded idempotently."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from sessions_app.models import Event, Session, Turn
from todos_app.models import TodoItem, TodoList

pytestmark = pytest.mark.django_db


def _counts() -> dict[str, int]:
    return {
        "sessions": Session.objects.count(),
        "turns": Turn.objects.count(),
        "events": Event.objects.count(),
        "todo_lists": TodoList.objects.count(),
        "todo_items": TodoItem.objects.count(),
    }


def test_loading_demo_twice_gives_the_same_counts() -> None:
    call_command("load_demo")
    first = _counts()
    call_command("load_demo")
    assert _counts() == first
    assert first["sessions"] == 6
    assert first["events"] > 2000


def test_demo_covers_every_turn_outcome() -> None:
    call_command("load_demo")
    outcomes = set(Turn.objects.values_list("status", "reason"))
    assert outcomes == {
        ("completed", ""),
        ("failed", "agent_error"),
        ("interrupted", "canceled"),
        ("interrupted", "deadline_exceeded"),
        ("interrupted", "abandoned"),
        ("interrupted", "consumer_stopped"),
    }
    failed = Turn.objects.get(status="failed")
    assert (failed.failure_code, failed.failure_stage) == ("provider_error", "provider")
    pending = [e.pending_call_ids for e in Event.objects.exclude(pending_call_ids=[])]
    assert pending == [["call_refund_1"]]
    assert Event.objects.filter(text__contains="<script>alert(1)</script>").exists()
    assert Event.objects.filter(text__contains="<img src=x onerror=alert(1)>").exists()
    assert Event.objects.exclude(reasoning="").exists()
    assert Event.objects.exclude(usage=None).exists()
    assert Event.objects.filter(session_id="demo-large-research").count() == 2000
    statuses = set(TodoItem.objects.values_list("status", flat=True))
    assert statuses == {"pending", "in_progress", "completed"}
    assert set(Session.objects.values_list("source_format", flat=True)) == {"demo"}
    assert all("todos" not in s.state for s in Session.objects.all())


@pytest.mark.django_db
def test_load_demo_if_missing_keeps_existing_demo_sessions() -> None:
    from io import StringIO

    from django.core.management import call_command

    from sessions_app.models import Session

    call_command("load_demo", stdout=StringIO())
    Session.objects.filter(pk="demo-coding-bugfix").update(title="edited by a person")
    out = StringIO()
    call_command("load_demo", "--if-missing", stdout=out)
    assert "kept as they are" in out.getvalue()
    assert Session.objects.get(pk="demo-coding-bugfix").title == "edited by a person"
