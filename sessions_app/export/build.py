"""Build a whole session as one JSON document: schema `agentops.session-export/1`.

The format is defined by the pydantic models of `sessions_app.export.format`, from which
`docs/session-export.schema.json` is generated (`manage.py export_schema --write`). The
document holds the session header, every turn, every event (soft-deleted and archived ones
too, with those timestamps; each with the id it has here), the todo list (items, version)
with its audit, and the recorded tool outcomes. All times are ISO 8601 UTC strings with
microseconds; users are named by username. `import_sessions` reads it back (format
`agentops_export`, `sessions_app.ingest.formats.agentops_export`), validating it with the
same models.

`export_text` writes the document incrementally: turns and events are read in keyset
pages of `CHUNK_ROWS` rows and each is serialised as it is read, so a 1,000,000-event
session is exported in bounded memory. Its bytes are those of
``json.dumps(build_export(session), ensure_ascii=False, indent=1)`` (a test compares them);
`build_export` gives the whole document as a dict, for small sessions and the API.

Credentials are redacted again on the way out (`sessions_app.ingest.redaction.redact_value`),
so an export of a runtime session (whose events were never imported) holds none either.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from sessions_app.export.format import EXPORT_SCHEMA
from sessions_app.ingest.redaction import redact_value
from sessions_app.models import Event, Session, ToolOutcome, Turn
from sessions_app.signals import first_answer, session_todos_exported
from sessions_app.store import EVENT_COLUMNS, TURN_COLUMNS

# Every stored column but the session id, which the document's header holds once.
_EXPORTED_EVENT_COLUMNS = tuple(c for c in EVENT_COLUMNS if c != "session_id")
_EXPORTED_TURN_COLUMNS = tuple(c for c in TURN_COLUMNS if c != "session_id")

#: Rows read per query (keyset page) while exporting turns and events.
CHUNK_ROWS = 2000

# Stands for a streamed list in the document's skeleton; JSON escapes the NULs, so no
# stored value can serialise to it.
_HOLE = "\x00agentops-export-{}\x00"


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _json_ready(columns: tuple[str, ...], values: tuple[Any, ...]) -> dict[str, Any]:
    return {
        name: value.isoformat() if isinstance(value, datetime) else value
        for name, value in zip(columns, values, strict=True)
    }


def _pages(rows: QuerySet[Any], columns: tuple[str, ...], key: str) -> Iterator[dict[str, Any]]:
    """Each row of `rows` (ordered by `key`, unique) as a redacted JSON-ready dict, read
    `CHUNK_ROWS` at a time by keyset (`key` > last seen), so memory holds one page."""
    names = (*columns, key)
    last: Any = None
    while True:
        page = rows if last is None else rows.filter(**{f"{key}__gt": last})
        chunk = list(page.values_list(*names)[:CHUNK_ROWS])
        for values in chunk:
            yield redact_value(_json_ready(columns, values[:-1]))
        if len(chunk) < CHUNK_ROWS:
            return
        last = chunk[-1][-1]


def _event_rows(session: Session) -> Iterator[dict[str, Any]]:
    rows = Event.objects.filter(session=session).order_by("id")
    return _pages(rows, _EXPORTED_EVENT_COLUMNS, "id")


def _turn_rows(session: Session) -> Iterator[dict[str, Any]]:
    # Turns are ordered by (started_at, id) in the document; keyset on a single unique
    # column needs one order, so the turns are read whole. They are few beside events
    # (one per prompt), and hold no transcript text.
    rows = Turn.objects.filter(session=session).order_by("started_at", "id")
    for values in rows.values_list(*_EXPORTED_TURN_COLUMNS).iterator(chunk_size=CHUNK_ROWS):
        yield redact_value(_json_ready(_EXPORTED_TURN_COLUMNS, values))


def _skeleton(session: Session, turns: Any, events: Any) -> dict[str, Any]:
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
    return {
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
            "orphan_result_count": session.orphan_result_count,
            "parent_session_id": session.parent_session_id,
            "parent_call_id": session.parent_call_id,
            "model": session.model,
        },
        "turns": turns,
        "events": events,
        "todo_list": redact_value(todo_list),
        "tool_outcomes": redact_value(outcomes),
    }


def build_export(session: Session) -> dict[str, Any]:
    """The export document of `session` as one JSON-ready dict (see the module
    docstring). Holds every event in memory: use `export_text` for large sessions.

    Costs a fixed number of queries per `CHUNK_ROWS` events (turns, events, todo list,
    items, changes, outcomes).
    """
    document = _skeleton(session, list(_turn_rows(session)), list(_event_rows(session)))
    redacted: dict[str, Any] = redact_value(document)
    return redacted


def _streamed_list(items: Iterator[dict[str, Any]]) -> Iterator[str]:
    """A list at depth 1 of the document, as ``json.dumps(..., indent=1)`` writes it."""
    first = True
    for item in items:
        body = json.dumps(item, ensure_ascii=False, indent=1).replace("\n", "\n  ")
        yield ("[\n  " if first else ",\n  ") + body
        first = False
    yield "[]" if first else "\n ]"


def export_text(session: Session) -> Iterator[str]:
    """The export document of `session` as text pieces, written as turns and events are
    read (bounded memory: one page of `CHUNK_ROWS` rows at a time). Joined, they equal
    ``json.dumps(build_export(session), ensure_ascii=False, indent=1)``."""
    holes = {"turns": _HOLE.format("turns"), "events": _HOLE.format("events")}
    skeleton = redact_value(_skeleton(session, holes["turns"], holes["events"]))
    text = json.dumps(skeleton, ensure_ascii=False, indent=1)
    streams = {"turns": _turn_rows(session), "events": _event_rows(session)}
    for name in ("turns", "events"):
        marker = json.dumps(holes[name], ensure_ascii=False)
        head, text = text.split(marker, 1)
        yield head
        yield from _streamed_list(streams[name])
    yield text
