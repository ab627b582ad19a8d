"""A session's active events read page by page, and the tool-protocol inspection as a
streaming pass, so pages of a 1,000,000-event session hold one page of events at a time.

The inspection of docs/runtime.md §5 is local: an assistant event with tool calls is
answered only by the run of tool events right after it, and the scan starts afresh at
every event whose role is not `tool`. So a history cut right before non-tool events
(`protocol_chunks`) can be inspected piece by piece with the runtime's own functions
(`inspect_tool_protocol`, `inspect_orphan_results`) and the positions shifted by the
piece's offset: `inspect_stream` gives exactly what they give on the whole list (a
property test compares both on generated histories).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from agentops.runtime.model import Event, Role
from agentops.runtime.protocol import (
    OrphanResult,
    ToolProtocolIssue,
    inspect_orphan_results,
    inspect_tool_protocol,
)
from sessions_app import models
from sessions_app.projector import COMPACTION_AUTHOR
from sessions_app.store.columns import EVENT_RUNTIME_COLUMNS
from sessions_app.store.rows import event_from_values

__all__ = [
    "CHUNK_EVENTS",
    "ProtocolPass",
    "active_event_pages",
    "inspect_stream",
    "live_protocol_pass",
    "live_start_id",
    "protocol_chunks",
]

#: Events read per query (keyset page).
CHUNK_EVENTS = 2000


def live_start_id(session_id: str) -> int | None:
    """The id of the session's last active compaction event (author `COMPACTION_AUTHOR`,
    role user: where the live history starts, `sessions_app.projector.live_history`), or
    None when there is none. One query (index event_session_active_idx)."""
    return (
        models.Event.objects.active()
        .filter(session_id=session_id, author=COMPACTION_AUTHOR, role=Role.USER.value)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )


def active_event_pages(
    session_id: str, *, chunk: int | None = None, archived: bool = False, after: int = 0
) -> Iterator[list[Event]]:
    """The session's active events (or, with `archived`, its archived, not deleted ones)
    with ids above `after`, in id order as runtime `Event`s, `chunk` (default
    `CHUNK_EVENTS`) at a time: one keyset query per page. Raises `UnreadableRowError`
    for a row that is not a valid event."""
    chunk = chunk or CHUNK_EVENTS
    rows = models.Event.objects.filter(session_id=session_id, deleted_at__isnull=True)
    rows = rows.filter(archived_at__isnull=not archived).order_by("id")
    last = after
    while True:
        page = list(rows.filter(id__gt=last).values(*EVENT_RUNTIME_COLUMNS)[:chunk])
        if page:
            yield [event_from_values(row) for row in page]
        if len(page) < chunk:
            return
        last = page[-1]["id"]


def protocol_chunks(pages: Iterable[Sequence[Event]]) -> Iterator[list[Event]]:
    """The events of `pages`, in order, re-cut so that every piece but the last ends right
    before an event whose role is not `tool` (where the inspection starts afresh). A run
    of tool events is never split, so a piece can be larger than a page."""
    held: list[Event] = []
    for page in pages:
        held.extend(page)
        cut = len(held)
        while cut > 0 and held[cut - 1].content.role is Role.TOOL:
            cut -= 1
        # Cut before the last non-tool event: what follows it may still be its answers.
        cut -= 1
        if cut > 0:
            yield held[:cut]
            held = held[cut:]
    if held:
        yield held


@dataclass
class ProtocolPass:
    """What `inspect_stream` found: the issues and orphan results (positions in the whole
    stream), each orphan's event by position, and how many events were inspected."""

    issues: list[ToolProtocolIssue] = field(default_factory=list)
    orphans: list[OrphanResult] = field(default_factory=list)
    orphan_events: dict[int, Event] = field(default_factory=dict)
    count: int = 0


def inspect_stream(chunks: Iterable[Sequence[Event]]) -> ProtocolPass:
    """`inspect_tool_protocol` and `inspect_orphan_results` (docs/runtime.md §5) of the
    concatenation of `chunks`, each cut right before a non-tool event (`protocol_chunks`),
    keeping only the issues, the orphans and the orphans' events. Never raises."""
    found = ProtocolPass()
    for chunk in chunks:
        offset = found.count
        for issue in inspect_tool_protocol(chunk):
            found.issues.append(dataclasses.replace(issue, position=issue.position + offset))
        for orphan in inspect_orphan_results(chunk):
            found.orphans.append(dataclasses.replace(orphan, position=orphan.position + offset))
            found.orphan_events[orphan.position + offset] = chunk[orphan.position]
        found.count += len(chunk)
    return found


def live_protocol_pass(session_id: str) -> tuple[ProtocolPass, int]:
    """(`inspect_stream` of the session's live history, how many active events came
    before it: compacted). The live history is what `sessions_app.projector.live_history`
    keeps: from the last compaction event on. Every active event is read and validated,
    one page at a time. Raises `UnreadableRowError` for a row that is not a valid event."""
    start = live_start_id(session_id) or 0
    compacted = 0

    def live_pages() -> Iterator[list[Event]]:
        nonlocal compacted
        for page in active_event_pages(session_id):
            live = [event for event in page if event.id >= start]
            compacted += len(page) - len(live)
            if live:
                yield live

    found = inspect_stream(protocol_chunks(live_pages()))
    return found, compacted
