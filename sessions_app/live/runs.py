"""Running turns in this process: the run registry, `run_turn` / `start_turn`, and the
stop protocol.

`start_turn` runs a turn as an asyncio task of this process (kept in a registry by
session id until it ends); `request_stop` cancels it here and sends ``turn.cancel`` to the
session's group, so the process that runs it elsewhere cancels it (`_CancelListener`).
Every turn runs through `LiveSessionService`, so watchers in any process see it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.utils.module_loading import import_string

from agentops.runtime.model import Content, Event
from agentops.runtime.runner import AgentLike, Runner
from agentops.runtime.session import Turn
from agentops.runtime.todos import TodoStore
from sessions_app.live import outbox
from sessions_app.live.broadcast import LiveSessionService, send
from sessions_app.live.groups import group_name
from sessions_app.live.payloads import CANCEL, unbatched
from sessions_app.projector import ProductProjector
from sessions_app.store.owner import lease_seconds, renew_leases

logger = logging.getLogger(__name__)

# -- agents ------------------------------------------------------------------------------


def get_todo_store() -> TodoStore:
    """The durable todo store (docs/runtime.md §7): what the factory at the dotted path
    settings.AGENTOPS_TODO_STORE returns (the todo rows: `todos_app.store`). A setting,
    not an import, because todos_app builds on sessions_app and never the reverse."""
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


#: Source formats of the sessions the dashboard created: only these run its agent.
DASHBOARD_FORMATS = frozenset({"runtime", "demo"})


def run_by_dashboard(session: Any) -> bool:
    """True for a session the dashboard created (source format "runtime", or the demo
    data and the live demo, "demo"): the configured agent runs its turns, and continues
    one after a person decides on a call awaiting them. Imported transcripts: False."""
    return session.source_format in DASHBOARD_FORMATS


def run_refusal(session: Any) -> str:
    """Why the dashboard's agent may not run a turn of `session` (a `Session` row), or ""
    when it may: only sessions the dashboard created (source format "runtime", or the
    demo data and the live demo, "demo") run the configured agent, never an imported
    transcript of another tool nor a session an agent elsewhere records ("api",
    "otlp"); and not while the next run would be refused because tool
    calls have no result (docs/concepts.md "Cannot resume")."""
    if session.source_format in {"api", "otlp"}:
        return (
            "This session is recorded by an agent that runs elsewhere "
            f"({session.get_source_format_display()}): the dashboard's agent only runs "
            "sessions it created."
        )
    if not run_by_dashboard(session):
        return (
            f"This session was imported ({session.get_source_format_display()}): the "
            "dashboard's agent only runs sessions it created."
        )
    if session.cannot_resume:
        return (
            "The next turn would be refused: tool calls have no result. Approve or "
            "reject a call awaiting a person on the timeline (the turn then continues), "
            "or record what happened to the others on the tool-protocol page first."
        )
    return ""


def agent_may_run(session: Any) -> bool:
    """True when the dashboard's agent may run a turn of `session` (`run_refusal`)."""
    return not run_refusal(session)


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


#: Turns whose run is live in this process, whichever way it started (page, command, demo).
_OWNED: set[str] = set()


def running_turn_ids(session_id: str) -> list[str]:
    """Ids of the turns of `session_id` started here with `start_turn` and still running."""
    return [h.turn_id for h in _RUNS.get(session_id, []) if h.turn_id and not h.task.done()]


def owned_turn_ids() -> frozenset[str]:
    """Ids of every turn whose run is live in this process (`run_turn`, any entry point)."""
    return frozenset(_OWNED)


async def _renew_leases(turn_ids: Sequence[str]) -> None:
    """Renew the leases of `turn_ids` every third of AGENTOPS_TURN_LEASE_SECONDS until
    cancelled (docs/concepts.md "Stuck turns"); a failed renewal is logged and retried."""
    period = lease_seconds() / 3
    while True:
        await asyncio.sleep(period)
        try:
            await sync_to_async(renew_leases)(list(turn_ids))
        except Exception:
            logger.warning("renewing the lease of turns %s failed", list(turn_ids), exc_info=True)


async def run_turn(
    session_id: str,
    message: Content | str | None,
    *,
    agent: AgentLike | None = None,
    service: LiveSessionService | None = None,
    on_event: Callable[[Event], Any] | None = None,
    listen_for_cancel: bool = True,
) -> None:
    """Run one turn through the Runner on the database, broadcasting as it goes: a user
    turn storing `message`, or with None the turn that continues the session after a
    decision answered its call awaiting a person (`Runner.resume`, docs/runtime.md §3
    "Continuing a turn").

    `agent`: default `get_agent()`. `on_event(event)` is called for each event the runner
    yields (partials with id 0, stored events). With `listen_for_cancel`, the run joins the
    session's group and cancels itself on a ``turn.cancel`` for its turn (or for the whole
    session), so a stop requested in another process reaches it. Raises what the runner
    raises (docs/runtime.md §3); a cancelled run raises `asyncio.CancelledError` after the turn was
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
        _OWNED.add(turn.id)
        if previous is not None:
            previous(turn)

    service.on_begin = begun
    # The runner posts its messages and goes on (flushed below, when the run ends).
    deferring, service.deferring = service.deferring, True
    listener = None
    renewer = asyncio.create_task(_renew_leases(turn_ids), name=f"agentops-lease-{session_id}")
    try:
        if listen_for_cancel and me is not None:
            listener = await _CancelListener.start(session_id, me, turn_ids)
        run = runner.run(session_id, message) if message is not None else runner.resume(session_id)
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
        # What the run posted reaches the layer before it returns (its event loop may close).
        service.deferring = deferring
        await outbox.flush(session_id)
        service.on_begin = previous
        _OWNED.difference_update(turn_ids)
        renewer.cancel()
        with contextlib.suppress(BaseException):
            await renewer
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
            channel = await layer.new_channel()
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
            for one in unbatched(message):
                if one.get("type") != CANCEL:
                    continue  # the run's own events, drained
                wanted = one.get("turn_id") or ""
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
    session_id: str, message: Content | str | None, *, agent: AgentLike | None = None
) -> RunHandle:
    """Start one turn of `session_id` as a task of this process and wait until the turn
    has begun (or the run ended first, e.g. an unknown session, or a continuation
    (`message` None) with nothing to continue: then `task` holds the error). Returns its
    `RunHandle`; the task is kept in the registry until it ends."""
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
    cancelled turn ends interrupted/canceled (docs/runtime.md §3). Returns how many local runs
    were cancelled.
    """
    cancelled = 0
    for handle in list(_RUNS.get(session_id, [])):
        if not turn_id or handle.turn_id == turn_id:
            if handle.task.cancel():
                cancelled += 1
    await send(session_id, {"type": CANCEL, "session_id": session_id, "turn_id": turn_id})
    return cancelled
