"""The next-context page of a long session that has no kept state yet, computed off the
request.

A view of the context page reads the events after the session's newest kept state
(`context_window`): about a page when the page was viewed since the last write. After an
import, a rewrite or a full recomputation there is no kept state, and the first view
must read every event once (about 90 s for 1,000,000 events here). Rather than hold the
request (and a server thread) that long, a view that would read more than
`AGENTOPS_CONTEXT_BACKGROUND_EVENTS` events starts that pass in a background thread of
the server process and answers at once with a page that says so and asks again every
few seconds (htmx); the pass keeps its states on the session row as any view does, so
the next view reads about a page. One pass per session per process, and one per kept
state: when a view after a pass (or after a failed pass: an unreadable row) would still
read that much, it computes in the request, as it would without this module.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connections

from sessions_app import models
from sessions_app.pages.context_stream import StreamedContext
from sessions_app.pages.context_window import LongPassError, context_page

__all__ = ["BackgroundPass", "computed_or_started", "wait_for"]

log = logging.getLogger(__name__)


@dataclass
class BackgroundPass:
    """A context pass running (or run) off the request for one session: `events` it
    reads (at least), `done` once it ended, `failed` when it raised (it keeps the generation
    it started from)."""

    session_id: str
    events: int
    #: The generation of the session's kept context state it started from, then the one
    #: it left (`context_window`); a pass is not started again on the same generation.
    generation: str | None
    done: threading.Event = field(default_factory=threading.Event)
    failed: bool = False


_lock = threading.Lock()
_passes: dict[str, BackgroundPass] = {}


def computed_or_started(
    session: models.Session, page: str | None, per_page: int
) -> tuple[StreamedContext, Any] | BackgroundPass:
    """`context_window.context_page(session, page, per_page)`, or the background pass
    that computes it when it would read more than `AGENTOPS_CONTEXT_BACKGROUND_EVENTS`
    events (0: never) or one runs already (module docstring). Raises
    `UnreadableRowError` as `context_page` does."""
    job = running(session.id)
    if job is not None:
        return job
    limit = settings.AGENTOPS_CONTEXT_BACKGROUND_EVENTS or None
    try:
        return context_page(session, page, per_page, read_at_most=limit)
    except LongPassError as long:
        job = start(session, long.events)
    return job if job is not None else context_page(session, page, per_page)


def running(session_id: str) -> BackgroundPass | None:
    """The background pass of `session_id` still running in this process, if any."""
    with _lock:
        job = _passes.get(session_id)
    return job if job is not None and not job.done.is_set() else None


def start(session: models.Session, events: int) -> BackgroundPass | None:
    """The background pass of `session`'s context (`events`: at least that many to
    read), started unless one runs; None when one already ran (or failed) on the same
    kept state (its generation): the read stays long however it is done (say, a running
    turn of many events), so the view computes in the request."""
    generation = _generation(session.context_checkpoint)
    with _lock:
        known = _passes.get(session.id)
        if known is not None and not known.done.is_set():
            return known
        if known is not None and known.generation == generation:
            return None
        job = _passes[session.id] = BackgroundPass(session.id, events, generation)
    threading.Thread(target=_run, args=(job,), name=f"context-{session.id}", daemon=True).start()
    return job


def _generation(checkpoint: object) -> str | None:
    return str(checkpoint.get("gen")) if isinstance(checkpoint, dict) else None


def _run(job: BackgroundPass) -> None:
    try:
        session = models.Session.objects.get(pk=job.session_id)
        context_page(session, None, settings.AGENTOPS_CONTEXT_ENTRIES_PER_PAGE)
        rows = models.Session.objects.filter(pk=job.session_id)
        job.generation = _generation(rows.values_list("context_checkpoint", flat=True).first())
    except Exception:
        job.failed = True
        log.exception("background context pass of session %s failed", job.session_id)
    finally:
        connections.close_all()
        job.done.set()


def wait_for(session_id: str, timeout: float = 60) -> bool:
    """Wait until the background pass of `session_id` (if any) ended; False on timeout.
    For tests and tools."""
    with _lock:
        job = _passes.get(session_id)
    return job is None or job.done.wait(timeout)
