"""A whole session as one JSON document: schema `agentops.session-export/1`.

The schema is written down in `docs/session-export.schema.json`. The document holds the
session header, every turn, every event (soft-deleted and archived ones too, with those
timestamps; each with the id it has here), the todo list (items, version) with its
audit (`TodoChange` rows), and the recorded tool outcomes. All times are ISO 8601 UTC
strings with microseconds; users are named by username. `import_sessions` reads it back
(format `agentops_export`, `sessions_app.ingest.agentops_export`).

Credentials are redacted again on the way out (`sessions_app.ingest.redaction.redact_value`), so
an export of a runtime session (whose events were never imported) holds none either.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from sessions_app.ingest.redaction import redact_value
from sessions_app.models import Event, Session, ToolOutcome
from todos_app.models import TodoChange, TodoList

EXPORT_SCHEMA = "agentops.session-export/1"


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def build_export(session: Session) -> dict[str, Any]:
    """The export document of `session` (a JSON-ready dict; see the module docstring).

    Costs a fixed number of queries (turns, events, todo list, items, changes,
    outcomes), whatever the session's size.
    """
    events = [
        {
            "id": e.id,
            "turn_id": e.turn_id,
            "source_id": e.source_id,
            "author": e.author,
            "role": e.role,
            "text": e.text,
            "parts": e.parts,
            "reasoning": e.reasoning,
            "tool_calls": e.tool_calls,
            "tool_response": e.tool_response,
            "tool_call_id": e.tool_call_id,
            "pending_call_ids": e.pending_call_ids,
            "finish_reason": e.finish_reason,
            "usage": e.usage,
            "state_delta": e.state_delta,
            "raw": e.raw,
            "created_at": _time(e.created_at),
            "updated_at": _time(e.updated_at),
            "deleted_at": _time(e.deleted_at),
            "archived_at": _time(e.archived_at),
        }
        for e in Event.objects.filter(session=session).order_by("id")
    ]
    turns = [
        {
            "id": t.id,
            "status": t.status,
            "reason": t.reason,
            "failure_code": t.failure_code,
            "failure_stage": t.failure_stage,
            "failure_message": t.failure_message,
            "status_note": t.status_note,
            "started_at": _time(t.started_at),
            "finished_at": _time(t.finished_at),
        }
        for t in session.turns.order_by("started_at", "id")
    ]
    todo_list: dict[str, Any] | None = None
    todo = TodoList.objects.filter(session=session).first()
    if todo is not None:
        todo_list = {
            "version": todo.version,
            "updated_at": _time(todo.updated_at),
            "items": [
                {
                    "position": i.position,
                    "content": i.content,
                    "status": i.status,
                    "active_form": i.active_form,
                }
                for i in todo.items.order_by("position")
            ],
            "changes": [
                {
                    "version": c.version,
                    "actor": c.actor,
                    "user": c.user.get_username() if c.user else None,
                    "turn_id": c.turn_id,
                    "event_id": c.event_id,
                    "action": c.action,
                    "before": c.before,
                    "after": c.after,
                    "created_at": _time(c.created_at),
                }
                for c in TodoChange.objects.filter(todo_list=todo)
                .select_related("user")
                .order_by("id")
            ],
        }
    outcomes = [
        {
            "event_id": o.event_id,
            "call_id": o.call_id,
            "tool_name": o.tool_name,
            "outcome": o.outcome,
            "result": o.result,
            "reason": o.reason,
            "recorded_by": o.recorded_by.get_username() if o.recorded_by else None,
            "recorded_at": _time(o.recorded_at),
        }
        for o in ToolOutcome.objects.filter(session=session)
        .select_related("recorded_by")
        .order_by("id")
    ]
    document = {
        "schema": EXPORT_SCHEMA,
        "exported_at": _time(timezone.now()),
        "session": {
            "id": session.id,
            "app_name": session.app_name,
            "user_id": session.user_id,
            "title": session.title,
            "state": session.state,
            "source_format": session.source_format,
            "source_path": session.source_path,
            "created_at": _time(session.created_at),
            "updated_at": _time(session.updated_at),
            "protocol_issue_count": session.protocol_issue_count,
            "cannot_resume": session.cannot_resume,
        },
        "turns": turns,
        "events": events,
        "todo_list": todo_list,
        "tool_outcomes": outcomes,
    }
    redacted: dict[str, Any] = redact_value(document)
    return redacted
