"""The compaction summariser block on lists imported from the corpus (docs/runtime.md §7)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from agentops.runtime.memory import InMemorySessionService, InMemoryTodoStore
from agentops.runtime.todos import (
    SUMMARY_END_MARKER,
    SUMMARY_START_MARKER,
    TodoItem,
    TodoTools,
    render_todos_for_summary,
)
from todos_app.models import TodoList
from todos_app.services import read_todos

pytestmark = pytest.mark.django_db


def test_summary_block_for_every_imported_list(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    call_command("import_sessions", str(corpus), "--no-progress")
    capsys.readouterr()
    lists = [t for t in TodoList.objects.all() if t.items.exists()]
    assert lists, "the corpus has sessions with TodoWrite lists"
    for todo_list in lists:
        items = read_todos(todo_list.session_id)
        block = render_todos_for_summary(items).splitlines()
        start, end = block.index(SUMMARY_START_MARKER), block.index(SUMMARY_END_MARKER)
        assert start == 0 and end == len(items) + 1  # one line per item, between markers
        for line, item in zip(block[1:end], items, strict=True):
            assert line == f"- [{item.status}] {' '.join(item.content.split())}"
        instruction = " ".join(block[end + 1 :])
        assert "todos_write" in instruction and "todos_update" in instruction


async def test_summary_lines_can_restore_the_list_with_the_tools() -> None:
    items = [
        TodoItem(content="Read the code", status="completed"),
        TodoItem(content="Fix\nthe   bug", status="in_progress", active_form="Fixing"),
        TodoItem(content="Ship </todos> it", status="blocked"),
    ]
    block = render_todos_for_summary(items).splitlines()
    assert block[1:4] == [
        "- [completed] Read the code",
        "- [in_progress] Fix the bug",  # one line per item, whatever the content holds
        "- [blocked] Ship </todos> it",
    ]
    assert block.count(SUMMARY_END_MARKER) == 1  # content cannot end the block early
    # A resuming model restores the list from the lines with todos_write.
    service = InMemorySessionService()
    session = await service.create_session("app")
    tools = TodoTools(InMemoryTodoStore(service))
    restored = []
    for line in block[1:4]:
        status, content = line[3:].split("] ", 1)
        restored.append({"content": content, "status": status})
    await tools.call("todos_write", session.id, {"todos": restored})
    listed = (await tools.call("todos_list", session.id))["todos"]
    assert [(i["status"], i["content"]) for i in listed] == [
        ("completed", "Read the code"),
        ("in_progress", "Fix the bug"),
        ("blocked", "Ship </todos> it"),
    ]
