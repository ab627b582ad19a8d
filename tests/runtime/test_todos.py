"""Todo tools (docs/runtime.md §7, acceptance cases of 8)."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentops.runtime import (
    Content,
    Event,
    InMemorySessionService,
    InMemoryTodoStore,
    Role,
    TodoItem,
    TodoTools,
)
from agentops.runtime.todos import (
    SUMMARY_END_MARKER,
    SUMMARY_START_MARKER,
    TODO_TOOL_SPECS,
    TodoIndexError,
    TodoShapeError,
    TodoToolError,
    coerce_todos,
    render_todos_for_summary,
)

ToolsAndSession = tuple[TodoTools, InMemorySessionService, str]


@pytest.fixture
async def tools_and_session() -> ToolsAndSession:
    service = InMemorySessionService()
    session = await service.create_session("app", "u")
    return TodoTools(InMemoryTodoStore(service)), service, session.id


async def test_unset_list_is_empty(tools_and_session: ToolsAndSession) -> None:
    tools, _, sid = tools_and_session
    assert await tools.call("todos_list", sid) == {"todos": []}


async def test_write_then_read_round_trips(tools_and_session: ToolsAndSession) -> None:
    tools, service, sid = tools_and_session
    todos = [
        {"content": "Run the tests", "status": "in_progress", "active_form": "Running the tests"},
        {"content": "Ship", "status": "pending"},
        {"content": "Odd", "status": "blocked-on-review"},
    ]
    assert await tools.call("todos_write", sid, {"todos": todos}) == {"count": 3}
    assert await tools.call("todos_list", sid) == {"todos": todos}
    assert await tools.call("todos_write", sid, {"todos": todos[:1]}) == {"count": 1}  # replaces
    assert (await tools.call("todos_list", sid))["todos"] == todos[:1]
    assert await tools.call("todos_write", sid, {}) == {"count": 0}
    session = await service.get_session(sid)
    assert session is not None and session.state["todos"] == []


async def test_json_round_trip_coerces_and_skips_garbage_entry(
    tools_and_session: ToolsAndSession,
) -> None:
    _, service, sid = tools_and_session
    raw = json.loads('[{"content": "a", "status": "pending"}, 7, {"content": 3, "status": null}]')
    assert coerce_todos(raw) == [
        TodoItem(content="a", status="pending"),
        TodoItem(content="", status=""),
    ]
    # Stored as a tool would have written it: through an event's state delta.
    await service.append_event(
        Event(session_id=sid, content=Content(role=Role.TOOL), state_delta={"todos": raw})
    )
    tools = TodoTools(InMemoryTodoStore(service))
    assert (await tools.call("todos_list", sid))["todos"] == [
        {"content": "a", "status": "pending"},
        {"content": "", "status": ""},
    ]


async def test_scalar_value_is_rejected_naming_the_type(tools_and_session: ToolsAndSession) -> None:
    tools, service, sid = tools_and_session
    await service.append_event(
        Event(session_id=sid, content=Content(role=Role.TOOL), state_delta={"todos": "buy milk"})
    )
    with pytest.raises(TodoShapeError, match="str"):
        await tools.call("todos_list", sid)
    with pytest.raises(TodoShapeError, match="dict"):
        coerce_todos({"content": "x"})


async def test_update_patches_non_empty_fields_and_bad_index_names_range(
    tools_and_session: ToolsAndSession,
) -> None:
    tools, _, sid = tools_and_session
    await tools.call("todos_write", sid, {"todos": [{"content": "a", "status": "pending"}]})
    assert await tools.call(
        "todos_update", sid, {"index": 0, "status": "completed", "content": ""}
    ) == {"ok": True}
    assert (await tools.call("todos_list", sid))["todos"] == [
        {"content": "a", "status": "completed"}
    ]
    with pytest.raises(TodoIndexError, match=r"index 3 .*\[0, 1\)") as caught:
        await tools.call("todos_update", sid, {"index": 3, "status": "done"})
    assert (caught.value.index, caught.value.length) == (3, 1)
    with pytest.raises(TodoIndexError, match=r"-1"):
        await tools.call("todos_update", sid, {"index": -1})
    with pytest.raises(TodoToolError, match="integer"):
        await tools.call("todos_update", sid, {"index": "zero"})


async def test_clear_keeps_the_key(tools_and_session: ToolsAndSession) -> None:
    tools, service, sid = tools_and_session
    await tools.call("todos_write", sid, {"todos": [{"content": "a", "status": "pending"}]})
    assert await tools.call("todos_clear", sid) == {"ok": True}
    session = await service.get_session(sid)
    assert session is not None and session.state == {"todos": []}


async def test_concurrent_updates_are_never_lost(tools_and_session: ToolsAndSession) -> None:
    tools, _, sid = tools_and_session
    items = [{"content": f"t{i}", "status": "pending"} for i in range(20)]
    await tools.call("todos_write", sid, {"todos": items})
    await asyncio.gather(
        *(tools.call("todos_update", sid, {"index": i, "status": "completed"}) for i in range(20))
    )
    listed = (await tools.call("todos_list", sid))["todos"]
    assert [item["status"] for item in listed] == ["completed"] * 20


def test_all_four_tools_registered_with_schemas() -> None:
    assert set(TODO_TOOL_SPECS) == {"todos_list", "todos_write", "todos_update", "todos_clear"}
    update = TODO_TOOL_SPECS["todos_update"].as_function()
    assert update["parameters"]["required"] == ["index"]
    assert TODO_TOOL_SPECS["todos_write"].parameters["properties"]["todos"]["type"] == "array"
    for spec in TODO_TOOL_SPECS.values():
        assert spec.parameters["type"] == "object" and spec.description
    assert [s.name for s in TodoTools(InMemoryTodoStore(InMemorySessionService())).specs] == [
        "todos_list", "todos_write", "todos_update", "todos_clear",
    ]  # fmt: skip


def test_summary_lists_each_item_between_markers() -> None:
    text = render_todos_for_summary(
        [TodoItem(content="Run tests", status="completed"), TodoItem(content="Ship")]
    )
    lines = text.splitlines()
    assert lines[:4] == [SUMMARY_START_MARKER, "- [completed] Run tests", "- [pending] Ship",
                         SUMMARY_END_MARKER]  # fmt: skip
    assert "todos_write" in text


def test_summary_block_omitted_for_an_empty_list_and_empty_items_skipped() -> None:
    assert render_todos_for_summary([]) == ""
    assert render_todos_for_summary([TodoItem(content=""), TodoItem(content="  \n ")]) == ""
    text = render_todos_for_summary(
        [TodoItem(content=""), TodoItem(content="Ship", status="pending"), TodoItem(content=" ")]
    )
    assert text.splitlines()[:3] == [SUMMARY_START_MARKER, "- [pending] Ship", SUMMARY_END_MARKER]
