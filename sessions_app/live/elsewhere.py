"""What other processes write, brought to this process's watchers when the channel layer
cannot carry it.

Channels' in-memory layer (the embedded default) lives in one process: a `run_turn`,
`watch_transcripts` or `import_sessions` run beside the server writes the database, but
its broadcasts never reach the server's sockets. So while a session is watched in this
process, its `Feed` reads the session's marks (its newest event id; how many turn records
it has, how many run, and the latest finish) every `AGENTOPS_LIVE_POLL_MS`, one query,
and compares them with what arrived through the layer:

- an event id newer than any the feed has received, still not received one poll later,
  was stored by another process;
- a change of the turn marks with no message received in the two polls around it was
  made by another process (a turn begun or finished there). Other changes that send no
  message (a recorded decision, a retitle) do not make watchers resume.

Either, on a feed that received nothing through the layer since the last poll (so a
process that broadcasts the session itself never makes its watchers resume), tells every
watcher of the feed to resume from the database (the page reconnects
with ``?after=<last id>`` and reads what it missed: the same path as a watcher that fell
behind). A write of this process always reaches the feed through the layer within a poll,
so it never causes a resume. With a layer shared by processes (Redis) nothing is polled.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from channels.db import database_sync_to_async
from channels.layers import InMemoryChannelLayer
from django.conf import settings
from django.db.models import Count, Max, OuterRef, Q, Subquery

from sessions_app import models

__all__ = ["Marks", "Polled", "poll_other_writers", "polls"]

logger = logging.getLogger(__name__)


class Polled(Protocol):
    """What `poll_other_writers` needs of a feed (`fanout.Feed`)."""

    session_id: str
    #: The newest event id the feed received through the layer (or read when it began).
    newest_event_id: int
    #: How many messages the feed received through the layer.
    received: int

    def resume_all(self) -> None:
        """Tell every watcher of the feed to resume from the database."""


@dataclass(frozen=True)
class Marks:
    """A session's newest active event id (0 when none) and what its turn records say:
    how many there are, how many run, and the latest finish (`turns`)."""

    newest_event_id: int
    turns: tuple[int, int, datetime | None]


def polls(layer: Any) -> bool:
    """Whether feeds on `layer` poll the database: a layer of this process only, and
    polling not switched off (AGENTOPS_LIVE_POLL_MS = 0)."""
    return isinstance(layer, InMemoryChannelLayer) and settings.AGENTOPS_LIVE_POLL_MS > 0


def read_marks(session_id: str) -> Marks:
    """One query: the session's `Marks` (no event and no session: 0 and None)."""
    newest = (
        models.Event.objects.active()
        .filter(session_id=OuterRef("pk"))
        .order_by()
        .values("session_id")
        .annotate(newest=Max("id"))
        .values("newest")
    )
    turns = models.Turn.objects.filter(session_id=OuterRef("pk")).order_by().values("session_id")

    def of_turns(aggregate: Any) -> Subquery:
        return Subquery(turns.annotate(value=aggregate).values("value"))

    row = (
        models.Session.objects.filter(pk=session_id)
        .annotate(
            newest=Subquery(newest),
            turn_count=of_turns(Count("pk")),
            running=of_turns(Count("pk", filter=Q(status=models.Turn.Status.RUNNING))),
            finished=of_turns(Max("finished_at")),
        )
        .values_list("newest", "turn_count", "running", "finished")
        .first()
    )
    if row is None:
        return Marks(0, (0, 0, None))
    return Marks(int(row[0] or 0), (int(row[1] or 0), int(row[2] or 0), row[3]))


async def poll_other_writers(feed: Polled) -> None:
    """Until cancelled: every AGENTOPS_LIVE_POLL_MS, read the marks of `feed`'s session
    and make its watchers resume when another process wrote it (module docstring)."""
    interval = settings.AGENTOPS_LIVE_POLL_MS / 1000
    marks = await database_sync_to_async(read_marks)(feed.session_id)
    feed.newest_event_id = max(feed.newest_event_id, marks.newest_event_id)
    received = feed.received
    awaited_id = 0  # an event id seen in the database but not yet through the layer
    quiet_change = -1  # `received` before a change no message explained; -1: none
    while True:
        await asyncio.sleep(interval)
        try:
            now = await database_sync_to_async(read_marks)(feed.session_id)
        except Exception:  # a busy or restarting database: try again next time
            logger.warning("reading the marks of %s failed", feed.session_id, exc_info=True)
            continue
        # Only a feed that received nothing since the last poll: while this process
        # broadcasts the session, its watchers follow the layer and are never resumed.
        quiet = feed.received == received
        elsewhere = quiet and (
            (awaited_id and feed.newest_event_id < awaited_id)
            or (quiet_change >= 0 and feed.received == quiet_change)
        )
        awaited_id = now.newest_event_id if now.newest_event_id > feed.newest_event_id else 0
        quiet_change = -1
        if now.turns != marks.turns and feed.received == received:
            quiet_change = received
        marks, received = now, feed.received
        if elsewhere:
            logger.info("another process wrote %s: its watchers resume", feed.session_id)
            feed.newest_event_id = max(feed.newest_event_id, now.newest_event_id)
            awaited_id, quiet_change = 0, -1
            feed.resume_all()
