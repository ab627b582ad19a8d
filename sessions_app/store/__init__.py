"""The Django session service: the runtime's store protocols on the ORM (SPEC.md 2).

`DjangoSessionService` implements `SessionService`, `TurnStore` and `RunLock` from
`agentops.runtime.session` on the `Session`, `Turn` and `Event` models. It is the only
place that translates runtime values to rows and back. Every method is async (usable
from a Channels consumer or the Runner); the ORM work runs in a worker thread through
`sync_to_async`, one transaction per operation.

Run lock: on PostgreSQL a session-level advisory lock held on a dedicated connection for
the whole run, so a crashed holder's lock is released by the server when its connection
dies; elsewhere (SQLite) an in-process asyncio lock per key.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, Protocol

from asgiref.sync import sync_to_async
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from pydantic import TypeAdapter

from agentops.runtime import errors
from agentops.runtime.model import Content, Event, FinishReason, Usage
from agentops.runtime.projection import ProjectionInput, project_default
from agentops.runtime.protocol import inspect_tool_protocol
from agentops.runtime.session import (
    Session,
    Turn,
    TurnFailure,
    TurnOutcome,
    TurnReason,
    TurnStatus,
    validate_outcome,
)
from agentops.runtime.todos import TODOS_STATE_KEY, coerce_todos, dump_todos
from sessions_app import models
from sessions_app.projector import RecordedOutcome, apply_tool_outcomes, load_outcomes
from todos_app.models import TodoList
from todos_app.services import Actor, replace_todos, todo_items_of

# Seconds between two attempts to take a PostgreSQL advisory lock (waiting stays cancellable).
_ADVISORY_POLL_SECONDS = 0.02
# The same for the in-process run lock (SQLite and other databases).
_LOCAL_POLL_SECONDS = 0.01
# In-process run locks by run key (app, user, session), shared by every service instance.
_PROCESS_LOCKS: dict[tuple[str, str, str], threading.Lock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()


_EVENT_FIELDS = (
    "id", "session_id", "turn_id", "author", "role", "text", "parts", "reasoning",
    "tool_calls", "tool_response", "tool_call_id", "finish_reason", "usage", "state_delta",
    "created_at", "updated_at",
)  # fmt: skip


def event_from_values(row: dict[str, Any]) -> Event:
    """The runtime `Event` for a stored row given as a dict of `_EVENT_FIELDS` values
    (as `QuerySet.values(*_EVENT_FIELDS)` returns them; SPEC.md 1 shapes, UTC)."""
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
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def event_from_row(row: models.Event) -> Event:
    """The runtime `Event` for a stored model instance."""
    return event_from_values({name: getattr(row, name) for name in _EVENT_FIELDS})


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
    Raises ValueError for a status or reason SPEC.md 2 does not name."""
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
    """The runtime `Turn` for a stored row."""
    return turn_from_record(row, row.session_id)


def advisory_lock_key(app_name: str, user_id: str, session_id: str) -> int:
    """A signed 64-bit PostgreSQL advisory-lock key for the run key (app, user, session)."""
    digest = hashlib.blake2b(
        "\x1f".join((app_name, user_id, session_id)).encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


class DjangoSessionService:
    """`SessionService` + `TurnStore` + `RunLock` on the Django models (SPEC.md 2).

    All methods are coroutines; errors are the runtime's named exceptions
    (`SessionNotFoundError`, `TurnNotFoundError`, `TurnStateConflictError`, ...).
    """

    # -- sessions and events -------------------------------------------------------------

    async def create_session(
        self,
        app_name: str,
        user_id: str = "",
        *,
        session_id: str | None = None,
        state: dict[str, Any] | None = None,
    ) -> Session:
        """Create a session (id: a new UUID4 hex when None); duplicate id -> ValueError."""
        return await sync_to_async(self._create_session)(app_name, user_id, session_id, state)

    def _create_session(
        self, app_name: str, user_id: str, session_id: str | None, state: dict[str, Any] | None
    ) -> Session:
        now = timezone.now()
        try:
            with transaction.atomic():
                row = models.Session.objects.create(
                    id=session_id or uuid.uuid4().hex,
                    app_name=app_name,
                    user_id=user_id,
                    state=dict(state or {}),
                    created_at=now,
                    updated_at=now,
                )
        except IntegrityError:
            raise ValueError(f"session {session_id!r} already exists") from None
        return session_from_row(row)

    async def get_session(self, session_id: str) -> Session | None:
        """The session, or None when it does not exist.

        `state["todos"]` is read from the todo rows (present once the session has a todo
        list; SPEC.md 7), never from the stored state.
        """
        return await sync_to_async(self._get_session)(session_id)

    def _get_session(self, session_id: str) -> Session | None:
        row = models.Session.objects.filter(pk=session_id).first()
        if row is None:
            return None
        # Todos: the TodoList/TodoItem rows are the one source of truth (SPEC.md 7).
        state = {k: v for k, v in row.state.items() if k != TODOS_STATE_KEY}
        todo_list = TodoList.objects.filter(session_id=row.id).first()
        if todo_list is not None:
            state[TODOS_STATE_KEY] = dump_todos(todo_items_of(todo_list))
        return session_from_row(row).model_copy(update={"state": state})

    async def list_events(self, session_id: str) -> list[Event]:
        """Active events (not deleted, not archived) in id order; unknown session raises."""
        return await sync_to_async(self._list_events)(session_id)

    def _list_events(self, session_id: str) -> list[Event]:
        if not models.Session.objects.filter(pk=session_id).exists():
            raise errors.SessionNotFoundError(session_id)
        rows = (
            models.Event.objects.active()
            .filter(session_id=session_id)
            .order_by("id")
            .values(*_EVENT_FIELDS)
        )
        return [event_from_values(row) for row in rows]

    async def append_event(self, event: Event) -> Event:
        """Store a complete event and merge its state delta into the session state, in one
        transaction (the session row is locked first on PostgreSQL). Returns the stored copy
        (id > 0, UTC timestamps). Partial -> InvalidEventError; unknown session ->
        SessionNotFoundError.

        A delta setting `todos` replaces the todo rows instead (coerced per SPEC.md 7,
        versioned and audited as an agent change, same transaction); a non-list value
        raises `TodoShapeError` and nothing is stored."""
        if event.partial:
            raise errors.InvalidEventError(event.session_id, "partial events are never stored")
        return await sync_to_async(self._append_event)(event)

    def _append_event(self, event: Event) -> Event:
        delta = dict(event.state_delta)
        fields = row_fields_from_event(event)
        with transaction.atomic():
            # Inside the transaction: on SQLite BEGIN IMMEDIATE already holds the write
            # lock, so timestamps grow with ids.
            now = timezone.now()
            if not delta:
                # Nothing to merge (most events): one UPDATE both checks that the session
                # exists and locks its row (PostgreSQL) before the INSERT, so a session's
                # event ids still grow in commit order; two statements instead of three.
                touched = models.Session.objects.filter(pk=event.session_id).update(updated_at=now)
                if not touched:
                    raise errors.SessionNotFoundError(event.session_id)
                row_id = self._insert_event(event.session_id, now, fields)
                return event.model_copy(update={"id": row_id, "created_at": now, "updated_at": now})
            # A delta: read-modify-write of the state under the row lock (SELECT ... FOR
            # UPDATE on PostgreSQL; SQLite's BEGIN IMMEDIATE already holds the write lock).
            state = (
                models.Session.objects.select_for_update()
                .filter(pk=event.session_id)
                .values_list("state", flat=True)
                .first()
            )
            if state is None:
                raise errors.SessionNotFoundError(event.session_id)
            row_id = self._insert_event(event.session_id, now, fields)
            if TODOS_STATE_KEY in delta:
                # Todos: route to the rows (the one source of truth), not Session.state.
                replace_todos(
                    event.session_id,
                    coerce_todos(delta.pop(TODOS_STATE_KEY)),
                    actor=Actor.agent(turn_id=event.turn_id, event_id=row_id),
                    action="state_delta",
                )
            update: dict[str, Any] = {"updated_at": now}
            if delta:
                update["state"] = {**state, **delta}
            models.Session.objects.filter(pk=event.session_id).update(**update)
        return event.model_copy(update={"id": row_id, "created_at": now, "updated_at": now})

    @staticmethod
    def _insert_event(session_id: str, now: Any, fields: dict[str, Any]) -> int:
        row = models.Event.objects.create(
            session_id=session_id, created_at=now, updated_at=now, **fields
        )
        return row.id

    async def delete_event(self, session_id: str, event_id: int) -> None:
        """Soft-delete an event (it leaves the active history, the row stays)."""
        await sync_to_async(self._delete_event)(session_id, event_id)

    def _delete_event(self, session_id: str, event_id: int) -> None:
        with transaction.atomic():
            updated = models.Event.objects.filter(
                session_id=session_id, pk=event_id, deleted_at__isnull=True
            ).update(deleted_at=timezone.now())
            if not updated:
                raise errors.EventNotFoundError(session_id, event_id)

    # -- turns ---------------------------------------------------------------------------

    async def begin_turn(self, session_id: str, turn: Turn) -> Turn:
        """Record a new running turn (SPEC.md 2); invalid or duplicate -> InvalidTurnError."""
        if not turn.id:
            raise errors.InvalidTurnError(turn.id, "a turn needs an id")
        if turn.session_id != session_id:
            raise errors.InvalidTurnError(
                turn.id, f"turn belongs to session {turn.session_id!r}, not {session_id!r}"
            )
        if turn.status is not TurnStatus.RUNNING:
            raise errors.InvalidTurnError(turn.id, f"a new turn must be running, not {turn.status}")
        return await sync_to_async(self._begin_turn)(session_id, turn)

    def _begin_turn(self, session_id: str, turn: Turn) -> Turn:
        with transaction.atomic():
            if not models.Session.objects.filter(pk=session_id).exists():
                raise errors.SessionNotFoundError(session_id)
            if models.Turn.objects.filter(pk=turn.id).exists():
                raise errors.InvalidTurnError(turn.id, "a turn with this id already exists")
            row = models.Turn.objects.create(
                id=turn.id,
                session_id=session_id,
                status=TurnStatus.RUNNING,
                started_at=turn.started_at,
            )
            models.Session.objects.filter(pk=session_id).update(updated_at=timezone.now())
        return turn_from_row(row)

    async def finalize_turn(self, turn_id: str, outcome: TurnOutcome) -> Turn:
        """Move a running turn to `outcome` atomically: the status check is part of the
        UPDATE itself, so of two concurrent finalisers exactly one wins. Raises
        InvalidOutcomeError, TurnNotFoundError or TurnStateConflictError (SPEC.md 2)."""
        validate_outcome(outcome)
        return await sync_to_async(self._finalize_turn)(turn_id, outcome)

    def _finalize_turn(self, turn_id: str, outcome: TurnOutcome) -> Turn:
        failure = outcome.failure
        now = timezone.now()
        with transaction.atomic():
            updated = models.Turn.objects.filter(pk=turn_id, status=TurnStatus.RUNNING).update(
                status=outcome.status.value,
                reason=outcome.reason.value,
                failure_code=failure.code if failure else "",
                failure_stage=failure.stage if failure else "",
                failure_message=failure.message if failure else "",
                finished_at=now,
            )
            row = models.Turn.objects.filter(pk=turn_id).first()
            if row is None:
                raise errors.TurnNotFoundError(turn_id)
            if not updated:
                raise errors.TurnStateConflictError(turn_id, row.status)
            models.Session.objects.filter(pk=row.session_id).update(updated_at=now)
            refresh_resume_status(row.session_id)
        return turn_from_row(row)

    async def get_turn(self, turn_id: str) -> Turn | None:
        """The turn, or None when missing."""
        return await sync_to_async(self._get_turn)(turn_id)

    def _get_turn(self, turn_id: str) -> Turn | None:
        row = models.Turn.objects.filter(pk=turn_id).first()
        return turn_from_row(row) if row else None

    async def list_turns(self, session_id: str) -> list[Turn]:
        """The session's turns by started_at, then id (uses index turn_session_order_idx)."""
        return await sync_to_async(self._list_turns)(session_id)

    def _list_turns(self, session_id: str) -> list[Turn]:
        rows = models.Turn.objects.filter(session_id=session_id).order_by("started_at", "id")
        return [turn_from_row(row) for row in rows]

    async def interrupt_running_turns(
        self, session_id: str, reason: TurnReason, *, only: Sequence[str] | None = None
    ) -> list[Turn]:
        """Mark every running turn of the session (or those of them whose ids are in
        `only`) interrupted with `reason`, in one transaction; return them."""
        validate_outcome(TurnOutcome(status=TurnStatus.INTERRUPTED, reason=reason))
        return await sync_to_async(self._interrupt_running_turns)(session_id, reason, only)

    def _interrupt_running_turns(
        self, session_id: str, reason: TurnReason, only: Sequence[str] | None = None
    ) -> list[Turn]:
        now = timezone.now()
        with transaction.atomic():
            candidates = models.Turn.objects.select_for_update().filter(
                session_id=session_id, status=TurnStatus.RUNNING
            )
            if only is not None:
                candidates = candidates.filter(pk__in=list(only))
            running = list(candidates.values_list("id", flat=True))
            models.Turn.objects.filter(pk__in=running, status=TurnStatus.RUNNING).update(
                status=TurnStatus.INTERRUPTED, reason=reason.value, finished_at=now
            )
            rows = list(models.Turn.objects.filter(pk__in=running).order_by("started_at", "id"))
            if running:
                refresh_resume_status(session_id)
        return [turn_from_row(row) for row in rows]

    # -- run lock ------------------------------------------------------------------------

    def run_lock(
        self, app_name: str, user_id: str, session_id: str, *, wait: float | None = None
    ) -> Any:
        """Async context manager serialising runs of (app, user, session) (SPEC.md 2).

        PostgreSQL: `pg_advisory_lock` semantics on a dedicated connection (polled with
        `pg_try_advisory_lock`, so a waiter can be cancelled), released on exit or when the
        holder's connection dies. Other databases: an in-process lock. `wait`: give up
        after that many seconds (None: wait as long as it takes); entering then raises
        TimeoutError and nothing is held.
        """
        if connection.vendor == "postgresql":
            return self._advisory_lock(advisory_lock_key(app_name, user_id, session_id), wait)
        return self._local_lock((app_name, user_id, session_id), wait)

    @asynccontextmanager
    async def _local_lock(
        self, key: tuple[str, str, str], wait: float | None
    ) -> AsyncIterator[None]:
        # One lock per run key for the whole process, whichever service instance, thread
        # or event loop runs the turn; polled so that a waiter stays cancellable.
        with _PROCESS_LOCKS_GUARD:
            lock = _PROCESS_LOCKS.setdefault(key, threading.Lock())
        deadline = _deadline(wait)
        while not lock.acquire(blocking=False):
            _check_deadline(deadline, key)
            await asyncio.sleep(_LOCAL_POLL_SECONDS)
        try:
            yield
        finally:
            lock.release()

    @asynccontextmanager
    async def _advisory_lock(self, key: int, wait: float | None) -> AsyncIterator[None]:
        import psycopg

        conninfo = _postgres_conninfo()
        deadline = _deadline(wait)
        async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
            while True:
                row = await (
                    await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))
                ).fetchone()
                if row and row[0]:
                    break
                _check_deadline(deadline, key)
                await asyncio.sleep(_ADVISORY_POLL_SECONDS)
            try:
                yield
            finally:
                # Closing the connection releases the lock too; unlock explicitly first so a
                # pooled or slow close cannot delay the next run.
                await asyncio.shield(conn.execute("SELECT pg_advisory_unlock(%s)", (key,)))


def _deadline(wait: float | None) -> float | None:
    return None if wait is None else asyncio.get_running_loop().time() + wait


def _check_deadline(deadline: float | None, key: object) -> None:
    if deadline is not None and asyncio.get_running_loop().time() >= deadline:
        raise TimeoutError(f"run lock {key!r} is held by a run")


def _postgres_conninfo() -> str:
    """libpq connection string for the default database (the test database in tests)."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    params.pop("server_side_binding", None)
    parts = []
    for name in ("host", "port", "user", "password", "dbname"):
        value = params.get(name)
        if value:
            parts.append(f"{name}={value}")
    return " ".join(parts)


def _load_turns(session_id: str) -> list[Turn]:
    rows = models.Turn.objects.filter(session_id=session_id).order_by("started_at", "id")
    return [turn_from_row(row) for row in rows]


def load_facts(session_id: str) -> tuple[list[Turn], list[Event]]:
    """The session's turns (timeline order) and active events (id order) as runtime values.

    Two queries; the input the projector and the tool-protocol inspector take (SPEC.md 4-5).
    """
    turns = _load_turns(session_id)
    rows = (
        models.Event.objects.active()
        .filter(session_id=session_id)
        .order_by("id")
        .values(*_EVENT_FIELDS)
    )
    return turns, [event_from_values(row) for row in rows]


def resume_status(
    turns: Sequence[Turn],
    events: Sequence[Event],
    outcomes: Mapping[tuple[int, str], RecordedOutcome] | None = None,
) -> tuple[int, bool]:
    """(open tool-protocol issue count, cannot_resume) of a session's facts.

    `turns` in timeline order, `events` the active events in id order (only ids for order,
    turn ids, roles, tool calls, tool responses and tool call ids matter), `outcomes` the
    recorded tool outcomes keyed by (assistant event id, call id). Recorded outcomes close
    their calls first, as the product projector does; then the issue count is the runtime
    inspector's (SPEC.md 5) and cannot_resume says whether the default projection fails
    (SPEC.md 4: the next run would be refused). No query.
    """
    events = apply_tool_outcomes(events, outcomes or {})
    issue_count = len(inspect_tool_protocol(events))
    try:
        project_default(ProjectionInput(turns=turns, events=events))
    except errors.ToolExecutionUnknownError:
        return issue_count, True
    return issue_count, False


def refresh_resume_status(session_id: str) -> tuple[int, bool]:
    """Recompute and store the session's resume status (`resume_status` of the stored
    turns, active events and recorded outcomes); returns it.

    Call it inside the transaction that changed those facts. Four queries.
    """
    turns = _load_turns(session_id)
    # Only what the tool protocol and the projection verdict depend on: no text, parts,
    # reasoning or usage, so large sessions are not decoded in full.
    rows = (
        models.Event.objects.active()
        .filter(session_id=session_id)
        .order_by("id")
        .values_list("id", "turn_id", "role", "tool_calls", "tool_response", "tool_call_id")
    )
    events = protocol_events(session_id, rows)
    issue_count, cannot_resume = resume_status(turns, events, load_outcomes(session_id))
    models.Session.objects.filter(pk=session_id).update(
        protocol_issue_count=issue_count, cannot_resume=cannot_resume
    )
    return issue_count, cannot_resume


ProtocolFacts = tuple[
    int, str, str, Sequence[Mapping[str, Any]] | None, Mapping[str, Any] | None, str
]
"""(event id, turn id, role, tool calls, tool response, tool call id) of one event."""

_EVENT_LIST = TypeAdapter(list[Event])


def protocol_events(session_id: str, facts: Iterable[ProtocolFacts]) -> list[Event]:
    """Runtime `Event`s holding only what the tool protocol and the projection verdict
    read (`resume_status`), validated in one pydantic call (nested models validated in
    pydantic-core). Raises pydantic.ValidationError for shapes SPEC.md 1 does not allow."""
    return _EVENT_LIST.validate_python(
        [
            {
                "id": event_id,
                "session_id": session_id,
                "turn_id": turn_id,
                "content": {
                    "role": role,
                    "tool_calls": tool_calls or (),
                    "tool_response": tool_response,
                    "tool_call_id": tool_call_id,
                },
            }
            for event_id, turn_id, role, tool_calls, tool_response, tool_call_id in facts
        ]
    )
