"""Read an `agentops.session-export/1` document (`sessions_app.export`) back.

Nothing is re-derived: turns keep their outcomes, events every field (soft-deleted and
archived ones included), the session its original `source_format` and `source_path`,
the todo list its version, items and audit, and tool outcomes are restored. Events get
new database ids; audit rows and outcomes that point at an event are mapped to the new
id by the writer (`ParsedEvent.original_id`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from sessions_app.ingest.normalise import parse_iso
from sessions_app.ingest.parsed import (
    ParsedEvent,
    ParsedSession,
    ParsedTodo,
    ParsedTurn,
    ParseResult,
)
from sessions_app.ingest.registry import JsonDocumentFormat
from sessions_app.models import Session

EXPORT_SCHEMA = "agentops.session-export/1"


def looks_like_export(data: Any) -> bool:
    """True for a JSON object whose `schema` is `agentops.session-export/1`."""
    return isinstance(data, dict) and data.get("schema") == EXPORT_SCHEMA


def _when(value: Any) -> datetime:
    parsed = parse_iso(value)
    if parsed is None:
        raise ValueError(f"not an ISO 8601 time: {value!r}")
    return parsed


def parse_agentops_export(path: Path, data: dict[str, Any]) -> ParseResult:
    """One session from a decoded export document.

    Raises ValueError (with the field) when a required time is missing or malformed;
    the document is expected to be valid against docs/session-export.schema.json.
    """
    head = data["session"]
    turns = [
        ParsedTurn(
            id=t["id"],
            status=t["status"],
            reason=t.get("reason", ""),
            failure_code=t.get("failure_code", ""),
            failure_stage=t.get("failure_stage", ""),
            failure_message=t.get("failure_message", ""),
            status_note=t.get("status_note", ""),
            started_at=_when(t["started_at"]),
            finished_at=parse_iso(t.get("finished_at")),
        )
        for t in data.get("turns", [])
    ]
    events = [
        ParsedEvent(
            role=e["role"],
            created_at=_when(e["created_at"]),
            updated_at=_when(e["updated_at"]),
            deleted_at=parse_iso(e.get("deleted_at")),
            archived_at=parse_iso(e.get("archived_at")),
            original_id=e.get("id"),
            turn_id=e.get("turn_id", ""),
            source_id=e.get("source_id", ""),
            author=e.get("author", ""),
            text=e.get("text", ""),
            parts=e.get("parts", []),
            reasoning=e.get("reasoning", ""),
            tool_calls=e.get("tool_calls", []),
            tool_response=e.get("tool_response"),
            tool_call_id=e.get("tool_call_id", ""),
            pending_call_ids=e.get("pending_call_ids", []),
            finish_reason=e.get("finish_reason", ""),
            usage=e.get("usage"),
            state_delta=e.get("state_delta", {}),
            raw=e.get("raw"),
        )
        for e in data.get("events", [])
    ]
    parsed = ParsedSession(
        id=head["id"],
        app_name=head.get("app_name", ""),
        user_id=head.get("user_id", ""),
        title=head.get("title", ""),
        state=head.get("state", {}),
        created_at=_when(head["created_at"]),
        updated_at=_when(head["updated_at"]),
        source_format=head.get("source_format", "agentops_export"),
        source_path=head.get("source_path", ""),
        turns=turns,
        events=events,
    )
    todo = data.get("todo_list")
    if todo is not None:
        items = sorted(todo.get("items", []), key=lambda i: i["position"])
        parsed.todos = [
            ParsedTodo(content=i["content"], status=i["status"], active_form=i["active_form"])
            for i in items
        ]
        parsed.todo_version = todo["version"]
        parsed.todo_updated_at = _when(todo["updated_at"])
        parsed.todo_changes = [
            {**c, "created_at": _when(c["created_at"])} for c in todo.get("changes", [])
        ]
    parsed.tool_outcomes = [
        {**o, "recorded_at": _when(o["recorded_at"])} for o in data.get("tool_outcomes", [])
    ]
    return ParseResult(sessions=[parsed])


FORMAT = JsonDocumentFormat(
    name=Session.SourceFormat.AGENTOPS_EXPORT,
    looks_like=looks_like_export,
    parse_document=parse_agentops_export,
)
