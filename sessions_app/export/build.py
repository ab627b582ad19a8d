"""Build a whole session as one JSON document: schema `agentops.session-export/1`.

The format is defined by the pydantic models of `sessions_app.export.format`, from which
`docs/session-export.schema.json` is generated (`manage.py export_schema --write`). The
document holds the session header, every turn, every event (soft-deleted and archived ones
too, with those timestamps; each with the id it has here), the todo list (items, version)
with its audit, and the recorded tool outcomes. All times are ISO 8601 UTC strings with
microseconds; users are named by username. `import_sessions` reads it back (format
`agentops_export`, `sessions_app.ingest.formats.agentops_export`), validating it with the
same models.

Credentials are redacted again on the way out (`sessions_app.ingest.redaction.redact_value`),
so an export of a runtime session (whose events were never imported) holds none either.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from sessions_app.export.format import EXPORT_SCHEMA
from sessions_app.ingest.redaction import redact_value
from sessions_app.models import Event, Session, ToolOutcome
from sessions_app.signals import first_answer, session_todos_exported
from sessions_app.store import EVENT_COLUMNS, TURN_COLUMNS, json_row

# Every stored column but the session id, which the document's header holds once.
_EXPORTED_EVENT_COLUMNS = tuple(c for c in EVENT_COLUMNS if c != "session_id")
_EXPORTED_TURN_COLUMNS = tuple(c for c in TURN_COLUMNS if c != "session_id")


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def build_export(session: Session) -> dict[str, Any]:
    """The export document of `session` (a JSON-ready dict; see the module docstring).

    Costs a fixed number of queries (turns, events, todo list, items, changes,
    outcomes), whatever the session's size.
    """
    events = [
        json_row(e, _EXPORTED_EVENT_COLUMNS)
        for e in Event.objects.filter(session=session).order_by("id")
    ]
    turns = [
        json_row(t, _EXPORTED_TURN_COLUMNS) for t in session.turns.order_by("started_at", "id")
    ]
    # The todo list and its audit (todos_app), or None.
    todo_list = first_answer(session_todos_exported.send(sender=Session, session=session))
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
            "model": session.model,
        },
        "turns": turns,
        "events": events,
        "todo_list": todo_list,
        "tool_outcomes": outcomes,
    }
    redacted: dict[str, Any] = redact_value(document)
    return redacted
