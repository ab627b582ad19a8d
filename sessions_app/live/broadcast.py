"""The session store that broadcasts as it stores: `LiveSessionService`.

Every turn run through it (page, `manage.py run_turn`, the live demo) reaches every watcher
in any process when the Redis channel layer is configured. It sends values only
(`sessions_app.live.payloads`); the HTML is made where the watchers are
(`sessions_app.live.consumer`). It posts them to the session's outbox
(`sessions_app.live.outbox`). While a turn runs through `runs.run_turn` (`deferring`), it
goes on at once: the runner never waits for the channel layer or its watchers, and the run
flushes the outbox when it ends. Otherwise (writes from outside a run: the API, OTLP, the
tail, recovery) each write waits until its message reached the layer, as their event loop
may end right after. Broadcast failures are logged and never fail a turn: a watcher
that missed something catches up from the database when it resumes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from agentops.runtime.model import Event
from agentops.runtime.session import Turn, TurnOutcome, TurnReason
from sessions_app.ingest.redaction import redact_text, redact_value
from sessions_app.live import outbox
from sessions_app.live.groups import broadcast
from sessions_app.live.payloads import (
    EVENT,
    PARTIAL,
    TURN,
    TurnCalls,
    earlier_pair,
    event_values,
    partial_payload,
    turn_payload,
)
from sessions_app.store import DjangoSessionService

logger = logging.getLogger(__name__)


async def send(session_id: str, message: dict[str, Any]) -> None:
    """`groups.broadcast`, logging instead of raising: watchers catch up from the
    database, and a run never fails for them."""
    try:
        await broadcast(session_id, message)
    except Exception:
        logger.warning("broadcast to watchers of %s failed", session_id, exc_info=True)


async def post_all(messages: Iterable[tuple[str, dict[str, Any]]]) -> None:
    """Post each (session id, message) to that session's outbox, in order, then wait
    until all of them reached the channel layer: for a write from outside a run that
    has many messages for its watchers (the OTLP receiver's batches), one wait per
    session instead of one per message. The outboxes hand what queued up to the layer in
    ``live.batch``es."""
    sessions: dict[str, None] = {}
    for session_id, message in messages:
        outbox.post(session_id, message)
        sessions[session_id] = None
    for session_id in sessions:
        await outbox.flush(session_id)


class LiveSessionService(DjangoSessionService):
    """`DjangoSessionService` that sends ``live.*`` messages to the session's group.

    `append_event` broadcasts the stored event (and `begin_turn` the user event too, which
    the runner does not yield); `broadcast_partial` sends a fragment the runner yielded.
    The store keeps, per running turn, what it stored (`payloads.TurnCalls`), so a tool
    result's message carries its call without a query. Broadcast errors are logged, never
    raised (docs/runtime.md §3: the store's errors are the run's, the live view's are not).
    """

    def __init__(self) -> None:
        super().__init__()
        # Last stored event id per turn (for partials' `after_id`).
        self._last_id: dict[str, int] = {}
        # What each running turn stored (its count, its calls still waiting).
        self._turns: dict[str, TurnCalls] = {}
        #: Called with the turn when a turn begins (set by `runs.start_turn`).
        self.on_begin: Callable[[Turn], None] | None = None
        #: While true, messages are posted without waiting for the layer (`runs.run_turn`
        #: sets it for the run and flushes at its end).
        self.deferring = False

    async def _post(self, session_id: str, message: dict[str, Any]) -> None:
        """Post `message` to the session's outbox; unless `deferring`, wait until it
        reached the channel layer."""
        outbox.post(session_id, message)
        if not self.deferring:
            await outbox.flush(session_id)

    async def append_event(self, event: Event) -> Event:
        """Store (see `DjangoSessionService.append_event`), then post ``live.event``."""
        stored = await super().append_event(event)
        await self.announce_event(stored)
        return stored

    async def announce_event(self, stored: Event) -> None:
        """Broadcast ``live.event`` for an event this store just stored (for writes that
        stored it in a transaction of their own, e.g. the HTTP API's batches)."""
        values = event_values(stored)
        calls = self._turns.get(stored.turn_id) if stored.turn_id else None
        if stored.turn_id:
            self._last_id[stored.turn_id] = stored.id
        if calls is not None:
            pair, count = calls.add(values), len(calls.ids)
        else:  # a turn this store did not begin: what it stored before is in the database
            pair, count = await self._pair_from_database(values), None
        payload = {**values, "pair": pair, "event_count": count}
        await self._post(stored.session_id, {"type": EVENT, "event": payload})

    @staticmethod
    async def _pair_from_database(values: dict[str, Any]) -> dict[str, Any] | None:
        if values["role"] != "tool":
            return None
        try:
            return await sync_to_async(earlier_pair)(values)
        except Exception:
            logger.warning("reading the call of event %s failed", values["id"], exc_info=True)
            return None

    async def delete_event(self, session_id: str, event_id: int) -> None:
        """Delete (see `DjangoSessionService.delete_event`); the turn's count follows."""
        await super().delete_event(session_id, event_id)
        for calls in self._turns.values():
            calls.ids.discard(event_id)

    async def broadcast_partial(self, event: Event) -> None:
        """Post a partial event (as yielded by the runner) as ``live.partial``; its text,
        reasoning and tool calls are redacted like stored events when
        AGENTOPS_REDACT_RUNTIME_EVENTS is on (a fragment shows what the store will keep)."""
        payload = partial_payload(event, self._last_id.get(event.turn_id, 0))
        if settings.AGENTOPS_REDACT_RUNTIME_EVENTS:
            payload = {
                **payload,
                "delta": redact_text(payload["delta"]),
                "reasoning": redact_text(payload["reasoning"]),
                "tool_calls": redact_value(payload["tool_calls"]),
            }
        await self._post(event.session_id, {"type": PARTIAL, "partial": payload})

    async def announce_turn(self, turn_id: str) -> None:
        """Broadcast ``live.turn`` with the stored turn `turn_id` (after a write elsewhere)."""
        await self._send_turn(turn_id)

    async def _send_turn(self, turn_id: str) -> None:
        try:
            payload = await sync_to_async(turn_payload)(turn_id)
        except Exception:
            logger.warning("reading turn %s for watchers failed", turn_id, exc_info=True)
            return
        if payload is not None:
            await self._post(payload["session_id"], {"type": TURN, "turn": payload})

    async def _record_begin(self, session_id: str, turn: Turn) -> Turn:
        """Record the turn, then broadcast it: both are part of beginning it, so a stop
        that arrives meanwhile ends it canceled (`DjangoSessionService.begin_turn`)."""
        begun = await super()._record_begin(session_id, turn)
        self._turns[begun.id] = TurnCalls()
        if self.on_begin is not None:
            self.on_begin(begun)
        await self._send_turn(begun.id)
        return begun

    async def finalize_turn(self, turn_id: str, outcome: TurnOutcome) -> Turn:
        """Finalize (see `DjangoSessionService.finalize_turn`), then broadcast the status."""
        turn = await super().finalize_turn(turn_id, outcome)
        self._last_id.pop(turn_id, None)
        self._turns.pop(turn_id, None)
        await self._send_turn(turn_id)
        return turn

    async def interrupt_running_turns(
        self, session_id: str, reason: TurnReason, *, only: Sequence[str] | None = None
    ) -> list[Turn]:
        """Interrupt (see `DjangoSessionService.interrupt_running_turns`); broadcast each."""
        turns = await super().interrupt_running_turns(session_id, reason, only=only)
        for turn in turns:
            await self._send_turn(turn.id)
        return turns
