"""Store contract gaps closed on every store kind (docs/runtime.md §2, §7): values handed
out are copies, ``temp:`` state keys live only in the call that set them, and todos given
in `create_session(state=...)` are kept."""

from __future__ import annotations

import pytest

from agentops.runtime import (
    Content,
    Event,
    Role,
    TodoTools,
    ToolCall,
)
from agentops.runtime.memory import InMemoryTodoStore, LegacyInMemorySessionService

from .conftest import StoreHarness


def event(session_id: str, **delta: object) -> Event:
    return Event(
        session_id=session_id,
        author="bot",
        content=Content(
            role=Role.ASSISTANT,
            text="ok",
            tool_calls=(ToolCall(id="c1", name="lookup", arguments={"q": {"deep": [1]}}),),
        ),
        state_delta=dict(delta),
    )


async def test_mutating_returned_values_never_rewrites_history(store: StoreHarness) -> None:
    service = store.service
    session = await service.create_session("app", "u", state={"plan": {"step": 1}})
    session.state["plan"]["step"] = 99
    session.state["added"] = True
    appended = await service.append_event(event(session.id, cfg={"mode": "a"}))
    appended.state_delta["cfg"]["mode"] = "hacked"
    appended.content.tool_calls[0].arguments["q"]["deep"].append(2)
    [listed] = await service.list_events(session.id)
    listed.state_delta["cfg"]["mode"] = "hacked again"
    listed.content.tool_calls[0].arguments["q"] = "gone"
    loaded = await service.get_session(session.id)
    assert loaded is not None
    loaded.state["cfg"]["mode"] = "hacked via session"

    [again] = await service.list_events(session.id)
    assert again.state_delta == {"cfg": {"mode": "a"}}
    assert again.content.tool_calls[0].arguments == {"q": {"deep": [1]}}
    reloaded = await service.get_session(session.id)
    assert reloaded is not None and reloaded.state == {"plan": {"step": 1}, "cfg": {"mode": "a"}}


async def test_temp_keys_live_only_in_the_returned_values(store: StoreHarness) -> None:
    service = store.service
    session = await service.create_session("app", "u", state={"temp:scratch": 1, "kept": 1})
    assert session.state == {"temp:scratch": 1, "kept": 1}  # live in this call's session
    appended = await service.append_event(event(session.id, **{"temp:draft": "x", "z": 3}))
    assert appended.state_delta == {"temp:draft": "x", "z": 3}  # live in the returned event

    [listed] = await service.list_events(session.id)
    assert listed.state_delta == {"z": 3}  # never persisted
    reloaded = await service.get_session(session.id)
    assert reloaded is not None and reloaded.state == {"kept": 1, "z": 3}


async def test_todos_given_at_create_session_are_kept(store: StoreHarness) -> None:
    todos = [
        {"content": "Run the tests", "status": "in_progress", "active_form": "Running the tests"},
        {"content": "Ship", "status": "pending"},
    ]
    service = store.service
    session = await service.create_session("app", "u", state={"todos": todos, "other": 1})
    assert session.state["todos"] == todos
    reloaded = await service.get_session(session.id)
    assert reloaded is not None and reloaded.state == {"todos": todos, "other": 1}


async def test_todos_given_at_create_are_what_the_todo_tools_read() -> None:
    service = LegacyInMemorySessionService()
    session = await service.create_session("app", state={"todos": [{"content": "a"}]})
    listed = await TodoTools(InMemoryTodoStore(service)).call("todos_list", session.id)
    assert listed == {"todos": [{"content": "a", "status": ""}]}


@pytest.mark.django_db(transaction=True)
async def test_django_create_session_writes_todo_rows_in_its_transaction() -> None:
    from agentops.runtime.todos import TodoShapeError
    from sessions_app.models import Session as SessionRow
    from sessions_app.store import DjangoSessionService
    from todos_app.models import TodoChange

    service = DjangoSessionService()
    session = await service.create_session("app", state={"todos": [{"content": "a"}, "junk"]})
    assert session.state["todos"] == [{"content": "a", "status": ""}]  # coerced
    change = await TodoChange.objects.aget(todo_list__session_id=session.id)
    assert (change.action, change.event_id, change.version) == ("create_session", None, 1)
    stored = await SessionRow.objects.aget(pk=session.id)
    assert "todos" not in stored.state  # the rows are the one source of truth
    with pytest.raises(TodoShapeError):
        await service.create_session("app", session_id="bad", state={"todos": "all of it"})
    assert not await SessionRow.objects.filter(pk="bad").aexists()  # nothing half-written
