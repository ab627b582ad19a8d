"""The `todos` state key on the Django session service is served by the rows
(docs/runtime.md §7)."""

from __future__ import annotations

from typing import Any

import pytest

from agentops.runtime.model import Content, Event, Role
from agentops.runtime.todos import TodoShapeError, TodoTools
from sessions_app import models
from sessions_app.store import DjangoSessionService
from todos_app.models import TodoChange, TodoItem, TodoList
from todos_app.store import get_todo_store

pytestmark = pytest.mark.django_db(transaction=True)


def event(text: str, **extra: Any) -> Event:
    return Event(
        session_id="s1", turn_id="t1", content=Content(role=Role.ASSISTANT, text=text), **extra
    )


async def _state(service: DjangoSessionService) -> dict[str, Any]:
    """The state the service serves for session s1 (which must exist)."""
    session = await service.get_session("s1")
    assert session is not None
    return session.state


async def test_state_delta_setting_todos_replaces_the_rows_and_never_the_state() -> None:
    service = DjangoSessionService()
    await service.create_session("app", session_id="s1", state={"keep": 1})
    assert "todos" not in await _state(service)  # no list yet
    delta = {
        "todos": [{"content": "Plan", "status": "in_progress", "active_form": "Planning", "x": 1}],
        "other": 2,
    }
    stored = await service.append_event(event("plan", state_delta=delta))
    session = await service.get_session("s1")
    assert session is not None
    assert session.state == {
        "keep": 1,
        "other": 2,
        "todos": [{"content": "Plan", "status": "in_progress", "active_form": "Planning"}],
    }
    row = await models.Session.objects.aget(pk="s1")
    assert "todos" not in row.state  # the rows are the one source of truth
    change = await TodoChange.objects.aget()
    assert (change.actor, change.action, change.turn_id, change.event_id) == (
        "agent",
        "state_delta",
        "t1",
        stored.id,
    )
    # The tools and the state agree.
    tools = TodoTools(get_todo_store())
    await tools.call("todos_update", "s1", {"index": 0, "status": "completed"})
    assert (await _state(service))["todos"][0]["status"] == "completed"
    await tools.call("todos_clear", "s1")
    assert (await _state(service))["todos"] == []  # key kept, empty


async def test_state_delta_todos_none_clears_and_garbage_is_refused() -> None:
    service = DjangoSessionService()
    await service.create_session("app", session_id="s1")
    await service.append_event(event("a", state_delta={"todos": [{"content": "a"}, "junk", 3]}))
    assert (await _state(service))["todos"] == [{"content": "a", "status": ""}]
    with pytest.raises(TodoShapeError, match="holds a str"):
        await service.append_event(event("b", state_delta={"todos": "do it all"}))
    assert len(await service.list_events("s1")) == 1  # the bad event was not stored
    await service.append_event(event("c", state_delta={"todos": None}))
    assert (await _state(service))["todos"] == []
    assert (await TodoList.objects.aget(session_id="s1")).version == 2
    assert await TodoItem.objects.acount() == 0
