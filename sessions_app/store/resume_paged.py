"""A session's resume status and kept inspector marks worked out from its stored rows a
page at a time, for a session written in pieces (a streamed import, `ingest.streamed`):
memory holds one page of events (and the longest run of a turn that is neither completed
nor running), never the session.

`paged_resume_facts` gives what `resume.refresh_resume_status` computes from every event
at once, without recorded tool outcomes (a streamed import has none): the issue and
orphan counts of the live history (from the last compaction on), whether the default
projection of it fails (`agentops.runtime.projection.projection_fails`), and the marks of
every flagged active event (`page_facts.protocol_marks`). The inspection is local (a
tool-call group is an assistant event and the run of tool results right after it), so
pieces cut right before a non-tool event (`stream.protocol_chunks`) give the verdicts of
the whole. Reads only: the caller writes the results (`kept_status_update`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agentops.runtime.model import Event
from agentops.runtime.projection import projection_fails
from agentops.runtime.protocol import inspect_orphan_results, inspect_tool_protocol
from agentops.runtime.session import TurnStatus
from sessions_app import models
from sessions_app.store.page_facts import Marks, protocol_marks, token_sums
from sessions_app.store.resume import protocol_events
from sessions_app.store.resume_delta import GROUP_COLUMNS
from sessions_app.store.stream import CHUNK_EVENTS, live_start_id, protocol_chunks

__all__ = ["PagedFacts", "kept_status_update", "paged_resume_facts"]


@dataclass(slots=True)
class PagedFacts:
    """What `paged_resume_facts` found."""

    issue_count: int = 0
    cannot_resume: bool = False
    orphan_count: int = 0
    marks: dict[int, Marks] = field(default_factory=dict)


def _protocol_pages(session_id: str, chunk: int) -> Iterator[list[Event]]:
    """The session's active events in id order as protocol-only runtime events
    (`resume.protocol_events`), `chunk` per keyset query."""
    rows = models.Event.objects.active().filter(session_id=session_id).order_by("id")
    last = 0
    while True:
        page = list(rows.filter(id__gt=last).values_list(*GROUP_COLUMNS)[:chunk])
        if page:
            yield protocol_events(session_id, page)
        if len(page) < chunk:
            return
        last = page[-1][0]


def paged_resume_facts(session_id: str, *, chunk: int = CHUNK_EVENTS) -> PagedFacts:
    """The session's resume status, orphan count and inspector marks from its stored rows
    (see the module doc). Queries: the turn statuses, where the live history starts, one
    per page. Raises pydantic.ValidationError for a row the runtime contract does not
    allow."""
    statuses = {
        turn_id: TurnStatus(status)
        for turn_id, status in models.Turn.objects.filter(session_id=session_id).values_list(
            "id", "status"
        )
    }
    start = live_start_id(session_id) or 0
    found = PagedFacts()

    def live_chunks() -> Iterator[Event]:
        for piece in protocol_chunks(_protocol_pages(session_id, chunk)):
            found.marks.update(protocol_marks(piece))
            live = [event for event in piece if event.id >= start]
            found.issue_count += len(inspect_tool_protocol(live))
            found.orphan_count += len(inspect_orphan_results(live))
            yield from live

    events = live_chunks()
    found.cannot_resume = projection_fails(statuses, events)
    for _event in events:  # the verdict stops at its first issue; the counts read on
        pass
    return found


def kept_status_update(session_id: str, found: PagedFacts, *, legacy: bool) -> dict[str, Any]:
    """The session row's columns after a streamed write, for one UPDATE: the resume status
    and orphan count of `found`, the token totals (SQL, as `page_facts.refresh_page_facts`
    sums them) and the legacy flag the writer knows (`legacy`: some active event names no
    turn record of the session)."""
    return {
        "protocol_issue_count": found.issue_count,
        "cannot_resume": found.cannot_resume,
        "orphan_result_count": found.orphan_count,
        **token_sums(session_id),
        "has_legacy_events": legacy,
    }
