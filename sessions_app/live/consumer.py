"""The live-session websocket: ``ws/sessions/<session_id>/[?after=<id>&turns=<id>,...]``.

Connect: refused with close code 4403 unless the user is signed in with a role that may
read sessions (`roles.can_view`), 4404 for an unknown session (or an id no session can
have). An open socket closes with 4403 as soon as that right ends: on sign-out of the
sign-in it was opened with, and when the user is deactivated, deleted or loses the role
(`sessions_app.live.revocation` tells the user's group ``watcher.user.<id>``), and at the
latest ``AGENTOPS_WATCHER_RECHECK_SECONDS`` later (`revocation.recheck_periodically`
re-reads its sign-in and user that often); after that close it sends nothing more.
Then the consumer joins this process's feed of the session (`fanout`: one subscription
to the session's group per process, however many sockets watch it) *before* it reads what
the watcher missed, so nothing falls between the catch-up query and live traffic; what
the feed hands over meanwhile is held and sent after the catch-up, de-duplicated by event
id. With ``?after=<id>`` it catches up on connect: the turns listed in ``turns`` (those
the page shows as running), the running turns and the turns of missed events, then every
active event with id > after, in id order. A socket that falls more than
``AGENTOPS_WATCHER_BACKLOG`` messages behind, or whose feed missed messages, is closed
with 4429 (`CLOSE_BEHIND`): the page reconnects with ``?after=<last id>`` and reads what
it missed from the database, rather than this process holding it.

Client -> server (JSON):
- ``{"type": "resume", "after": <event id>, "turns": [<turn ids shown running>]}``:
  send what was stored since `after` (also done on connect when the URL has ``?after=``).

Server -> client: HTML frames for htmx's websocket extension (`sessions_app.live.render`:
what each kind swaps, and the ``#live-state`` element each begins with). Group messages
carry values (`sessions_app.live.payloads`); the frames are made here, where the watchers
are, once per process (`sessions_app.live.watcher`: the watcher's position, fragments
joined when the process fell behind):
- hello (after the catch-up); turn; event (stored, with its id; sent once, in id order);
  partial (ephemeral; a fragment whose complete event was already sent is dropped);
  cancel (a stop was requested); todos (the todo list changed); error (a frame from the
  client that is not the protocol; the connection stays open).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from sessions_app.ids import session_id_problem, turn_id_problem
from sessions_app.live import fanout, revocation
from sessions_app.live.fanout import Batch
from sessions_app.live.payloads import event_payloads_after, turn_payloads
from sessions_app.live.revocation import user_group
from sessions_app.live.watcher import WatcherFrames
from sessions_app.models import Session
from sessions_app.roles import can_view

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

#: Close codes (application range 4000-4999), mirroring HTTP.
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
#: Too far behind: reconnect with ``?after=<last event id>`` (the database has the rest).
CLOSE_BEHIND = 4429

#: What a frame that is not the protocol is answered with.
ERROR = "expected {type: resume, after: id}"


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
    watcher_group: str = ""
    watching: bool = False
    sign_in: str = ""
    revoked: bool = False
    behind: bool = False

    async def connect(self) -> None:
        """Check access, join the session's feed, accept, and catch up when ``?after=``
        is given."""
        self.session_id = self.scope["url_route"]["kwargs"]["session_id"]
        self.position = WatcherFrames(self.session_id)
        # Batches the feed handed over while this watcher was catching up (sent after it).
        self.held: deque[Batch] = deque()
        self.held_messages = 0
        self.catching_up = True
        query = parse_qs(self.scope.get("query_string", b"").decode(errors="replace"))
        after = _int(query.get("after", [""])[0])
        turn_ids = _turn_ids(query.get("turns", [""])[0].split(","))
        # Joined before anything is read, so nothing falls between the catch-up and the
        # feed; what it hands over meanwhile is held (and dropped when refused).
        await fanout.watch(self.session_id, self)
        self.watching = True
        refusal, missed = await self._admit(after, turn_ids)
        if refusal:
            await self._leave()
            await self.close(code=refusal)
            return
        self.watcher_group = user_group(self.scope["user"].pk)
        await self.channel_layer.group_add(self.watcher_group, self.channel_name)
        await self.accept()
        self.sign_in = str(getattr(self.scope.get("session"), "session_key", "") or "")
        revocation.recheck_periodically(self.sign_in, self)
        if after is not None and missed is not None:
            await self._send_caught_up(after, *missed)
        else:
            await self._send_held()

    async def disconnect(self, code: int) -> None:
        """Leave the feed and the user's group; no more periodic re-checks."""
        await self._leave()

    async def _leave(self) -> None:
        revocation.stop_rechecking(self.sign_in, self)
        self.held.clear()
        if self.watching:
            self.watching = False
            await fanout.unwatch(self.session_id, self)
        if self.watcher_group:
            await self.channel_layer.group_discard(self.watcher_group, self.channel_name)
        self.watcher_group = ""

    async def revoke(self) -> None:
        """The right to watch ended: send nothing more, leave the groups, close 4403."""
        if self.revoked:
            return
        self.revoked = True
        await self._leave()
        await self.close(code=CLOSE_FORBIDDEN)

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
        await self._send_frame(self.position.error_frame(ERROR))

    async def _catch_up(self, after: int, turn_ids: list[str]) -> None:
        """Send what was stored after `after` (read after joining the feed, so nothing
        falls between), then what the feed handed over meanwhile."""
        self.catching_up = True
        turns, events = await self._missed(after, turn_ids)
        await self._send_caught_up(after, turns, events)

    async def _send_caught_up(
        self, after: int, turns: list[dict[str, Any]], events: list[dict[str, Any]]
    ) -> None:
        for frame in self.position.catch_up(after, turns, events):
            await self._send_frame(frame)
        await self._send_held()

    async def _send_held(self) -> None:
        while self.held and not self.behind:
            for message in self.position.messages(self.held.popleft()):
                await self._send_frame(message)
        self.held_messages = 0
        self.catching_up = False

    async def _send_frame(self, frame: str) -> None:
        if not self.revoked and not self.behind:
            # Straight to the server (what `send(text_data=...)` ends in), once per frame
            # per watcher.
            await self.base_send({"type": "websocket.send", "text": frame})

    # -- what the session's feed hands over (fanout.Watcher) -----------------------------

    async def take(self, batch: Batch) -> None:
        """Send the frames of `batch`; while catching up, hold it. A watcher more than
        AGENTOPS_WATCHER_BACKLOG messages behind is told to resume from the database."""
        if self.revoked or self.behind:
            return
        if self.catching_up or len(batch.messages) > settings.AGENTOPS_WATCHER_BACKLOG:
            self.held.append(batch)
            self.held_messages += len(batch.messages)
            if self.held_messages > settings.AGENTOPS_WATCHER_BACKLOG:
                await self.resume_from_database()
            return
        for message in self.position.messages(batch):
            await self._send_frame(message)

    async def resume_from_database(self) -> None:
        """Close with `CLOSE_BEHIND`: the client reconnects with ``?after=<last id>`` and
        reads what it missed from the database instead of this process holding it."""
        if self.revoked or self.behind:
            return
        self.behind = True
        self.held.clear()
        await self.close(code=CLOSE_BEHIND)
        await self._leave()

    @_in_thread
    def _admit(
        self, after: int | None, turn_ids: list[str]
    ) -> tuple[int, tuple[list[dict[str, Any]], list[dict[str, Any]]] | None]:
        """In one call on the database thread: the close code refusing this socket (0 when
        admitted) and, with `after`, what it missed (`_missed`)."""
        user = self.scope.get("user")
        if user is None or not can_view(user):
            return CLOSE_FORBIDDEN, None
        if session_id_problem(self.session_id):
            return CLOSE_NOT_FOUND, None
        if not Session.objects.filter(pk=self.session_id).exists():
            return CLOSE_NOT_FOUND, None
        if after is None:
            return 0, None
        return 0, self._read_missed(after, turn_ids)

    @_in_thread
    def _still_may_view(self) -> bool:
        """Whether the sign-in this socket was opened with still exists and its user may
        view sessions (`revocation.signed_in_may_view`)."""
        return bool(self.sign_in) and revocation.signed_in_may_view(self.sign_in)

    def _read_missed(
        self, after: int, turn_ids: list[str]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        return (
            turn_payloads(self.session_id, after=after, turn_ids=turn_ids),
            event_payloads_after(self.session_id, after),
        )

    _missed = _in_thread(_read_missed)

    # -- messages to the user's group (sessions_app.live.revocation) ---------------------

    async def watcher_recheck(self, message: dict[str, Any]) -> None:
        """The user's rights may have changed (`revocation`): close unless still a viewer."""
        if not await self._still_may_view():
            await self.revoke()

    async def watcher_logout(self, message: dict[str, Any]) -> None:
        """The user signed out of a sign-in: close when it is the one of this socket."""
        key = getattr(self.scope.get("session"), "session_key", None)
        if key and message.get("session_key") == key:
            await self.revoke()

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Dispatch as usual, but ignore message types this consumer does not know (a
        newer sender must not break older watchers)."""
        handler = getattr(self, str(message.get("type", "")).replace(".", "_"), None)
        if handler is None:
            logger.debug("ignoring message type %r", message.get("type"))
            return
        await super().dispatch(message)
