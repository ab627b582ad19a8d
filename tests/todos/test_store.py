"""The durable todo store and the four tools on it (docs/runtime.md §7, 8 "Todos")."""

from __future__ import annotations

import asyncio

import pytest

from agentops.runtime import errors
from agentops.runtime.todos import (
    TodoCallContext,
    TodoIndexError,
    TodoShapeError,
    TodoStore,
    TodoTools,
)
from sessions_app.store import DjangoSessionService
from todos_app.models import TodoChange, TodoList
from todos_app.store import DjangoTodoStore, get_todo_store

pytestmark = pytest.mark.django_db(transaction=True)


async def _tools() -> tuple[TodoTools, DjangoSessionService, str]:
    service = DjangoSessionService()
    session = await service.create_session("app", "u", session_id="s1")
    return TodoTools(get_todo_store()), service, session.id


def test_store_is_a_todo_store() -> None:
    assert isinstance(DjangoTodoStore(), TodoStore)
    assert get_todo_store() is get_todo_store()


async def test_write_list_update_clear_bump_version_and_audit() -> None:
    tools, _service, sid = await _tools()
    assert await tools.call("todos_list", sid) == {"todos": []}
    todos = [
        {"content": "Read", "status": "completed"},
        {"content": "Fix", "status": "in_progress", "active_form": "Fixing"},
    ]
    context = TodoCallContext(turn_id="t-1", event_id=7)
    assert await tools.call("todos_write", sid, {"todos": todos}, context=context) == {"count": 2}
    assert await tools.call("todos_list", sid) == {"todos": todos}
    await tools.call("todos_update", sid, {"index": 1, "status": "completed"}, context=context)
    assert await tools.call("todos_clear", sid) == {"ok": True}
    assert await tools.call("todos_list", sid) == {"todos": []}
    todo_list = await TodoList.objects.aget(session_id=sid)
    assert todo_list.version == 3
    changes = [c async for c in TodoChange.objects.filter(todo_list=todo_list).order_by("version")]
    assert [(c.version, c.action, c.actor) for c in changes] == [
        (1, "todos_write", "agent"),
        (2, "todos_update", "agent"),
        (3, "todos_clear", "agent"),
    ]
    assert (changes[0].turn_id, changes[0].event_id, changes[0].before) == ("t-1", 7, [])
    assert changes[1].after[1] == {"content": "Fix", "status": "completed", "active_form": "Fixing"}
    assert changes[2].turn_id == "" and changes[2].event_id is None


async def test_bad_index_names_the_range_and_writes_nothing() -> None:
    tools, _service, sid = await _tools()
    await tools.call("todos_write", sid, {"todos": [{"content": "a", "status": "pending"}]})
    with pytest.raises(TodoIndexError, match=r"todo index 3 is out of range \[0, 1\)"):
        await tools.call("todos_update", sid, {"index": 3, "status": "done"})
    assert (await TodoList.objects.aget(session_id=sid)).version == 1
    assert await TodoChange.objects.acount() == 1


async def test_unknown_session_raises() -> None:
    tools = TodoTools(get_todo_store())
    with pytest.raises(errors.SessionNotFoundError):
        await tools.call("todos_write", "nope", {"todos": []})
    with pytest.raises(errors.SessionNotFoundError):
        await tools.call("todos_list", "nope")


async def test_garbage_write_is_rejected_naming_the_type() -> None:
    tools, _service, sid = await _tools()
    with pytest.raises(TodoShapeError, match="holds a int"):
        await tools.call("todos_write", sid, {"todos": 5})


async def test_concurrent_updates_in_one_turn_are_all_kept() -> None:
    tools, _service, sid = await _tools()
    items = [{"content": f"t{i}", "status": "pending"} for i in range(20)]
    await tools.call("todos_write", sid, {"todos": items})
    await asyncio.gather(
        *(tools.call("todos_update", sid, {"index": i, "status": "completed"}) for i in range(20))
    )
    listed = (await tools.call("todos_list", sid))["todos"]
    assert all(item["status"] == "completed" for item in listed)
    assert (await TodoList.objects.aget(session_id=sid)).version == 21


# -- the same tool behaviour on both stores (docs/runtime.md §8 "Todos") -------------------------


BoundTools = tuple[TodoTools, str]


@pytest.fixture(params=["memory", "django"])
async def bound_tools(request: pytest.FixtureRequest) -> BoundTools:
    if request.param == "memory":
        from agentops.runtime.memory import InMemorySessionService, InMemoryTodoStore

        service = InMemorySessionService()
        session = await service.create_session("app")
        return TodoTools(InMemoryTodoStore(service)), session.id
    tools, _service, sid = await _tools()
    return tools, sid


def test_all_four_tools_registered_with_schemas() -> None:
    tools = TodoTools(get_todo_store())
    names = [spec.name for spec in tools.specs]
    assert names == ["todos_list", "todos_write", "todos_update", "todos_clear"]
    assert all(spec.parameters["type"] == "object" for spec in tools.specs)


async def test_tools_behave_the_same_on_both_stores(bound_tools: BoundTools) -> None:
    tools, sid = bound_tools
    assert await tools.call("todos_list", sid) == {"todos": []}  # unset -> empty
    assert await tools.call("todos_write", sid, {}) == {"count": 0}  # missing -> empty list
    items = [{"content": "a", "status": "pending"}, {"content": "b", "status": "odd-status"}]
    assert await tools.call("todos_write", sid, {"todos": items}) == {"count": 2}
    patch = {"index": 0, "status": "in_progress", "content": "", "active_form": "Doing a"}
    assert await tools.call("todos_update", sid, patch) == {"ok": True}
    assert (await tools.call("todos_list", sid))["todos"] == [
        {"content": "a", "status": "in_progress", "active_form": "Doing a"},
        {"content": "b", "status": "odd-status"},  # other strings kept as given
    ]
    with pytest.raises(TodoIndexError, match=r"index 2 is out of range \[0, 2\)"):
        await tools.call("todos_update", sid, {"index": 2, "status": "completed"})
    with pytest.raises(TodoShapeError, match="holds a dict"):
        await tools.call("todos_write", sid, {"todos": {"content": "not a list"}})
    assert await tools.call("todos_clear", sid) == {"ok": True}
    assert await tools.call("todos_list", sid) == {"todos": []}


async def test_json_round_trip_coerces_and_skips_garbage_on_both_stores(
    bound_tools: BoundTools,
) -> None:
    import json

    tools, sid = bound_tools
    sent = json.loads(
        '[{"content": "ok", "status": "completed", "active_form": ""},'
        ' {"content": 7, "status": null, "active_form": ["x"]}, "garbage", 3, null]'
    )
    assert await tools.call("todos_write", sid, {"todos": sent}) == {"count": 2}
    listed = json.loads(json.dumps(await tools.call("todos_list", sid)))
    assert listed == {
        "todos": [{"content": "ok", "status": "completed"}, {"content": "", "status": ""}]
    }
