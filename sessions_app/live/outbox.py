"""Per-session outboxes: what this process sends to a session's group, decoupled from the
code that produced it.

The store (`broadcast.LiveSessionService`) posts each message to the session's outbox and
goes on at once; a drainer task per outbox hands what is queued to the channel layer, in
order, several messages in one ``live.batch`` when they queued up meanwhile. So a turn's
runner never waits for the channel layer, and what one event costs it does not depend on
how many watchers there are (they are served by `fanout`, once per server process).

Order: one outbox per session and event loop keeps the order messages were posted in (a
new turn before its events, its end after them). Every message carries ``origin`` (this
outbox) and ``seq`` (1, 2, ... per outbox), so a receiver that misses one (a channel over
capacity drops messages without a word) sees the gap and tells its watchers to resume from
the database (`fanout`). An outbox holds at most ``AGENTOPS_LIVE_OUTBOX_MESSAGES``
messages waiting for the layer; one posted beyond that is not kept, and the next message
the drainer sends is ``live.resync``, after which watchers resume from the database: nothing
is lost silently, and a layer that is down does not make the server hold the turn in memory.

`flush` waits until what was posted so far has been handed to the layer: a turn's run
flushes when it ends (an event loop that then closes, e.g. ``manage.py run_turn`` or
``async_to_sync``, would otherwise cancel the drainer with messages still queued), and
writes from outside a run (`LiveSessionService.announce_event`) flush as they go.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
import weakref
from collections import deque
from typing import Any

from django.conf import settings

from sessions_app.live import groups
from sessions_app.live.payloads import BATCH, RESYNC

logger = logging.getLogger(__name__)

#: At most this many messages go to the layer in one ``live.batch``.
BATCH_MAX = 200

_ORIGINS = itertools.count(1)


class Outbox:
    """The messages this process sends to one session's group (module docstring)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        #: Unique per outbox (process, event loop, session): receivers track `seq` by it.
        self.origin = f"{uuid.uuid4().hex[:12]}-{next(_ORIGINS)}"
        self.waiting: deque[dict[str, Any]] = deque()
        self.posted = 0  # messages accepted (their seq)
        self.sent = 0  # of those, handed to the layer (or failed to be)
        self.overflowed = 0  # messages not kept since the last resync
        self.drainer: asyncio.Task[None] | None = None
        self._flushes: list[tuple[int, asyncio.Future[None]]] = []

    def post(self, message: dict[str, Any]) -> None:
        """Queue `message` (with a "type") for the session's group; never waits."""
        if len(self.waiting) >= settings.AGENTOPS_LIVE_OUTBOX_MESSAGES:
            if not self.overflowed:
                logger.warning(
                    "outbox of %s is full: watchers will resume from the database",
                    self.session_id,
                )
            self.overflowed += 1
            return
        self.posted += 1
        self.waiting.append({**message, "origin": self.origin, "seq": self.posted})
        if self.drainer is None:
            self.drainer = asyncio.get_running_loop().create_task(
                self._drain(), name=f"agentops-outbox-{self.session_id}"
            )

    async def flush(self) -> None:
        """Wait until every message posted so far was handed to the layer."""
        if self.sent >= self.posted:
            return
        done = asyncio.get_running_loop().create_future()
        self._flushes.append((self.posted, done))
        await done

    async def _drain(self) -> None:
        try:
            while self.waiting or self.overflowed:
                if self.waiting:
                    count = min(len(self.waiting), BATCH_MAX)
                    batch = [self.waiting.popleft() for _ in range(count)]
                    one = batch[0] if count == 1 else {"type": BATCH, "messages": batch}
                else:  # what overflowed is gone: watchers read it from the database
                    self.overflowed = 0
                    count, one = 0, {"type": RESYNC, "origin": self.origin, "seq": self.posted}
                await self._send(one)
                self.sent += count
                self._wake_flushes()
        finally:
            self.drainer = None
            # Cancelled with messages still queued (its event loop is closing): whoever
            # flushes must not wait for ever.
            self.sent = self.posted
            self.waiting.clear()
            self._wake_flushes()

    async def _send(self, message: dict[str, Any]) -> None:
        try:
            await groups.broadcast(self.session_id, message)
        except Exception:  # a run never fails for its watchers; they resume from the database
            logger.warning("broadcast to watchers of %s failed", self.session_id, exc_info=True)

    def _wake_flushes(self) -> None:
        pending = []
        for upto, done in self._flushes:
            if self.sent >= upto:
                if not done.done():
                    done.set_result(None)
            else:
                pending.append((upto, done))
        self._flushes = pending


_OUTBOXES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Outbox]] = (
    weakref.WeakKeyDictionary()
)


#: Idle outboxes are forgotten once a loop has more than this many (a new one for the same
#: session is a new origin to receivers).
KEEP_IDLE = 1000


def outbox(session_id: str) -> Outbox:
    """The outbox of `session_id` in the running event loop (made on first use)."""
    boxes = _OUTBOXES.setdefault(asyncio.get_running_loop(), {})
    box = boxes.get(session_id)
    if box is None:
        if len(boxes) >= KEEP_IDLE:
            for idle in [key for key, known in boxes.items() if known.drainer is None]:
                del boxes[idle]
        box = boxes[session_id] = Outbox(session_id)
    return box


def post(session_id: str, message: dict[str, Any]) -> None:
    """Queue `message` for the watchers of `session_id` (`Outbox.post`); never waits."""
    outbox(session_id).post(message)


async def flush(session_id: str) -> None:
    """Wait until what was posted for `session_id` in this event loop reached the layer."""
    await outbox(session_id).flush()
