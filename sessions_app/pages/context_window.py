"""The next-context page's rows and totals from the events written since the page was
last computed, not from every event of the session.

`context_stream.stream_context` can resume after a piece from the pass's state there
(`Resume`). The page keeps such states on the session row (`Session.context_checkpoint`):
after each view, the newest state at or before the first row of the last page and of
each of the `MARGIN` pages before it, each after a piece that can no longer change; the
next view reads only the events after the newest (with ids above `Resume.upto`, by
keyset), the turn records they name and the recorded outcomes on them. A piece can no
longer change when another piece follows it, none of its events or those before it is
of a running turn, and the history before it is not rewritten. Rewrites (imports,
deletes, archiving, recorded outcomes, crash recovery, OTLP and tail rebuilds) all end
in the full recomputation `store.resume.refresh_resume_status`, which gives the session a
new checkpoint *generation* (`store.page_facts.new_context_generation`); a state is
saved only under the generation it was computed in, so a rewrite that commits during a
view is never overwritten by a stale state. A new compaction moves the live history's
start (the states name the one they were computed for), and a new turn record named by
events before a state (legacy events, docs/runtime.md §2) changes their verdict: both
are checked.

So a view costs O(page + events since the last view's states): the default (last)
page of a 100,000-event session reads about one page of events, with a fixed number of
queries, and the pages just before it about two. A page before the oldest kept state
(``?page=1`` of a long session) is computed by a pass from the first event that stops
at that page. `tests/test_context_window.py` compares the
page with the whole computation after views, appends, finishes and rewrites.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from django.core.paginator import Paginator
from django.db import DatabaseError, transaction

from agentops.runtime.model import Event, ToolCall
from agentops.runtime.protocol import ToolProtocolIssue
from agentops.runtime.session import Turn, TurnStatus
from sessions_app import models
from sessions_app.pages.context_rows import mark_refused
from sessions_app.pages.context_stream import Resume, StreamedContext, Window, stream_context
from sessions_app.projector import load_outcomes
from sessions_app.store.columns import EVENT_RUNTIME_COLUMNS
from sessions_app.store.page_facts import new_context_generation
from sessions_app.store.resume import load_turns
from sessions_app.store.rows import event_from_values, turn_from_row
from sessions_app.store.stream import active_event_pages, live_start_id

__all__ = ["LongPassError", "context_page"]

#: Legacy turn ids a checkpoint lists; beyond, any new turn record voids it.
MAX_LEGACY_IDS = 50
#: Pages before the last page that are shown from a kept state too.
MARGIN = 2
_VERSION = 1


def _state_json(state: Resume) -> dict[str, Any]:
    issue = state.issue
    return {
        **{name: getattr(state, name) for name in _INTS},
        "issue": None
        if issue is None
        else {
            "turn_id": issue.turn_id,
            "event_id": issue.event_id,
            "tool_calls": [call.model_dump(mode="json") for call in issue.tool_calls],
            "position": issue.position,
        },
        "held": [event.model_dump(mode="json") for event in state.held],
        "latest": state.latest,
    }


_INTS: tuple[str, ...] = ("upto", "rows", "groups", "context", "events", "notices", "tokens")
_INTS += ("compacted", "orphans", "issues", "offset", "new")


def _state(session_id: str, data: dict[str, Any]) -> Resume:
    issue = data["issue"]
    return Resume(
        **{name: int(data[name]) for name in _INTS},
        issue=None
        if issue is None
        else ToolProtocolIssue(
            session_id,
            issue["turn_id"],
            issue["event_id"],
            tuple(ToolCall.model_validate(call) for call in issue["tool_calls"]),
            issue["position"],
        ),
        held=tuple(Event.model_validate(event) for event in data["held"]),
        latest=str(data["latest"]),
    )


def _valid_states(session: models.Session, live_start: int) -> list[Resume]:
    """The session's kept states, oldest first, when they still hold (module
    docstring); at most one query (the legacy check)."""
    data = session.context_checkpoint
    if not isinstance(data, dict) or data.get("v") != _VERSION:
        return []
    if data.get("live_start") != live_start:
        return []
    turns = models.Turn.objects.filter(session_id=session.id)
    legacy = data.get("legacy")
    if legacy is None:
        if turns.count() != data.get("turns"):
            return []
    elif legacy and turns.filter(pk__in=legacy).exists():
        return []
    try:
        return [_state(session.id, state) for state in data["states"]]
    except (KeyError, TypeError, ValueError):
        return []


def _chosen(states: Sequence[Resume], last_start: int, per_page: int) -> list[Resume]:
    """Of `states`, the newest at or before the first row of the last page (starting
    at row `last_start`) and of each of the `MARGIN` pages before it, oldest first."""
    kept: dict[int, Resume] = {}
    for back in range(MARGIN + 1):
        before = [s for s in states if s.rows <= last_start - back * per_page]
        if before:
            newest = max(before, key=lambda state: state.upto)
            kept[newest.upto] = newest
    return [kept[upto] for upto in sorted(kept)]


def _save(
    session: models.Session, states: list[Resume], live_start: int, legacy: set[str] | None
) -> None:
    """Keep `states` on the session row when no full recomputation ran since the view
    read it (same generation). A write the database refuses (SQLite busy) is skipped:
    the next view computes them again."""
    data = session.context_checkpoint if isinstance(session.context_checkpoint, dict) else {}
    gen = data.get("gen")
    turns = models.Turn.objects.filter(session_id=session.id).count() if legacy is None else 0
    rows = models.Session.objects.filter(pk=session.id)
    if gen:
        rows = rows.filter(context_checkpoint__gen=gen)
    else:  # not recomputed in full since it was written (an import): no generation yet
        rows, gen = rows.filter(context_checkpoint__isnull=True), new_context_generation()["gen"]
    kept = {
        "v": _VERSION,
        "gen": gen,
        "live_start": live_start,
        "legacy": sorted(legacy) if legacy is not None else None,
        "turns": turns,
        "states": [_state_json(state) for state in states],
    }
    try:
        with transaction.atomic():
            rows.update(context_checkpoint=kept)
    except DatabaseError:
        pass


def _pending(session_id: str) -> Any:
    def pending_of(ids: Collection[int]) -> frozenset[str]:
        if not ids:
            return frozenset()
        rows = models.Event.objects.filter(session_id=session_id, pk__in=list(ids))
        ids_of = rows.values_list("pending_call_ids", flat=True)
        return frozenset(call for calls in ids_of for call in calls)

    return pending_of


def _events(session_id: str, after: int, archived: bool = False) -> Iterator[Event]:
    pages = active_event_pages(session_id, after=after, archived=archived)
    return (event for page in pages for event in page)


def _stream(
    sid: str,
    turns: dict[str, Turn],
    start: Resume | None,
    live_start: int,
    per_page: int,
    page: str | None,
    compaction: Event | None,
    **options: Any,
) -> StreamedContext:
    """`stream_context` over session `sid`'s events, archived events and recorded
    outcomes after `start` (None: from the first event); `options` go to it as they are."""
    upto = start.upto if start is not None else 0
    return stream_context(
        turns,
        _events(sid, upto),
        _events(sid, upto, archived=True),
        load_outcomes(sid, after=upto),
        live_start=live_start,
        per_page=per_page,
        page=page,
        start=start,
        compaction=compaction,
        pending_of=_pending(sid),
        **options,
    )


class LongPassError(Exception):
    """The view would read more events than it was allowed to (`events`, at least)."""

    def __init__(self, events: int) -> None:
        super().__init__(f"more than {events - 1} events to read")
        self.events = events


def context_page(
    session: models.Session, page: str | None, per_page: int, read_at_most: int | None = None
) -> tuple[StreamedContext, Any]:
    """(the context page `page` of `session` (None: the last), the stored `raw` of its
    compaction event or None), computed from the kept state on (module docstring) and
    the state kept for the next view. Raises `UnreadableRowError` for a row that is not
    a valid event, and `LongPassError` (after one more query, before reading any event)
    when it would read more than `read_at_most` events."""
    sid = session.id
    live_start = live_start_id(sid) or 0
    turn_rows = models.Turn.objects.filter(session_id=sid)
    latest_row = turn_rows.order_by("-started_at", "-id").first()
    running = set(turn_rows.filter(status=TurnStatus.RUNNING.value).values_list("id", flat=True))
    states = _valid_states(session, live_start)
    start = states[-1] if states else None
    upto = start.upto if start is not None else 0
    if read_at_most is not None:
        after = models.Event.objects.filter(session_id=sid, id__gt=upto, deleted_at__isnull=True)
        count = after.values("id")[: read_at_most + 1].count()
        if count > read_at_most:
            raise LongPassError(count)
    named = models.Event.objects.filter(session_id=sid, id__gt=upto).values("turn_id")
    turns = {row.id: turn_from_row(row) for row in turn_rows.filter(pk__in=named)}
    if latest_row is not None:
        turns[latest_row.id] = turn_from_row(latest_row)
    compaction, raw = None, None
    if live_start:
        row = models.Event.objects.filter(pk=live_start).values(*EVENT_RUNTIME_COLUMNS, "raw")[0]
        compaction, raw = event_from_values(row), row["raw"]
    legacy = _kept_legacy(session) if start is not None else set()

    def checkpoint(piece: Sequence[Event]) -> bool:
        nonlocal legacy
        for event in piece:
            if event.turn_id in running:
                return False
            if legacy is not None and event.turn_id and event.turn_id not in turns:
                legacy.add(event.turn_id)
                if len(legacy) > MAX_LEGACY_IDS:
                    legacy = None
        return True

    result = _stream(
        sid, turns, start, live_start, per_page, page, compaction,
        checkpoint=checkpoint, margin=MARGIN,
    )  # fmt: skip
    last_start = (result.page.paginator.num_pages - 1) * per_page
    chosen = _chosen([*states, *result.checkpoints], last_start, per_page)
    if [state.upto for state in chosen] != [state.upto for state in states]:
        _save(session, chosen, live_start, legacy)
    if result.page.start_index() - 1 < result.base:
        before = [s for s in chosen if s.rows <= result.page.start_index() - 1]
        result = _from_state(
            session, result, before[-1] if before else None, live_start, per_page, compaction
        )
    return result, raw


def _kept_legacy(session: models.Session) -> set[str] | None:
    """The legacy turn ids the session's kept state lists (None: too many to list)."""
    data = session.context_checkpoint
    legacy = data.get("legacy") if isinstance(data, dict) else None
    return set(legacy) if isinstance(legacy, list) else None


def _from_state(
    session: models.Session,
    whole: StreamedContext,
    start: Resume | None,
    live_start: int,
    per_page: int,
    compaction: Event | None,
) -> StreamedContext:
    """`whole` with its page's rows from a pass from `start` (None: the first event)
    that stops at the end of that page (a page before the newest kept state)."""
    sid = session.id
    number = whole.page.number
    turns = {turn.id: turn for turn in load_turns(sid)}
    early = _stream(
        sid, turns, start, live_start, per_page, str(number), compaction,
        stop_row=number * per_page,
    )  # fmt: skip
    rows = dict(early.rows)
    shown = Paginator(Window(whole.page.paginator.count, rows), per_page).get_page(number)
    if whole.explanation.error is not None:
        mark_refused(list(shown))
    return dataclasses.replace(whole, page=shown, rows=rows, start=None)
