"""Per-process fan-out: one subscription to a session's group per server process, however
many of its sockets watch that session.

The first watcher of a session in this process makes the session's `Feed`: one channel
on the layer, in the session's group, and one reader task. So one message per event crosses
the channel layer to each server process (not one per watcher), and no per-watcher channel
work is done per event (no copy per watcher in the in-memory layer, no consumer dispatch
with its database-connection check in a worker thread). The feed hands what it received
to its watchers in `Batch`es: everything that arrived while it was serving the previous
batch goes in the next one. A batch whose first message waited more than `BEHIND_SECONDS`
is marked `behind`: the process is not keeping up, and its watchers are sent fewer, fuller
frames (fragments of one turn joined; see `sessions_app.live.watcher`) instead of falling
further behind. It serves watchers in slices of at most about `SLICE_SECONDS`, and lets the
event loop go round twice after each (`_let_others_run`): a turn whose timer or read became
due during a slice runs before the next slice, so a turn step waits for at most one slice,
not for a whole pass (nor for two slices, as one go round would: asyncio resumes a task the
round after its timer fired, behind a slice scheduled meanwhile). After a pass over more
than `MANY_WATCHERS` that took d seconds (more than `QUIET_PASS_SECONDS`) it rests d/2
seconds before the next one: serving watchers takes at most about two thirds of the
process's event loop, so the turns this process runs keep their pace however many watch
them (the watchers then get fuller batches, a little later).

Nothing is lost silently: a message an outbox numbered (`outbox`) that arrives after a gap
in its numbers, or a ``live.resync``, tells every watcher of the feed to resume from the
database (`Watcher.resume_from_database`: the page reconnects with ``?after=<last id>``).
The feed ends (leaves the group) when its last watcher leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from channels.layers import get_channel_layer

from sessions_app.live import elsewhere
from sessions_app.live.groups import group_name
from sessions_app.live.payloads import EVENT, RESYNC, unbatched

logger = logging.getLogger(__name__)

#: The feed lets other tasks run after serving watchers for this long.
SLICE_SECONDS = 0.002

#: A feed serving more watchers than this rests after a long pass.
MANY_WATCHERS = 50

#: A batch whose first message waited longer than this is served as `Batch.behind`.
BEHIND_SECONDS = 0.1

#: A pass over more than `MANY_WATCHERS` watchers that took longer than this is followed by
#: a rest (`REST_SHARE` of it, at most `MAX_REST_SECONDS`).
QUIET_PASS_SECONDS = 0.005
MAX_REST_SECONDS = 0.25
#: The rest after such a pass, as a share of its duration.
REST_SHARE = 0.5


class Batch:
    """Messages a feed received, in order, handed to each of its watchers; frames made
    from it are kept here (`frame`), so each is made once per process, not per watcher."""

    __slots__ = ("_frames", "_last_event", "behind", "messages")

    def __init__(self, messages: list[dict[str, Any]], *, behind: bool = False) -> None:
        self.messages = messages
        #: The process fell behind: fragments may be joined (`watcher.WatcherFrames`).
        self.behind = behind
        self._frames: dict[tuple[Any, ...], str] = {}
        # Index of each turn's last stored event in the batch.
        self._last_event: dict[str, int] = {}
        for index, message in enumerate(messages):
            if message.get("type") == EVENT:
                self._last_event[message["event"].get("turn_id") or ""] = index

    def superseded(self, index: int) -> bool:
        """Whether the fragment at `index` is followed in this batch by a stored event of
        its turn (whose frame clears the fragment's streaming box)."""
        turn_id = self.messages[index]["partial"].get("turn_id") or ""
        return self._last_event.get(turn_id, -1) > index

    def frame(self, key: tuple[Any, ...], make: Callable[[], str]) -> str:
        """The frame `make()` returns, made once per `key` for this batch."""
        frame = self._frames.get(key)
        if frame is None:
            frame = self._frames[key] = make()
        return frame


class Watcher(Protocol):
    """A socket watching a session (`consumer.SessionConsumer`)."""

    async def take(self, batch: Batch) -> None:
        """Send what `batch` means for this watcher (never raises for a closed socket)."""

    async def resume_from_database(self) -> None:
        """Messages were missed: tell the client to resume from the database."""


class Feed:
    """This process's subscription to one session's group (module docstring)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.group = group_name(session_id)
        self.layer: Any = get_channel_layer()
        self.channel = ""
        self.watchers: dict[Watcher, None] = {}  # in joining order
        self.members = 0  # watchers joined or joining
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.pending: list[dict[str, Any]] = []
        self.pending_since = 0.0  # loop time the first pending message arrived
        self.resync = False
        self.last_seq: dict[str, int] = {}
        self.reader: asyncio.Task[None] | None = None
        self.serving: asyncio.Task[None] | None = None
        # What arrived through the layer, for `elsewhere` (writes of other processes).
        self.newest_event_id = 0
        self.received = 0
        self.poller: asyncio.Task[None] | None = None

    async def subscribe(self) -> None:
        """Join the session's group with a channel of this feed; start reading it."""
        try:
            self.channel = await self.layer.new_channel()
            await self.layer.group_add(self.group, self.channel)
        except BaseException as error:
            self.ready.set_exception(error)
            raise
        self.reader = asyncio.create_task(self._read(), name=f"agentops-feed-{self.session_id}")
        if elsewhere.polls(self.layer):
            self.poller = asyncio.create_task(
                elsewhere.poll_other_writers(self), name=f"agentops-poll-{self.session_id}"
            )
        self.ready.set_result(None)

    async def close(self) -> None:
        """Stop reading and serving; leave the group."""
        for task in (self.reader, self.serving, self.poller):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self.channel:
            with contextlib.suppress(Exception):
                await self.layer.group_discard(self.group, self.channel)

    async def _read(self) -> None:
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                # A dropped Redis connection: the next receive takes a fresh one.
                logger.warning("feed of %s: receive failed, retrying", self.session_id)
                await asyncio.sleep(0.2)
                continue
            self.accept(message)

    def accept(self, message: dict[str, Any]) -> None:
        """Queue what a group message carries for the watchers; note a gap."""
        if not self.pending:
            self.pending_since = asyncio.get_running_loop().time()
        self.received += 1
        for one in unbatched(message):
            if one.get("type") == EVENT and isinstance(event_id := one["event"].get("id"), int):
                self.newest_event_id = max(self.newest_event_id, event_id)
            origin, seq = one.get("origin"), one.get("seq")
            if isinstance(origin, str) and isinstance(seq, int):
                last = self.last_seq.get(origin)
                self.last_seq[origin] = seq
                if one.get("type") == RESYNC or (last is not None and seq != last + 1):
                    logger.warning("watchers of %s missed messages: resuming", self.session_id)
                    self.resync = True
            if one.get("type") != RESYNC:
                self.pending.append(one)
        self._start_serving()

    def resume_all(self) -> None:
        """Tell every watcher to resume from the database (`elsewhere`: another process
        wrote the session)."""
        self.resync = True
        self._start_serving()

    def _start_serving(self) -> None:
        if self.serving is None and (self.pending or self.resync):
            self.serving = asyncio.create_task(
                self._serve(), name=f"agentops-fanout-{self.session_id}"
            )

    async def _serve(self) -> None:
        try:
            while self.pending or self.resync:
                watchers = list(self.watchers)
                if self.resync:
                    self.resync, self.pending = False, []
                    for watcher in watchers:
                        await _safely(watcher.resume_from_database())
                    continue
                loop = asyncio.get_running_loop()
                started = loop.time()
                batch = Batch(self.pending, behind=started - self.pending_since > BEHIND_SECONDS)
                self.pending = []
                sliced = started
                for watcher in watchers:
                    if watcher in self.watchers:
                        await _safely(watcher.take(batch))
                    if loop.time() - sliced > SLICE_SECONDS:
                        await _let_others_run()
                        sliced = loop.time()
                took = loop.time() - started
                many = len(watchers) > MANY_WATCHERS and took > QUIET_PASS_SECONDS
                await asyncio.sleep(min(took * REST_SHARE, MAX_REST_SECONDS) if many else 0)
        finally:
            self.serving = None


async def _let_others_run() -> None:
    """Let the event loop go round twice: what became ready meanwhile (a turn's timer
    fired, a socket to write or read) runs, and so does the task it woke, before this one
    goes on."""
    await asyncio.sleep(0)
    await asyncio.sleep(0)


async def _safely(call: Awaitable[None]) -> None:
    try:
        await call
    except asyncio.CancelledError:
        raise
    except Exception:  # one watcher's failure is not the others'
        logger.warning("serving a watcher failed", exc_info=True)


_FEEDS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Feed]] = (
    weakref.WeakKeyDictionary()
)


def _feeds() -> dict[str, Feed]:
    return _FEEDS.setdefault(asyncio.get_running_loop(), {})


async def watch(session_id: str, watcher: Watcher) -> None:
    """Add `watcher` to this process's feed of `session_id` (made and subscribed first
    when it is the first): every message sent to the group afterwards reaches it."""
    feeds = _feeds()
    feed = feeds.get(session_id)
    if feed is None:
        feed = feeds[session_id] = Feed(session_id)
        feed.members += 1
        try:
            await feed.subscribe()
        except BaseException:
            feed.members -= 1
            feeds.pop(session_id, None)
            raise
    else:
        feed.members += 1
        try:
            await asyncio.shield(feed.ready)
        except BaseException:
            feed.members -= 1
            raise
    feed.watchers[watcher] = None


async def unwatch(session_id: str, watcher: Watcher) -> None:
    """Remove `watcher`; the last one out closes the feed."""
    feeds = _feeds()
    feed = feeds.get(session_id)
    if feed is None or watcher not in feed.watchers:
        return
    del feed.watchers[watcher]
    feed.members -= 1
    if feed.members == 0:
        feeds.pop(session_id, None)
        await feed.close()


def watcher_count(session_id: str) -> int:
    """How many sockets of this process (this event loop) watch `session_id`."""
    feed = _feeds().get(session_id)
    return len(feed.watchers) if feed else 0
