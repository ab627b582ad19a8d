"""Read an `agentops.session-export/1` document (`sessions_app.export`) back.

Nothing is re-derived: turns keep their outcomes, events every field (soft-deleted and
archived ones included), the session its original `source_format` and `source_path`,
the todo list its version, items and audit, and tool outcomes are restored. Events get
new database ids; audit rows and outcomes that point at an event are mapped to the new
id by the writer (`ParsedEvent.original_id`).

Every document is validated with the export format's models (`sessions_app.export.format`)
before it is read: a document that does not fit (an unknown status, a failure code outside
the grammar, an id a URL cannot carry, a string where a count belongs...) is refused
whole, with one line naming the field, and nothing is written.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from sessions_app.export.format import EXPORT_SCHEMA, validate_export
from sessions_app.ingest.errors import ImportRefusedError
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


def looks_like_export(data: Any) -> bool:
    """True for a JSON object whose `schema` is `agentops.session-export/1`."""
    return isinstance(data, dict) and data.get("schema") == EXPORT_SCHEMA


def _when(value: str) -> datetime:
    parsed = parse_iso(value)
    if parsed is None:  # the format's validation has checked every time already
        raise ValueError(f"not an ISO 8601 time: {value!r}")
    return parsed


def parse_agentops_export(path: Path, data: dict[str, Any]) -> ParseResult:
    """One session from a decoded export document.

    Raises `ImportRefusedError` ("PATH: not a valid agentops export: turns[3].failure_code:
    ...", one line) when the document does not fit the export format.
    """
    try:
        validate_export(data)
    except ValueError as exc:
        raise ImportRefusedError(path, f"not a valid agentops export: {exc}") from None
    head = data["session"]
    turns = [
        ParsedTurn(
            id=t["id"],
            status=t["status"],
            reason=t["reason"],
            failure_code=t["failure_code"],
            failure_stage=t["failure_stage"],
            failure_message=t["failure_message"],
            status_note=t["status_note"],
            started_at=_when(t["started_at"]),
            finished_at=parse_iso(t["finished_at"]),
        )
        for t in data["turns"]
    ]
    events = [
        ParsedEvent(
            role=e["role"],
            created_at=_when(e["created_at"]),
            updated_at=_when(e["updated_at"]),
            deleted_at=parse_iso(e["deleted_at"]),
            archived_at=parse_iso(e["archived_at"]),
            original_id=e["id"],
            turn_id=e["turn_id"],
            source_id=e["source_id"],
            author=e["author"],
            text=e["text"],
            parts=e["parts"],
            reasoning=e["reasoning"],
            tool_calls=e["tool_calls"],
            tool_response=e["tool_response"],
            tool_call_id=e["tool_call_id"],
            pending_call_ids=e["pending_call_ids"],
            finish_reason=e["finish_reason"],
            usage=e["usage"],
            state_delta=e["state_delta"],
            raw=e["raw"],
        )
        for e in data["events"]
    ]
    parsed = ParsedSession(
        id=head["id"],
        app_name=head["app_name"],
        user_id=head["user_id"],
        title=head["title"],
        state=head["state"],
        created_at=_when(head["created_at"]),
        updated_at=_when(head["updated_at"]),
        source_format=head["source_format"],
        source_path=head["source_path"],
        model=head.get("model") or "",
        parent_session_id=head.get("parent_session_id", ""),
        parent_call_id=head.get("parent_call_id", ""),
        turns=turns,
        events=events,
    )
    todo = data["todo_list"]
    if todo is not None:
        items = sorted(todo["items"], key=lambda i: i["position"])
        parsed.todos = [
            ParsedTodo(content=i["content"], status=i["status"], active_form=i["active_form"])
            for i in items
        ]
        parsed.todo_version = todo["version"]
        parsed.todo_updated_at = _when(todo["updated_at"])
        parsed.todo_changes = [{**c, "created_at": _when(c["created_at"])} for c in todo["changes"]]
    parsed.tool_outcomes = [
        {**o, "recorded_at": _when(o["recorded_at"])} for o in data["tool_outcomes"]
    ]
    return ParseResult(sessions=[parsed])


FORMAT = JsonDocumentFormat(
    name=Session.SourceFormat.AGENTOPS_EXPORT,
    looks_like=looks_like_export,
    parse_document=parse_agentops_export,
)
