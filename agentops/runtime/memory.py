"""In-memory stores for tests, one-shot workers and examples (docs/runtime.md §2, 7, 8).

- `InMemorySessionService`: session service + turn store + run lock (asyncio lock per
  (app, user, session) key). Durable-turn semantics.
- `LegacyInMemorySessionService`: session service only, no turn store and no lock; the
  runner then rolls failed turns back (legacy semantics).
- `InMemoryTodoStore`: the todo store on top of either one's session state.

Everything lives in process memory and dies with it. What goes in and what comes out are
deep copies (sessions, events; turns hold no mutable values), so a caller that mutates a
returned value's dict never rewrites stored history. ``temp:`` state keys are kept live
only: they stay in the session returned by `create_session` and the event returned by
`append_event`, and are never stored (docs/runtime.md §2 "Temporary state").
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from agentops.runtime.errors import (
    EventNotFoundError,
    InvalidEventError,
    InvalidTurnError,
    SessionNotFoundError,
    TurnNotFoundError,
    TurnStateConflictError,
)
from agentops.runtime.ids import new_id
from agentops.runtime.model import Event, utc_now
from agentops.runtime.session import (
    Session,
    Turn,
    TurnOutcome,
    TurnReason,
    TurnStatus,
    persisted_state,
    validate_outcome,
)
from agentops.runtime.todos import (
    TODOS_STATE_KEY,
    TodoCallContext,
    TodoItem,
    coerce_todos,
    dump_todos,
)

__all__ = ["InMemorySessionService", "InMemoryTodoStore", "LegacyInMemorySessionService"]

T = TypeVar("T")


@dataclass
class _StoredEvent:
    event: Event
    deleted_at: datetime | None = None
    archived_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.deleted_at is None and self.archived_at is None


@dataclass
class _SessionRecord:
    session: Session
    events: list[_StoredEvent] = field(default_factory=list)
    by_id: dict[int, _StoredEvent] = field(default_factory=dict)


class LegacyInMemorySessionService:
    """In-memory `SessionService` without turn store or run lock (legacy rollback mode).

    `clock` returns the current UTC time (injectable for tests). Thread-safe: one mutex
    guards all state, and no method awaits while holding it.
    """

    def __init__(self, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._clock = clock
        self._mutex = threading.Lock()
        self._sessions: dict[str, _SessionRecord] = {}
        self._next_event_id = 1

    def _record(self, session_id: str) -> _SessionRecord:
        record = self._sessions.get(session_id)
        if record is None:
            raise SessionNotFoundError(session_id)
        return record

    async def create_session(
        self,
        app_name: str,
        user_id: str = "",
        *,
        session_id: str | None = None,
        state: dict[str, Any] | None = None,
    ) -> Session:
        """Create a session (id generated when None); duplicate id -> ValueError."""
        now = self._clock()
        live = Session(
            id=session_id or new_id("session"),
            app_name=app_name,
            user_id=user_id,
            state=copy.deepcopy(state or {}),
            created_at=now,
            updated_at=now,
        )
        stored = live.model_copy(update={"state": copy.deepcopy(persisted_state(live.state))})
        with self._mutex:
            if live.id in self._sessions:
                raise ValueError(f"session {live.id!r} already exists")
            self._sessions[live.id] = _SessionRecord(stored)
        return live

    async def get_session(self, session_id: str) -> Session | None:
        """A copy of the session, or None."""
        with self._mutex:
            record = self._sessions.get(session_id)
            return None if record is None else record.session.model_copy(deep=True)

    async def list_events(self, session_id: str) -> list[Event]:
        """Active events in id order; unknown session -> `SessionNotFoundError`."""
        with self._mutex:
            record = self._record(session_id)
            active = [stored.event for stored in record.events if stored.active]
        return [event.model_copy(deep=True) for event in active]

    async def append_event(self, event: Event) -> Event:
        """Store a complete event; assigns id and UTC timestamps; merges `state_delta`
        (without ``temp:`` keys, which stay only in the returned copy).

        Raises `SessionNotFoundError` and, for a partial event, `InvalidEventError`.
        """
        if event.partial:
            raise InvalidEventError(event.session_id, "partial events are never stored")
        now = self._clock()
        delta = copy.deepcopy(persisted_state(event.state_delta))
        with self._mutex:
            record = self._record(event.session_id)
            live = event.model_copy(
                update={"id": self._next_event_id, "created_at": now, "updated_at": now},
                deep=True,
            )
            self._next_event_id += 1
            stored = live.model_copy(update={"state_delta": delta}, deep=True)
            state = record.session.state
            if delta:
                state = {**state, **copy.deepcopy(delta)}
            record.session = record.session.model_copy(update={"state": state, "updated_at": now})
            entry = _StoredEvent(stored)
            record.events.append(entry)
            record.by_id[stored.id] = entry
            return live

    async def delete_event(self, session_id: str, event_id: int) -> None:
        """Soft-delete an active event; otherwise `EventNotFoundError`."""
        with self._mutex:
            record = self._record(session_id)
            entry = record.by_id.get(event_id)
            if entry is None or not entry.active:
                raise EventNotFoundError(session_id, event_id)
            entry.deleted_at = self._clock()

    async def archive_events(self, session_id: str, event_ids: Iterable[int]) -> None:
        """Mark events archived (excluded from `list_events`, kept for display)."""
        now = self._clock()
        with self._mutex:
            record = self._record(session_id)
            for event_id in event_ids:
                entry = record.by_id.get(event_id)
                if entry is None:
                    raise EventNotFoundError(session_id, event_id)
                entry.archived_at = now

    async def all_events(self, session_id: str) -> list[Event]:
        """Every stored event, deleted and archived included, in id order (for tests)."""
        with self._mutex:
            events = [stored.event for stored in self._record(session_id).events]
        return [event.model_copy(deep=True) for event in events]

    def _modify_state(self, session_id: str, change: Callable[[dict[str, Any]], T]) -> T:
        """Run `change(state_copy)` under the mutex and store the changed copy."""
        with self._mutex:
            record = self._record(session_id)
            state = copy.deepcopy(record.session.state)
            result = change(state)
            record.session = record.session.model_copy(
                update={"state": state, "updated_at": self._clock()}
            )
            return result


class InMemorySessionService(LegacyInMemorySessionService):
    """In-memory `SessionService` + `TurnStore` + `RunLock` (durable-turn semantics).

    The run lock is an `asyncio.Lock` per (app, user, session) key, valid within one
    event loop; it cannot outlive its process, which is all a crashed holder needs.
    """

    def __init__(self, *, clock: Callable[[], datetime] = utc_now) -> None:
        super().__init__(clock=clock)
        self._turns: dict[str, Turn] = {}
        self._locks: dict[tuple[str, str, str], asyncio.Lock] = {}

    async def begin_turn(self, session_id: str, turn: Turn) -> Turn:
        """Record a running turn (docs/runtime.md §2); see `TurnStore.begin_turn` for errors."""
        if not turn.id:
            raise InvalidTurnError(turn.id, "a turn needs an id")
        if turn.session_id != session_id:
            raise InvalidTurnError(turn.id, f"belongs to session {turn.session_id!r}")
        if turn.status is not TurnStatus.RUNNING:
            raise InvalidTurnError(turn.id, f"begins as {turn.status.value}, not running")
        with self._mutex:
            self._record(session_id)
            if turn.id in self._turns:
                raise InvalidTurnError(turn.id, "a turn with this id already exists")
            stored = turn.model_copy(
                update={"reason": TurnReason.NONE, "failure": None, "finished_at": None}
            )
            self._turns[turn.id] = stored
            return stored

    async def finalize_turn(self, turn_id: str, outcome: TurnOutcome) -> Turn:
        """Running -> terminal, atomically (docs/runtime.md §2); see `TurnStore.finalize_turn`."""
        validate_outcome(outcome)
        with self._mutex:
            turn = self._turns.get(turn_id)
            if turn is None:
                raise TurnNotFoundError(turn_id)
            if turn.status is not TurnStatus.RUNNING:
                raise TurnStateConflictError(turn_id, turn.status.value)
            stored = turn.model_copy(
                update={
                    "status": outcome.status,
                    "reason": outcome.reason,
                    "failure": outcome.failure,
                    "finished_at": self._clock(),
                }
            )
            self._turns[turn_id] = stored
            return stored

    async def get_turn(self, turn_id: str) -> Turn | None:
        """The turn, or None."""
        with self._mutex:
            return self._turns.get(turn_id)

    async def list_turns(self, session_id: str) -> list[Turn]:
        """The session's turns by (started_at, id)."""
        with self._mutex:
            turns = [turn for turn in self._turns.values() if turn.session_id == session_id]
        turns.sort(key=lambda turn: (turn.started_at, turn.id))
        return turns

    async def interrupt_running_turns(self, session_id: str, reason: TurnReason) -> list[Turn]:
        """Interrupt every running turn of the session with `reason`; return them."""
        validate_outcome(TurnOutcome(status=TurnStatus.INTERRUPTED, reason=reason))
        now = self._clock()
        changed: list[Turn] = []
        with self._mutex:
            for turn_id, turn in list(self._turns.items()):
                if turn.session_id == session_id and turn.status is TurnStatus.RUNNING:
                    stored = turn.model_copy(
                        update={
                            "status": TurnStatus.INTERRUPTED,
                            "reason": reason,
                            "finished_at": now,
                        }
                    )
                    self._turns[turn_id] = stored
                    changed.append(stored)
        return changed

    async def put_turn(self, turn: Turn) -> None:
        """Store `turn` as is, terminal or not (for tests and imports: no checks)."""
        with self._mutex:
            self._turns[turn.id] = turn

    def run_lock(
        self, app_name: str, user_id: str, session_id: str
    ) -> AbstractAsyncContextManager[None]:
        """An async context manager holding the lock of (app, user, session)."""
        key = (app_name, user_id, session_id)
        with self._mutex:
            lock = self._locks.setdefault(key, asyncio.Lock())
        return _hold(lock)


@asynccontextmanager
async def _hold(lock: asyncio.Lock) -> AsyncIterator[None]:
    async with lock:
        yield


class InMemoryTodoStore:
    """`TodoStore` on the session state of an in-memory session service (docs/runtime.md §7).

    Read-modify-write runs under the service's mutex without awaiting, so concurrent
    updates (even from threads) are serialised and never lost.
    """

    def __init__(self, service: LegacyInMemorySessionService) -> None:
        self.service = service

    async def read_todos(self, session_id: str) -> list[TodoItem]:
        """The session's list; `TodoShapeError` for a non-list value."""
        session = await self.service.get_session(session_id)
        if session is None:
            raise SessionNotFoundError(session_id)
        return coerce_todos(session.state.get(TODOS_STATE_KEY))

    async def modify_todos(
        self,
        session_id: str,
        change: Callable[[list[TodoItem]], tuple[list[TodoItem], T]],
        *,
        context: TodoCallContext | None = None,
    ) -> T:
        """Apply `change` atomically and store the new list under ``todos``.

        `context` (the calling tool, turn and event) is ignored: there is no audit here.
        """

        def apply(state: dict[str, Any]) -> T:
            items, result = change(coerce_todos(state.get(TODOS_STATE_KEY)))
            state[TODOS_STATE_KEY] = dump_todos(items)
            return result

        return self.service._modify_state(session_id, apply)
