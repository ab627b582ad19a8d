"""Rows <-> runtime values: the one place that translates between the models and the
runtime's `Event`, `Session` and `Turn` (docs/runtime.md §1-2 shapes, UTC timestamps)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from agentops.runtime.model import Content, Event, FinishReason, Usage
from agentops.runtime.session import Session, Turn, TurnFailure, TurnReason, TurnStatus
from sessions_app import models
from sessions_app.store.columns import EVENT_RUNTIME_COLUMNS

__all__ = [
    "TurnRecord",
    "UnreadableRowError",
    "event_from_row",
    "event_from_values",
    "row_fields_from_event",
    "session_from_row",
    "turn_from_record",
    "turn_from_row",
]


class UnreadableRowError(ValueError):
    """A stored row is not a runtime value (docs/runtime.md §1-2 shapes): written before
    validation existed or around it. Pages that run the runtime on stored facts show
    `problem` and the `raw` column values instead of failing.

    Attributes: `kind` ("event" or "turn"), `row_id`, `problem` (one line), `raw` (the
    row's column values as stored)."""

    def __init__(self, kind: str, row_id: object, problem: str, raw: dict[str, Any]) -> None:
        super().__init__(f"stored {kind} {row_id!r} cannot be read: {problem}")
        self.kind, self.row_id, self.problem, self.raw = kind, row_id, problem, raw


def _problem(error: ValueError) -> str:
    errors = getattr(error, "errors", None)
    if callable(errors):  # pydantic: the first field and message
        first = errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        return f"{where}: {first.get('msg', '')}" if where else str(first.get("msg", ""))
    return str(error)


def event_from_values(row: dict[str, Any]) -> Event:
    """The runtime `Event` for a stored row given as a dict of `EVENT_RUNTIME_COLUMNS`
    values (as `QuerySet.values(*EVENT_RUNTIME_COLUMNS)` returns them; docs/runtime.md §1 shapes,
    UTC). Raises UnreadableRowError for a row that is not a valid event."""
    try:
        return _event(row)
    except ValueError as error:
        raise UnreadableRowError("event", row.get("id"), _problem(error), row) from error


def _event(row: dict[str, Any]) -> Event:
    content: dict[str, Any] = {
        "role": row["role"],
        "text": row["text"],
        "parts": row["parts"] or (),
        "reasoning": row["reasoning"],
        "tool_calls": row["tool_calls"] or (),
        "tool_response": row["tool_response"],
        "tool_call_id": row["tool_call_id"],
    }
    return Event(
        id=row["id"],
        session_id=row["session_id"],
        turn_id=row["turn_id"],
        author=row["author"],
        content=Content.model_validate(content),
        finish_reason=FinishReason(row["finish_reason"] or ""),
        usage=Usage.model_validate(row["usage"]) if row["usage"] else None,
        state_delta=row["state_delta"] or {},
        pending_call_ids=_pending(row.get("pending_call_ids")),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _pending(value: Any) -> tuple[str, ...]:
    """The stored pending call ids as the runtime's tuple; a stored value of another shape
    (not a list of strings) reads as none, as the pages read it."""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    return ()


def event_from_row(row: models.Event) -> Event:
    """The runtime `Event` for a stored model instance."""
    return event_from_values({name: getattr(row, name) for name in EVENT_RUNTIME_COLUMNS})


def row_fields_from_event(event: Event) -> dict[str, Any]:
    """Column values for storing `event` (without id, session and timestamps)."""
    content = event.content.model_dump(mode="json")
    return {
        "turn_id": event.turn_id,
        "author": event.author,
        "role": content["role"],
        "text": content["text"],
        "parts": content["parts"],
        "reasoning": content["reasoning"],
        "tool_calls": content["tool_calls"],
        "tool_response": content["tool_response"],
        "tool_call_id": content["tool_call_id"],
        "finish_reason": event.finish_reason.value,
        "usage": event.usage.model_dump(mode="json") if event.usage else None,
        "state_delta": event.state_delta,
        "pending_call_ids": list(event.pending_call_ids),
    }


def session_from_row(row: models.Session) -> Session:
    """The runtime `Session` for a stored row."""
    return Session(
        id=row.id,
        app_name=row.app_name,
        user_id=row.user_id,
        state=row.state,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


class TurnRecord(Protocol):
    """What `turn_from_record` reads: a `models.Turn` row or an importer's `ParsedTurn`."""

    @property
    def id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def failure_code(self) -> str: ...
    @property
    def failure_stage(self) -> str: ...
    @property
    def failure_message(self) -> str: ...
    @property
    def started_at(self) -> datetime: ...
    @property
    def finished_at(self) -> datetime | None: ...


def turn_from_record(record: TurnRecord, session_id: str) -> Turn:
    """The runtime `Turn` of a turn record (an empty failure code means no failure).
    Raises ValueError for a status or reason docs/runtime.md §2 does not name."""
    failure = (
        TurnFailure(
            code=record.failure_code, message=record.failure_message, stage=record.failure_stage
        )
        if record.failure_code
        else None
    )
    return Turn(
        id=record.id,
        session_id=session_id,
        status=TurnStatus(record.status),
        reason=TurnReason(record.reason),
        failure=failure,
        started_at=record.started_at,
        finished_at=record.finished_at,
    )


def turn_from_row(row: models.Turn) -> Turn:
    """The runtime `Turn` for a stored row. Raises UnreadableRowError for a row that is
    not a valid turn (a status, reason or failure docs/runtime.md §2 does not name)."""
    try:
        return turn_from_record(row, row.session_id)
    except ValueError as error:
        raw = {field.attname: getattr(row, field.attname) for field in row._meta.concrete_fields}
        raise UnreadableRowError("turn", row.id, _problem(error), raw) from error
