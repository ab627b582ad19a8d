"""Live sessions: what watchers receive, and running turns in this process.

Messages sent to a session's group (`sessions_app.live.groups`), one consumer handler each:

- ``{"type": "live.event", "event": EventPayload}``: a complete, stored event.
- ``{"type": "live.partial", "partial": PartialPayload}``: a streaming fragment (never
  stored; replaced by the complete event that follows it).
- ``{"type": "live.turn", "turn": TurnPayload}``: a turn began or changed status.
- ``{"type": "turn.cancel", "session_id", "turn_id"}``: stop request; the process that
  runs the turn cancels it (`turn_id` "" = every turn of the session it runs).

Payload shapes (JSON; times ISO 8601 UTC):

- EventPayload: ``{id, turn_id, role, author, text, tool_calls: [{id, name, arguments}],
  tool_response, html, pair}``. `html` is the event rendered by the page's own partial
  (``sessions/turn_events.html#event``); for a tool result that answers a call stored
  earlier in its turn, `pair` is ``{event_id, html}``: the calling assistant event
  rendered again with the result folded in (the page replaces it in place).
- PartialPayload: ``{turn_id, role, author, delta, reasoning, tool_calls, after_id}``:
  `delta` is the text fragment; `after_id` is the id of the turn's last stored event
  before this fragment, so a fragment whose complete event was already received can be
  dropped (a watcher that caught up after a reconnect).
- TurnPayload: ``{id, session_id, status, reason, failure_code, failure_stage,
  failure_message, started_at, finished_at, head_html, article_html}``, rendered by the
  page's ``sessions/detail.html#turn`` and ``#turn_head`` partials.

`LiveSessionService` is the Django session service that broadcasts as it stores; every
turn run through it (page, `manage.py run_turn`, the live demo) reaches every watcher in
any process when the Redis channel layer is configured. `start_turn` runs a turn as an
asyncio task of this process; `request_stop` cancels it here or asks the owning process.
Broadcast failures are logged and never fail a turn: a watcher that missed something
catches up from the database when it resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from types import SimpleNamespace
from typing import Any, cast

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.module_loading import import_string

from agentops.runtime.errors import SessionNotFoundError
from agentops.runtime.model import Content, Event
from agentops.runtime.runner import AgentLike, Runner
from agentops.runtime.session import Turn, TurnOutcome, TurnReason
from agentops.runtime.todos import TodoStore
from sessions_app import models
from sessions_app.live.groups import broadcast, group_name
from sessions_app.pages import presenters
from sessions_app.projector import ProductProjector
from sessions_app.store import DjangoSessionService, row_fields_from_event

__all__ = [
    "LiveSessionService",
    "RunHandle",
    "abandon_stuck_turns",
    "event_payload",
    "event_payloads_after",
    "get_agent",
    "request_stop",
    "run_turn",
    "running_turn_ids",
    "start_turn",
    "stuck_turn_ids",
    "turn_payload",
    "turn_payloads",
]

logger = logging.getLogger(__name__)

EVENT = "live.event"
PARTIAL = "live.partial"
TURN = "live.turn"
CANCEL = "turn.cancel"

# How far back a tool result looks for its call (events of the same turn).
_PAIR_WINDOW = 200


# -- rendering (sync: ORM and templates) ----------------------------------------------


def _session_ns(session_id: str) -> SimpleNamespace:
    # The partials only need `session.id` (for URLs); no query.
    return SimpleNamespace(id=session_id)


def _render_event_view(view: presenters.EventView, session_id: str) -> str:
    # Live events belong to a running turn: a call without a result yet is in flight.
    context = {
        "item": view,
        "session": _session_ns(session_id),
        "turn": SimpleNamespace(status=models.Turn.Status.RUNNING),
    }
    return render_to_string("sessions/turn_events.html#event", context)


def _pair_for(row: models.Event) -> dict[str, Any] | None:
    """The assistant event whose call `row` (a tool event) answers, rendered with it."""
    if row.role != models.Event.Role.TOOL or not row.answered_call_id:
        return None
    earlier = list(
        models.Event.objects.active()
        .filter(session_id=row.session_id, turn_id=row.turn_id, id__lt=row.id)
        .order_by("-id")[:_PAIR_WINDOW]
    )
    earlier.reverse()
    for view in presenters.conversation([*earlier, row]):
        if any(call.result is not None and call.result.id == row.id for call in view.calls):
            return {"event_id": view.event.id, "html": _render_event_view(view, row.session_id)}
    return None


def event_payload(row: models.Event) -> dict[str, Any]:
    """The EventPayload (module docstring) of a stored event row; one query for a tool
    result (to find its call), none otherwise."""
    views = presenters.conversation([row])
    return {
        "id": row.id,
        "turn_id": row.turn_id,
        "role": row.role,
        "author": row.author,
        "text": row.text,
        "tool_calls": row.tool_calls or [],
        "tool_response": row.tool_response,
        "html": _render_event_view(views[0], row.session_id),
        "pair": _pair_for(row),
    }


def _row_from_event(event: Event) -> models.Event:
    """An unsaved row equal to the stored `event` (no query), for rendering."""
    return models.Event(
        id=event.id,
        session_id=event.session_id,
        created_at=event.created_at or timezone.now(),
        updated_at=event.updated_at or timezone.now(),
        **row_fields_from_event(event),
    )


def event_payloads_after(session_id: str, after: int, limit: int = 5000) -> list[dict[str, Any]]:
    """EventPayloads of the session's active events with id > `after`, in id order (at
    most `limit`): what a resuming watcher missed."""
    rows = list(
        models.Event.objects.active()
        .filter(session_id=session_id, id__gt=after)
        .order_by("id")[:limit]
    )
    return [event_payload(row) for row in rows]


def _turns_with_counts() -> Any:
    event_count = (
        models.Event.objects.active()
        .filter(session_id=OuterRef("session_id"), turn_id=OuterRef("id"))
        .order_by()
        .values("turn_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    return models.Turn.objects.annotate(
        event_count=Subquery(event_count, output_field=IntegerField())
    )


def _turn_payload_of(row: models.Turn) -> dict[str, Any]:
    context = {"turn": row, "session": _session_ns(row.session_id)}
    return {
        "id": row.id,
        "session_id": row.session_id,
        "status": row.status,
        "reason": row.reason,
        "failure_code": row.failure_code,
        "failure_stage": row.failure_stage,
        "failure_message": row.failure_message,
        "started_at": row.started_at.isoformat(),
        "finished_at": row.finished_at.isoformat() if row.finished_at else None,
        "head_html": render_to_string("sessions/detail.html#turn_head", context),
        "article_html": render_to_string("sessions/detail.html#turn", context),
    }


def turn_payload(turn_id: str) -> dict[str, Any] | None:
    """The TurnPayload (module docstring) of a stored turn, or None when missing."""
    row = _turns_with_counts().filter(pk=turn_id).first()
    return _turn_payload_of(row) if row else None


def turn_payloads(
    session_id: str, *, after: int, turn_ids: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """TurnPayloads a resuming watcher needs, in timeline order: the session's running
    turns, the turns of events with id > `after`, and `turn_ids` (those the watcher shows
    as running). One query plus one for the event turn ids."""
    wanted = set(turn_ids)
    wanted.update(
        models.Event.objects.active()
        .filter(session_id=session_id, id__gt=after)
        .exclude(turn_id="")
        .values_list("turn_id", flat=True)
        .distinct()
    )
    rows = _turns_with_counts().filter(session_id=session_id).order_by("started_at", "id")
    return [
        _turn_payload_of(row)
        for row in rows
        if row.id in wanted or row.status == models.Turn.Status.RUNNING
    ]


def last_event_id(session_id: str) -> int:
    """The largest active event id of the session (0 when none): where a page's live
    stream resumes from."""
    value = (
        models.Event.objects.active()
        .filter(session_id=session_id)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    return int(value or 0)


# -- the broadcasting session service --------------------------------------------------


async def _send(session_id: str, message: dict[str, Any]) -> None:
    try:
        await broadcast(session_id, message)
    except Exception:  # watchers catch up from the database; a run never fails for them
        logger.warning("live broadcast to %s failed", session_id, exc_info=True)


class LiveSessionService(DjangoSessionService):
    """`DjangoSessionService` that broadcasts every stored event and turn change.

    Complete events are broadcast right after they are stored (the user event too, which
    the runner does not yield); `broadcast_partial` sends a fragment the runner yielded.
    Broadcast errors are logged, never raised (SPEC.md 3: the store's errors are the
    run's, the live view's are not).
    """

    def __init__(self) -> None:
        super().__init__()
        # Last stored event id per turn (for partials' `after_id`).
        self._last_id: dict[str, int] = {}
        #: Called with the turn id when a turn begins (set by `start_turn`).
        self.on_begin: Callable[[Turn], None] | None = None

    async def append_event(self, event: Event) -> Event:
        """Store (see `DjangoSessionService.append_event`), then broadcast ``live.event``."""
        stored = await super().append_event(event)
        if stored.turn_id:
            self._last_id[stored.turn_id] = stored.id
        try:
            payload = await sync_to_async(event_payload)(_row_from_event(stored))
        except Exception:
            logger.warning("rendering event %s for watchers failed", stored.id, exc_info=True)
        else:
            await _send(stored.session_id, {"type": EVENT, "event": payload})
        return stored

    async def broadcast_partial(self, event: Event) -> None:
        """Send a partial event (as yielded by the runner) as ``live.partial``."""
        content = event.content
        payload = {
            "turn_id": event.turn_id,
            "role": content.role.value,
            "author": event.author,
            "delta": content.text,
            "reasoning": content.reasoning,
            "tool_calls": [call.model_dump(mode="json") for call in content.tool_calls],
            "after_id": self._last_id.get(event.turn_id, 0),
        }
        await _send(event.session_id, {"type": PARTIAL, "partial": payload})

    async def _send_turn(self, turn_id: str) -> None:
        try:
            payload = await sync_to_async(turn_payload)(turn_id)
        except Exception:
            logger.warning("rendering turn %s for watchers failed", turn_id, exc_info=True)
            return
        if payload is not None:
            await _send(payload["session_id"], {"type": TURN, "turn": payload})

    async def begin_turn(self, session_id: str, turn: Turn) -> Turn:
        """Record the turn (see `DjangoSessionService.begin_turn`), then broadcast it."""
        begun = await super().begin_turn(session_id, turn)
        if self.on_begin is not None:
            self.on_begin(begun)
        await self._send_turn(begun.id)
        return begun

    async def finalize_turn(self, turn_id: str, outcome: TurnOutcome) -> Turn:
        """Finalize (see `DjangoSessionService.finalize_turn`), then broadcast the status."""
        turn = await super().finalize_turn(turn_id, outcome)
        self._last_id.pop(turn_id, None)
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


# -- agents ------------------------------------------------------------------------------


def get_todo_store() -> TodoStore:
    """The durable todo store (SPEC.md 7): what the factory at the dotted path
    settings.AGENTOPS_TODO_STORE returns (the todo rows: `todos_app.store`)."""
    store: TodoStore = import_string(settings.AGENTOPS_TODO_STORE)()
    return store


def get_agent(path: str = "") -> AgentLike:
    """An agent from the factory at dotted `path` (default: settings.AGENTOPS_AGENT).

    The factory is called as ``factory(todo_store=<durable TodoStore>)``. Raises
    ImportError / AttributeError for a bad path, and whatever the factory raises.
    """
    dotted = path or settings.AGENTOPS_AGENT
    module_name, _, attr = dotted.rpartition(".")
    if not module_name:
        raise ImportError(f"AGENTOPS_AGENT {dotted!r} is not a dotted path")
    factory = getattr(import_module(module_name), attr)
    agent: AgentLike = factory(todo_store=get_todo_store())
    return agent


# -- running turns in this process ----------------------------------------------------


@dataclass
class RunHandle:
    """A turn running as an asyncio task of this process.

    `turn_id` is "" until the turn has begun (`begun` is set then, or when the run ended
    before beginning one). `task` is the run; its result is None, its exception the run's.
    """

    session_id: str
    task: asyncio.Task[None]
    begun: asyncio.Event = field(default_factory=asyncio.Event)
    turn_id: str = ""


#: Runs of this process, by session id (a session runs one turn at a time: run lock).
_RUNS: dict[str, list[RunHandle]] = {}


def active_turn_id(session_id: str) -> str:
    """The id of a turn of `session_id` that is running and not stuck (it began or stored
    an event within AGENTOPS_STUCK_AFTER_SECONDS), in any process; "" when there is none.

    A stuck turn does not count: the next run abandons it under the run lock (SPEC.md 3).
    """
    turn = (
        models.Turn.objects.filter(session_id=session_id, status=models.Turn.Status.RUNNING)  # type: ignore[misc]
        .with_last_event_at()
        .filter(last_event_at__gte=models.stuck_before())
        .order_by("-started_at")
        .values_list("id", flat=True)
        .first()
    )
    return turn or ""


def stuck_turn_ids(session_id: str, turn_id: str = "") -> list[str]:
    """Ids of the session's running turns (only `turn_id` when given) that are stuck: no
    event stored, nor begun, within AGENTOPS_STUCK_AFTER_SECONDS (as on /turns/). One query."""
    turns = models.Turn.objects.filter(session_id=session_id, status=models.Turn.Status.RUNNING)
    if turn_id:
        turns = turns.filter(pk=turn_id)
    stuck = turns.with_last_event_at().filter(last_event_at__lt=models.stuck_before())  # type: ignore[misc]
    return list(stuck.values_list("id", flat=True))


#: How long `abandon_stuck_turns` tries to take the session's run lock.
ABANDON_LOCK_WAIT_SECONDS = 1.0


async def abandon_stuck_turns(session_id: str, turn_id: str = "") -> list[str]:
    """Record the session's stuck running turns (`stuck_turn_ids`; only `turn_id` when
    given) interrupted/abandoned, as the next run of the session would (SPEC.md 3), and
    broadcast them; returns their ids.

    For a turn whose process died: nothing is left to cancel it. Done only under the
    session's run lock, taken within ABANDON_LOCK_WAIT_SECONDS: while a live run holds it
    (on PostgreSQL in any process, on SQLite in this one) nothing is changed and [] is
    returned. Raises `SessionNotFoundError` for an unknown session.
    """
    if running_turn_ids(session_id):
        return []
    stuck = await sync_to_async(stuck_turn_ids)(session_id, turn_id)
    if not stuck:
        return []
    service = LiveSessionService()
    session = await service.get_session(session_id)
    if session is None:
        raise SessionNotFoundError(session_id)
    lock = service.run_lock(
        session.app_name, session.user_id, session_id, wait=ABANDON_LOCK_WAIT_SECONDS
    )
    async with contextlib.AsyncExitStack() as held:
        try:
            await held.enter_async_context(lock)
        except TimeoutError:  # a live run holds the lock: not ours to abandon
            return []
        turns = await service.interrupt_running_turns(session_id, TurnReason.ABANDONED, only=stuck)
    return [turn.id for turn in turns]


def running_turn_ids(session_id: str) -> list[str]:
    """Ids of the turns of `session_id` that run in this process."""
    return [h.turn_id for h in _RUNS.get(session_id, []) if h.turn_id and not h.task.done()]


async def run_turn(
    session_id: str,
    message: Content | str,
    *,
    agent: AgentLike | None = None,
    service: LiveSessionService | None = None,
    on_event: Callable[[Event], Any] | None = None,
    listen_for_cancel: bool = True,
) -> None:
    """Run one turn through the Runner on the database, broadcasting as it goes.

    `agent`: default `get_agent()`. `on_event(event)` is called for each event the runner
    yields (partials with id 0, stored events). With `listen_for_cancel`, the run joins the
    session's group and cancels itself on a ``turn.cancel`` for its turn (or for the whole
    session), so a stop requested in another process reaches it. Raises what the runner
    raises (SPEC.md 3); a cancelled run raises `asyncio.CancelledError` after the turn was
    recorded interrupted/canceled.
    """
    service = service or LiveSessionService()
    # The product projector: recorded tool outcomes close their calls (sessions_app.projector).
    runner = Runner(
        agent or await sync_to_async(get_agent)(), service, projector=ProductProjector()
    )
    me = asyncio.current_task()
    turn_ids: list[str] = []
    previous = service.on_begin

    def begun(turn: Turn) -> None:
        turn_ids.append(turn.id)
        if previous is not None:
            previous(turn)

    service.on_begin = begun
    listener = None
    if listen_for_cancel and me is not None:
        listener = await _CancelListener.start(session_id, me, turn_ids)
    try:
        run = cast(AsyncGenerator[Event, None], runner.run(session_id, message))
        async with contextlib.aclosing(run) as events:
            async for event in events:
                try:
                    if event.partial:
                        await service.broadcast_partial(event)
                    if on_event is not None:
                        on_event(event)
                except asyncio.CancelledError as stop:
                    # Cancelled between two events: hand the cancellation to the runner so
                    # the turn is recorded interrupted/canceled, not consumer_stopped.
                    with contextlib.suppress(BaseException):
                        await events.athrow(stop)
                    raise
    finally:
        service.on_begin = previous
        if listener is not None:
            await listener.stop()


class _CancelListener:
    """Member of the session's group for one run: cancels `task` on ``turn.cancel``."""

    def __init__(self, layer: Any, group: str, channel: str, task: asyncio.Task[Any]) -> None:
        self.layer = layer
        self.group = group
        self.channel = channel
        self.task = task
        self.reader: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls, session_id: str, task: asyncio.Task[Any], turn_ids: Sequence[str]
    ) -> _CancelListener | None:
        layer = get_channel_layer()
        if layer is None:
            return None
        try:
            channel = await layer.new_channel("turn-cancel.")
            await layer.group_add(group_name(session_id), channel)
        except Exception:
            logger.warning("cannot listen for stop requests of %s", session_id, exc_info=True)
            return None
        listener = cls(layer, group_name(session_id), channel, task)
        listener.reader = asyncio.create_task(listener._read(turn_ids))
        return listener

    async def _read(self, turn_ids: Sequence[str]) -> None:
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                # A dropped Redis connection must not deafen the run to stop requests:
                # the next receive takes a fresh connection from the pool.
                logger.warning("stop-request listener: receive failed, retrying", exc_info=True)
                await asyncio.sleep(0.2)
                continue
            if message.get("type") != CANCEL:
                continue  # the run's own events, drained
            wanted = message.get("turn_id") or ""
            if not wanted or wanted in turn_ids:
                self.task.cancel()

    async def stop(self) -> None:
        if self.reader is not None:
            self.reader.cancel()
            with contextlib.suppress(BaseException):
                await self.reader
        with contextlib.suppress(Exception):
            await self.layer.group_discard(self.group, self.channel)


async def start_turn(
    session_id: str, message: Content | str, *, agent: AgentLike | None = None
) -> RunHandle:
    """Start one turn of `session_id` as a task of this process and wait until the turn
    has begun (or the run ended first, e.g. an unknown session: then `task` holds the
    error). Returns its `RunHandle`; the task is kept in the registry until it ends."""
    service = LiveSessionService()
    holder: list[RunHandle] = []

    def begun(turn: Turn) -> None:
        holder[0].turn_id = turn.id
        holder[0].begun.set()

    service.on_begin = begun
    # A fresh context: the run outlives the request that started it, and must not use the
    # request's thread-sensitive executor (asgiref), which quits when the response is sent.
    task = asyncio.create_task(
        run_turn(session_id, message, agent=agent, service=service),
        name=f"agentops-turn-{session_id}",
        context=contextvars.Context(),
    )
    handle = RunHandle(session_id=session_id, task=task)
    holder.append(handle)
    _RUNS.setdefault(session_id, []).append(handle)

    def done(finished: asyncio.Task[None]) -> None:
        handle.begun.set()
        runs = _RUNS.get(session_id, [])
        if handle in runs:
            runs.remove(handle)
        if not runs:
            _RUNS.pop(session_id, None)
        if not finished.cancelled() and finished.exception() is not None:
            logger.info(
                "turn %s of %s ended with %s",
                handle.turn_id or "(none)",
                session_id,
                type(finished.exception()).__name__,
                exc_info=finished.exception(),
            )

    task.add_done_callback(done)
    waiter = asyncio.create_task(handle.begun.wait())
    await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    return handle


async def request_stop(session_id: str, turn_id: str = "") -> int:
    """Stop the running turn `turn_id` of `session_id` ("" = all of its running turns).

    Turns running in this process are cancelled here; a ``turn.cancel`` message is also
    sent to the session's group so the process that runs it elsewhere cancels it. Each
    cancelled turn ends interrupted/canceled (SPEC.md 3). Returns how many local runs
    were cancelled.
    """
    cancelled = 0
    for handle in list(_RUNS.get(session_id, [])):
        if not turn_id or handle.turn_id == turn_id:
            if handle.task.cancel():
                cancelled += 1
    await _send(session_id, {"type": CANCEL, "session_id": session_id, "turn_id": turn_id})
    return cancelled
