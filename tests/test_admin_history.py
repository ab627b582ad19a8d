"""Django admin shows stored history read-only: sessions, turns, events, tool outcomes,
imported files (sessions_app) and the todo audit (todos_app)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Model
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from sessions_app.models import Event, ImportedFile, Session, ToolOutcome, Turn
from tests.factories import add_unanswered_call, make_session
from todos_app.models import TodoChange, TodoList

pytestmark = pytest.mark.django_db

HISTORY_MODELS: list[type[Model]] = [Session, Turn, Event, ToolOutcome, ImportedFile, TodoChange]


@pytest.fixture
def root_client(client: Client) -> Client:
    client.force_login(User.objects.create_superuser("root", password="pw-root"))
    return client


@pytest.fixture
def history() -> dict[type[Model], Model]:
    """One stored row of each history model."""
    session = make_session("s-1", turns=1, todos=[{"content": "Plan", "status": "pending"}])
    turn = Turn.objects.get(session=session)
    call = add_unanswered_call(turn)
    outcome = ToolOutcome.objects.create(
        session=session,
        event=call,
        call_id="call-1",
        tool_name="Read",
        outcome=ToolOutcome.Outcome.DID_NOT_RUN,
        reason="the process died",
        recorded_at=timezone.now(),
    )
    imported = ImportedFile.objects.create(
        sha256="0" * 64, path="/tmp/s-1.jsonl", source_format="claude_code"
    )
    change = TodoChange.objects.create(
        todo_list=TodoList.objects.get(session=session),
        version=1,
        actor=TodoChange.Actor.AGENT,
        action="todos_update",
        created_at=timezone.now(),
    )
    return {
        Session: session,
        Turn: turn,
        Event: call,
        ToolOutcome: outcome,
        ImportedFile: imported,
        TodoChange: change,
    }


def _url(model: type[Model], view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


@pytest.mark.parametrize("model", HISTORY_MODELS, ids=lambda m: m.__name__)
def test_superuser_sees_the_list_and_each_row(
    root_client: Client, history: dict[type[Model], Model], model: type[Model]
) -> None:
    row = history[model]
    listing = root_client.get(_url(model, "changelist"))
    assert listing.status_code == 200
    assert _url(model, "change", row.pk) in listing.content.decode()
    assert root_client.get(_url(model, "change", row.pk)).status_code == 200


@pytest.mark.parametrize("model", HISTORY_MODELS, ids=lambda m: m.__name__)
def test_nobody_adds_changes_or_deletes_history(
    root_client: Client, history: dict[type[Model], Model], model: type[Model]
) -> None:
    row = history[model]
    count = model._default_manager.count()
    assert root_client.get(_url(model, "add")).status_code == 403
    assert root_client.post(_url(model, "add"), {}).status_code == 403
    assert root_client.post(_url(model, "change", row.pk), {}).status_code == 403
    assert root_client.get(_url(model, "delete", row.pk)).status_code == 403
    assert root_client.post(_url(model, "delete", row.pk), {"post": "yes"}).status_code == 403
    listing = root_client.get(_url(model, "changelist"))
    assert "delete_selected" not in listing.content.decode()
    assert model._default_manager.count() == count


def test_filters_and_search_answer(root_client: Client, history: dict[type[Model], Model]) -> None:
    assert root_client.get(_url(Turn, "changelist"), {"status": "completed"}).status_code == 200
    assert root_client.get(_url(Event, "changelist"), {"q": "s-1"}).status_code == 200
    assert root_client.get(_url(Session, "changelist"), {"q": "coder"}).status_code == 200


def test_event_list_query_count_does_not_grow_with_sessions(root_client: Client) -> None:
    make_session("s-1", events_per_turn=2)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert root_client.get(_url(Event, "changelist")).status_code == 200
        return len(captured)

    few = queries()
    for n in range(2, 12):
        make_session(f"s-{n}", events_per_turn=3)
    assert queries() == few
