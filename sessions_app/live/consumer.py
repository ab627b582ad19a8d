"""The live-session websocket: ``ws/sessions/<session_id>/[?after=<id>&turns=<id>,...]``.

Connect: refused with close code 4403 unless the user is signed in with a role that may
read sessions (`roles.can_view`), 4404 for an unknown session (or an id no session can
have). An open socket closes with 4403 as soon as that right ends: on sign-out of the
sign-in it was opened with, and when the user is deactivated, deleted or loses the role
(`sessions_app.live.revocation` tells the user's group ``watcher.user.<id>``), and at the
latest ``AGENTOPS_WATCHER_RECHECK_SECONDS`` later (each socket re-reads its sign-in and
user that often); after that close it sends nothing more. Then the consumer joins the
session's group (`groups.group_name`) *before* it reads what the watcher missed, so nothing
falls between the catch-up query and live traffic; live messages that arrive meanwhile
wait in the channel and are de-duplicated by event id when they are delivered. With
``?after=<id>`` it catches up on connect: the turns listed in ``turns`` (those the page
shows as running), the running turns and the turns of missed events, then every active
event with id > after, in id order.

Client -> server (JSON):
- ``{"type": "resume", "after": <event id>, "turns": [<turn ids shown running>]}``:
  send what was stored since `after` (also done on connect when the URL has ``?after=``).

Server -> client: HTML frames for htmx's websocket extension (`sessions_app.live.render`:
what each kind swaps, and the ``#live-state`` element each begins with). Group messages
carry values (`sessions_app.live.payloads`); the frames are made here, where the watchers
are, each event's and turn's once per process:
- hello (after the catch-up); turn; event (stored, with its id; sent once, in id order);
  partial (ephemeral; a fragment whose complete event was already sent is dropped);
  cancel (a stop was requested); todos (the todo list changed); error (a frame from the
  client that is not the protocol; the connection stays open).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.contrib.auth import get_user
from django.http import HttpRequest

from sessions_app.ids import session_id_problem, turn_id_problem
from sessions_app.live import render
from sessions_app.live.groups import group_name
from sessions_app.live.payloads import event_payloads_after, turn_payloads
from sessions_app.live.revocation import user_group
from sessions_app.models import Session, Turn
from sessions_app.roles import can_view

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

#: Close codes (application range 4000-4999), mirroring HTTP.
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404

#: What a frame that is not the protocol is answered with.
ERROR = "expected {type: resume, after: id}"

RUNNING = Turn.Status.RUNNING


def _int(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number >= 0 else None


def _turn_ids(values: list[Any]) -> list[str]:
    """At most 100 of `values` as turn ids, those no turn can have dropped."""
    ids = [str(value) for value in values[:100]]
    return [turn_id for turn_id in ids if turn_id_problem(turn_id) is None]


def _in_thread(func: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """`database_sync_to_async` (ORM work in a worker thread), typed: channels has no
    type hints."""
    wrapped: Callable[P, Awaitable[R]] = database_sync_to_async(func)
    return wrapped


class SessionConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]  # channels is untyped
    """One watcher of one session (see the module docstring)."""

    session_id: str = ""
    group: str = ""
    watcher_group: str = ""
    revoked: bool = False
    _recheck: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        """Check access, join the group, accept, and catch up when ``?after=`` is given."""
        self.session_id = self.scope["url_route"]["kwargs"]["session_id"]
        # Highest complete event id sent; live events at or below it are duplicates.
        self.sent_id = 0
        # Last complete event id sent per turn; a partial older than that is stale.
        self.turn_last_id: dict[str, int] = {}
        # Turns whose streaming box this watcher was sent (cleared by the next event).
        self.streaming: set[str] = set()
        if not await self._may_view():
            await self.close(code=CLOSE_FORBIDDEN)
            return
        if session_id_problem(self.session_id) or not await self._session_exists():
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.group = group_name(self.session_id)
        self.watcher_group = user_group(self.scope["user"].pk)
        await self.channel_layer.group_add(self.watcher_group, self.channel_name)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        self._recheck = asyncio.create_task(self._recheck_periodically())
        query = parse_qs(self.scope.get("query_string", b"").decode(errors="replace"))
        after = _int(query.get("after", [""])[0])
        if after is not None:
            await self._catch_up(after, _turn_ids(query.get("turns", [""])[0].split(",")))

    async def disconnect(self, code: int) -> None:
        """Leave the groups; stop the periodic re-check."""
        await self._leave()

    async def _leave(self) -> None:
        if self._recheck is not None and self._recheck is not asyncio.current_task():
            self._recheck.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._recheck
        self._recheck = None
        for group in (self.group, self.watcher_group):
            if group:
                await self.channel_layer.group_discard(group, self.channel_name)
        self.group = self.watcher_group = ""

    async def _revoke(self) -> None:
        """The right to watch ended: send nothing more, leave the groups, close 4403."""
        if self.revoked:
            return
        self.revoked = True
        await self._leave()
        await self.close(code=CLOSE_FORBIDDEN)

    async def _recheck_periodically(self) -> None:
        while True:
            await asyncio.sleep(settings.AGENTOPS_WATCHER_RECHECK_SECONDS)
            if not await self._still_may_view():
                await self._revoke()
                return

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Decode a JSON frame; a frame that is not JSON text gets the error message too
        (the connection stays open)."""
        try:
            content = await self.decode_json(text_data) if text_data is not None else None
        except ValueError:
            content = None
        await self.receive_json(content)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Handle ``resume``; anything else is answered with an error message."""
        if isinstance(content, dict) and content.get("type") == "resume":
            after = _int(content.get("after"))
            turns = content.get("turns") or []
            if after is not None and isinstance(turns, list):
                await self._catch_up(after, _turn_ids(turns))
                return
        await self._send_frame(render.error_frame(ERROR, self.sent_id))

    async def _catch_up(self, after: int, turn_ids: list[str]) -> None:
        turns, events = await self._missed(after, turn_ids)
        # Resend from `after` (the page skips events it shows already); live messages
        # queued meanwhile with an id at or below the last one sent are then dropped.
        self.sent_id = after
        for turn in turns:
            await self._send_turn(turn)
        for event in events:
            await self._send_event(event)
        await self._send_frame(render.hello_frame(self.sent_id))

    async def _send_frame(self, frame: str) -> None:
        if not self.revoked:
            await self.send(text_data=frame)

    async def _send_event(self, event: dict[str, Any]) -> None:
        if event["id"] <= self.sent_id:
            return
        self.sent_id = event["id"]
        if event.get("turn_id"):
            self.turn_last_id[event["turn_id"]] = event["id"]
            self.streaming.discard(event["turn_id"])
        await self._send_frame(render.event_frame(event))

    async def _send_turn(self, turn: dict[str, Any]) -> None:
        if turn["status"] != RUNNING:
            self.streaming.discard(turn["id"])
        await self._send_frame(render.turn_frame(turn, self.sent_id))

    @_in_thread
    def _may_view(self) -> bool:
        user = self.scope.get("user")
        return user is not None and can_view(user)

    @_in_thread
    def _still_may_view(self) -> bool:
        """Whether the sign-in this socket was opened with still exists and its user (read
        afresh: active, password unchanged, role) may view sessions."""
        key = getattr(self.scope.get("session"), "session_key", None)
        if not key:
            return False
        request = HttpRequest()
        request.session = self.scope["session"].__class__(session_key=key)
        return can_view(get_user(request))

    @_in_thread
    def _session_exists(self) -> bool:
        return Session.objects.filter(pk=self.session_id).exists()

    @_in_thread
    def _missed(
        self, after: int, turn_ids: list[str]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        return (
            turn_payloads(self.session_id, after=after, turn_ids=turn_ids),
            event_payloads_after(self.session_id, after),
        )

    # -- group messages (one handler per type) -------------------------------------------

    async def watcher_recheck(self, message: dict[str, Any]) -> None:
        """The user's rights may have changed (`revocation`): close unless still a viewer."""
        if not await self._still_may_view():
            await self._revoke()

    async def watcher_logout(self, message: dict[str, Any]) -> None:
        """The user signed out of a sign-in: close when it is the one of this socket."""
        key = getattr(self.scope.get("session"), "session_key", None)
        if key and message.get("session_key") == key:
            await self._revoke()

    async def live_event(self, message: dict[str, Any]) -> None:
        """A stored event: forward once (ids at or below the last one sent are dropped)."""
        await self._send_event(message["event"])

    async def live_partial(self, message: dict[str, Any]) -> None:
        """A fragment: forward unless its complete event was already sent."""
        partial = message["partial"]
        turn_id = partial.get("turn_id", "")
        if partial.get("after_id", 0) < self.turn_last_id.get(turn_id, 0):
            return
        opens = turn_id not in self.streaming
        self.streaming.add(turn_id)
        await self._send_frame(render.partial_frame(partial, self.sent_id, opens=opens))

    async def live_turn(self, message: dict[str, Any]) -> None:
        """A turn began or changed status."""
        await self._send_turn(message["turn"])

    async def turn_cancel(self, message: dict[str, Any]) -> None:
        """Someone asked to stop a turn (the owning process does the stopping)."""
        turn_id = message.get("turn_id", "")
        await self._send_frame(render.cancel_frame(turn_id, self.sent_id))

    async def todos_changed(self, message: dict[str, Any]) -> None:
        """The session's todo list changed (todos_app.services)."""
        frame = render.todos_frame(self.session_id, message.get("version"), self.sent_id)
        await self._send_frame(frame)

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Dispatch as usual, but ignore group message types this consumer does not know
        (a newer sender must not break older watchers)."""
        handler = getattr(self, str(message.get("type", "")).replace(".", "_"), None)
        if handler is None:
            logger.debug("ignoring message type %r", message.get("type"))
            return
        await super().dispatch(message)
