"""The Django session service: the runtime's store protocols on the ORM (docs/runtime.md §2).

`DjangoSessionService` implements `SessionService`, `TurnStore` and `RunLock` from
`agentops.runtime.session` on the `Session`, `Turn` and `Event` models, translating
through `sessions_app.store.rows`. Every method is async (usable from a Channels
consumer or the Runner); the ORM work runs in a worker thread through `sync_to_async`,
one transaction per operation. The session's todo list is kept by whichever app answers
`sessions_app.signals` (todos_app), inside the same transactions.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Value, functions
from django.utils import timezone

from agentops.runtime import errors
from agentops.runtime.model import Event
from agentops.runtime.session import (
    Session,
    Turn,
    TurnOutcome,
    TurnReason,
    TurnStatus,
    persisted_state,
    validate_outcome,
)
from agentops.runtime.todos import TODOS_STATE_KEY, coerce_todos, dump_todos
from sessions_app import models
from sessions_app.ingest.redaction import redact_text, redact_value
from sessions_app.signals import first_answer, session_todos_requested, session_todos_set
from sessions_app.store.append_sql import (
    OTHER,
    append_in_transaction,
    append_statements,
    direct_append,
    fields_to_store,
    run_insert,
    sql_kind,
)
from sessions_app.store.cancel_after import cancel_after
from sessions_app.store.owner import owner_fields
from sessions_app.store.page_facts import (
    legacy_after_append,
    legacy_after_begin,
    note_appended,
)
from sessions_app.store.prepared import append_cursor
from sessions_app.store.resume import load_events, load_turns, refresh_resume_status
from sessions_app.store.resume_delta import status_after_append, status_after_finish
from sessions_app.store.rows import session_from_row, turn_from_row
from sessions_app.store.run_lock import run_lock

__all__ = ["DjangoSessionService"]


class _TakeOrmPath(Exception):
    """The SQL append rolled back: the ORM path stores the event."""


class DjangoSessionService:
    """`SessionService` + `TurnStore` + `RunLock` on the Django models (docs/runtime.md §2).

    All methods are coroutines; errors are the runtime's named exceptions
    (`SessionNotFoundError`, `TurnNotFoundError`, `TurnStateConflictError`, ...).
    """

    #: `Session.source_format` of the sessions it creates (the HTTP API's is "api").
    source_format = "runtime"
    #: When a finalised turn ended (None: now; never before its start); the API may say.
    finish_time: datetime | None = None

    async def create_session(
        self,
        app_name: str,
        user_id: str = "",
        *,
        session_id: str | None = None,
        state: dict[str, Any] | None = None,
    ) -> Session:
        """Create a session (id: a new UUID4 hex when None); duplicate id -> ValueError.

        `state["todos"]` becomes the session's todo rows (`signals.session_todos_set`, same
        transaction; a non-list raises `TodoShapeError` and nothing is stored); ``temp:``
        keys are not stored (docs/runtime.md §2), only returned in this call's session.
        """
        return await sync_to_async(self._create_session)(app_name, user_id, session_id, state)

    def _create_session(
        self, app_name: str, user_id: str, session_id: str | None, state: dict[str, Any] | None
    ) -> Session:
        now = timezone.now()
        live = dict(state or {})
        kept = persisted_state(live)
        todos = coerce_todos(kept.pop(TODOS_STATE_KEY)) if TODOS_STATE_KEY in kept else None
        stored = dict(redact_value(kept) if settings.AGENTOPS_REDACT_RUNTIME_EVENTS else kept)
        try:
            with transaction.atomic():
                row = models.Session.objects.create(
                    id=session_id or uuid.uuid4().hex,
                    app_name=app_name,
                    user_id=user_id,
                    state=stored,
                    source_format=self.source_format,
                    created_at=now,
                    updated_at=now,
                )
                if todos is not None:
                    # Todos: the rows are the one source of truth (docs/runtime.md §7).
                    session_todos_set.send(
                        sender=models.Session,
                        session_id=row.id,
                        items=todos,
                        turn_id="",
                        event_id=None,
                        action="create_session",
                    )
        except IntegrityError:
            raise ValueError(f"session {session_id!r} already exists") from None
        live.update(stored)  # the values as stored (redacted); temp: keys only in this copy
        if todos is not None:
            live[TODOS_STATE_KEY] = dump_todos(todos)
        return session_from_row(row).model_copy(update={"state": live})

    async def get_session(self, session_id: str) -> Session | None:
        """The session, or None when it does not exist.

        `state["todos"]` is read from the todo rows (`signals.session_todos_requested`;
        present once the session has a todo list, docs/runtime.md §7), never from the stored state.
        """
        return await sync_to_async(self._get_session)(session_id)

    def _get_session(self, session_id: str) -> Session | None:
        row = models.Session.objects.filter(pk=session_id).first()
        if row is None:
            return None
        # Todos: the app keeping the todo rows is the one source of truth (docs/runtime.md §7).
        state = {k: v for k, v in row.state.items() if k != TODOS_STATE_KEY}
        todos = first_answer(session_todos_requested.send(sender=models.Session, session_id=row.id))
        if todos is not None:
            state[TODOS_STATE_KEY] = todos
        return session_from_row(row).model_copy(update={"state": state})

    async def list_events(self, session_id: str) -> list[Event]:
        """Active events (not deleted, not archived) in id order; unknown session raises."""
        return await sync_to_async(self._list_events)(session_id)

    def _list_events(self, session_id: str) -> list[Event]:
        if not models.Session.objects.filter(pk=session_id).exists():
            raise errors.SessionNotFoundError(session_id)
        return load_events(session_id)

    async def append_event(self, event: Event) -> Event:
        """Store a complete event and merge its state delta into the session state, in one
        transaction (the session row is locked first on PostgreSQL). Returns the stored copy
        (id > 0, UTC timestamps). Partial -> InvalidEventError; unknown session ->
        SessionNotFoundError.

        A delta setting `todos` replaces the todo rows instead (coerced per docs/runtime.md §7,
        `signals.session_todos_set`: versioned and audited as an agent change, same
        transaction); a non-list value raises `TodoShapeError` and nothing is stored."""
        if event.partial:
            raise errors.InvalidEventError(event.session_id, "partial events are never stored")
        fields, stored = fields_to_store(event)
        # Most events, on an SQLite file: stored from this thread (`append_sql`).
        done = direct_append(event.session_id, stored, fields, timezone.now)
        if done is not None:
            row_id, at = done
            return stored.model_copy(update={"id": row_id, "created_at": at, "updated_at": at})
        return await sync_to_async(self._append_stored)(stored, fields)

    def _append_event(self, event: Event) -> Event:
        return self._append_stored(*reversed(fields_to_store(event)))

    def _append_stored(self, event: Event, fields: dict[str, Any]) -> Event:
        kind = sql_kind(event, fields)
        if kind != OTHER:  # the append's statements in SQL built once (`append_sql`)
            try:
                with transaction.atomic(), append_cursor() as cursor:
                    done = append_in_transaction(
                        cursor, append_statements(), event.session_id, event, fields,
                        timezone.now, kind,
                    )  # fmt: skip
                    if done is None:
                        raise _TakeOrmPath  # rolls the SQL back
                row_id, at = done
                return event.model_copy(update={"id": row_id, "created_at": at, "updated_at": at})
            except _TakeOrmPath:
                pass
        delta = dict(fields["state_delta"])
        with transaction.atomic():
            # What the SQL path leaves (todos, compactions, calls and results outside a
            # running turn or with recorded outcomes). Under the write lock (BEGIN
            # IMMEDIATE; FOR UPDATE on PostgreSQL): timestamps grow with ids.
            now = timezone.now()
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
                session_todos_set.send(
                    sender=models.Session,
                    session_id=event.session_id,
                    items=coerce_todos(delta.pop(TODOS_STATE_KEY)),
                    turn_id=event.turn_id,
                    event_id=row_id,
                )
            update: dict[str, Any] = {
                "updated_at": now,
                **legacy_after_append(event.session_id, [event.turn_id]),
            }
            if delta:
                update["state"] = {**state, **delta}
            models.Session.objects.filter(pk=event.session_id).update(**update)
            self._note_append(event, row_id)
        return event.model_copy(update={"id": row_id, "created_at": now, "updated_at": now})

    #: Sessions a batch recomputes in full at its end; None outside a batch.
    _deferred: set[str] | None = None

    @contextmanager
    def one_refresh_per_batch(self) -> Iterator[None]:
        """For writers of many events in one transaction (the API's batches): an append
        needing the full resume recomputation marks its session (later ones skip the
        local rules); it runs once on exit, in the caller's transaction (not N times),
        the page facts with it."""
        self._deferred = set()
        try:
            yield
            for session_id in sorted(self._deferred):
                refresh_resume_status(session_id)
        finally:
            self._deferred = None

    def _note_append(self, event: Event, row_id: int) -> None:
        """Keep the resume status (`resume_delta`) and the page facts (`page_facts`)
        current after an append; the session row is already locked by this transaction."""
        deferred = self._deferred
        if deferred is not None and event.session_id in deferred:
            return  # recomputed in full at the end of the batch
        note_appended(event.session_id, event, row_id)
        change = status_after_append(event.session_id, event, row_id)
        if change is None:
            if deferred is not None:
                deferred.add(event.session_id)
                return
            refresh_resume_status(event.session_id, page_facts=False)
        elif change:
            models.Session.objects.filter(pk=event.session_id).update(**change)

    @staticmethod
    def _insert_event(session_id: str, now: datetime, fields: dict[str, Any]) -> int:
        with connection.cursor() as cursor:
            return run_insert(cursor, append_statements(), session_id, now, fields)

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
            refresh_resume_status(session_id)  # rare (legacy rollback): recompute in full

    # -- turns ---------------------------------------------------------------------------

    async def begin_turn(self, session_id: str, turn: Turn) -> Turn:
        """Record a new running turn owned by this process (host, pid, lease: `owner`)
        (docs/runtime.md §2); invalid or duplicate -> InvalidTurnError.

        A cancellation that arrives while the turn is being recorded is held back until it
        is recorded and then delivered again, so it reaches the runner once the turn has
        begun and the turn ends interrupted/canceled: the write runs in a worker thread
        that a cancellation does not stop, and a turn recorded by a caller that was told
        "cancelled" would be left running until a later run abandoned it."""
        if not turn.id:
            raise errors.InvalidTurnError(turn.id, "a turn needs an id")
        if turn.session_id != session_id:
            raise errors.InvalidTurnError(
                turn.id, f"turn belongs to session {turn.session_id!r}, not {session_id!r}"
            )
        if turn.status is not TurnStatus.RUNNING:
            raise errors.InvalidTurnError(turn.id, f"a new turn must be running, not {turn.status}")
        return await cancel_after(self._record_begin(session_id, turn))

    async def _record_begin(self, session_id: str, turn: Turn) -> Turn:
        """Record the turn (subclasses add what else belongs to beginning it)."""
        return await sync_to_async(self._begin_turn)(session_id, turn)

    def _begin_turn(self, session_id: str, turn: Turn) -> Turn:
        with transaction.atomic():
            if not models.Session.objects.filter(pk=session_id).exists():
                raise errors.SessionNotFoundError(session_id)
            if models.Turn.objects.filter(pk=turn.id).exists():
                raise errors.InvalidTurnError(turn.id, "a turn with this id already exists")
            now = timezone.now()
            row = models.Turn.objects.create(
                id=turn.id,
                session_id=session_id,
                status=TurnStatus.RUNNING,
                started_at=turn.started_at,
                **owner_fields(now),
            )
            models.Session.objects.filter(pk=session_id).update(
                updated_at=now, **legacy_after_begin(session_id)
            )
        return turn_from_row(row)

    async def finalize_turn(self, turn_id: str, outcome: TurnOutcome) -> Turn:
        """Move a running turn to `outcome` atomically: the status check is part of the
        UPDATE itself, so of two concurrent finalisers exactly one wins. Raises
        InvalidOutcomeError, TurnNotFoundError or TurnStateConflictError (docs/runtime.md §2)."""
        validate_outcome(outcome)
        return await sync_to_async(self._finalize_turn)(turn_id, outcome)

    def _finalize_turn(self, turn_id: str, outcome: TurnOutcome) -> Turn:
        failure = outcome.failure
        redact = settings.AGENTOPS_REDACT_RUNTIME_EVENTS
        now = timezone.now()
        at: Any = now
        if self.finish_time:
            at = functions.Greatest(F("started_at"), Value(self.finish_time))
        with transaction.atomic():
            updated = models.Turn.objects.filter(pk=turn_id, status=TurnStatus.RUNNING).update(
                status=outcome.status.value,
                reason=outcome.reason.value,
                failure_code=failure.code if failure else "",
                failure_stage=failure.stage if failure else "",
                failure_message=(
                    (redact_text(failure.message) if redact else failure.message) if failure else ""
                ),
                finished_at=at,
            )
            row = models.Turn.objects.filter(pk=turn_id).first()
            if row is None:
                raise errors.TurnNotFoundError(turn_id)
            if not updated:
                raise errors.TurnStateConflictError(turn_id, row.status)
            # The session row is locked first, so the events read next are final.
            models.Session.objects.filter(pk=row.session_id).update(updated_at=now)
            self._note_finish(row.session_id, [turn_id], outcome.status)
        return turn_from_row(row)

    @staticmethod
    def _note_finish(session_id: str, turn_ids: Sequence[str], status: TurnStatus) -> None:
        """Keep the resume status current after `turn_ids` became `status` (`resume_delta`)."""
        changes: dict[str, Any] = {}
        for turn_id in turn_ids:
            change = status_after_finish(session_id, turn_id, status)
            if change is None:
                refresh_resume_status(session_id)
                return
            changes.update(change)
        if changes:
            models.Session.objects.filter(pk=session_id).update(**changes)

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
        return load_turns(session_id)

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
                models.Session.objects.filter(pk=session_id).update(updated_at=now)
                if reason is TurnReason.ABANDONED:
                    # Crash recovery (rare): recompute in full, which also heals a status
                    # left stale by rows written outside this store or before it kept
                    # the status incrementally.
                    refresh_resume_status(session_id)
                else:
                    self._note_finish(session_id, running, TurnStatus.INTERRUPTED)
        return [turn_from_row(row) for row in rows]

    async def record_stop_request(self, session_id: str, turn_id: str, by: str) -> list[str]:
        """Note on the session's running turns (only `turn_id` when given) who asked to stop
        them and from where (`Turn.stopped_by`, e.g. "admin (page)", cut to 255 chars);
        return their ids ([]: nothing was running)."""
        return await sync_to_async(self._record_stop_request)(session_id, turn_id, by)

    def _record_stop_request(self, session_id: str, turn_id: str, by: str) -> list[str]:
        with transaction.atomic():
            running = models.Turn.objects.filter(session_id=session_id, status=TurnStatus.RUNNING)
            if turn_id:
                running = running.filter(pk=turn_id)
            ids = list(running.select_for_update().values_list("id", flat=True))
            models.Turn.objects.filter(pk__in=ids).update(stopped_by=by[:255])
        return ids

    # -- run lock ------------------------------------------------------------------------

    def run_lock(
        self, app_name: str, user_id: str, session_id: str, *, wait: float | None = None
    ) -> AbstractAsyncContextManager[None]:
        """Async context manager serialising runs of (app, user, session) (docs/runtime.md §2):
        `sessions_app.store.run_lock.run_lock`. `wait`: give up after that many seconds
        (None: wait as long as it takes); entering then raises TimeoutError."""
        return run_lock(app_name, user_id, session_id, wait=wait)
