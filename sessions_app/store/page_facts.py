"""What the pages read of a session, kept up to date as events are written, so a page
never reads every event to show a few.

- The tool-protocol inspector's verdict per event (docs/runtime.md §5), in the event's
  derived columns: `Event.unanswered_calls` (indexes of an assistant event's tool calls
  the tool run right after it leaves unanswered; None when none is) and
  `Event.orphan_result` (a tool result answering no call). The inspection is local (an
  assistant event's calls are answered only by the run of tool events right after it in
  the active history, and the scan starts afresh at every event that is not a tool
  result), so the verdicts of events after a compaction are those of the live history,
  and an append changes at most the verdict of the last tool-call group. The protocol
  page reads the flagged rows only (index `event_protocol_idx`).
- The session's token totals (`Session.tokens_input`, `tokens_output`, `tokens_cached`):
  the sums `search.numbers` defines, over the active events.

Appends keep both with a few bounded statements (`opening_marks` in the event's INSERT,
`result_marks`, `note_appended`, `note_tokens_added`);
every write that rewrites history (imports, deletes, archiving, OTLP and tail rebuilds,
crash recovery) ends in the full recomputation `refresh_page_facts`, which
`store.resume.refresh_resume_status` calls. `tests/test_page_facts.py` compares the kept
values with the full recomputation after every write path, on every corpus file and demo
session.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, cast

from django.db.models import (
    BigIntegerField,
    BooleanField,
    Case,
    Exists,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.db.models.sql import UpdateQuery

from agentops.runtime.model import Event, Role
from agentops.runtime.protocol import (
    OrphanResult,
    ToolProtocolIssue,
    inspect_orphan_results,
    inspect_tool_protocol,
)
from sessions_app import models
from sessions_app.search.numbers import token_expressions
from sessions_app.store.columns import EVENT_RUNTIME_COLUMNS
from sessions_app.store.rows import event_from_values

__all__ = [
    "KeptProtocol",
    "Marks",
    "kept_protocol_pass",
    "legacy_after_append",
    "legacy_after_begin",
    "legacy_events_exist",
    "new_context_generation",
    "note_appended",
    "note_tokens_added",
    "opening_marks",
    "protocol_marks",
    "refresh_page_facts",
    "refresh_page_facts_of",
    "result_marks",
    "row_page_facts",
    "stored_marks",
    "token_sums",
    "tokens_added_params",
    "tokens_added_sql",
    "write_marks",
]

Marks = tuple[list[int] | None, bool]
"""(unanswered call indexes or None, orphan result) of one event."""

_CLEAN: Marks = (None, False)
_TOOL = Role.TOOL.value


def protocol_marks(events: Sequence[Event]) -> dict[int, Marks]:
    """{event id: marks} of the events of `events` (a run of the active history, in id
    order) that the runtime's inspector flags (`inspect_tool_protocol`,
    `inspect_orphan_results`); events not named are clean. No query."""
    marks: dict[int, Marks] = {}
    by_id = {event.id: event for event in events}
    for issue in inspect_tool_protocol(events):
        calls = by_id[issue.event_id].content.tool_calls
        unanswered = [i for i, call in enumerate(calls) if any(call is u for u in issue.tool_calls)]
        marks[issue.event_id] = (unanswered, False)
    for orphan in inspect_orphan_results(events):
        marks[orphan.event_id] = (marks.get(orphan.event_id, _CLEAN)[0], True)
    return marks


def stored_marks(session_id: str) -> dict[int, Marks]:
    """{event id: stored marks} of the session's flagged events, active or not (an event
    that left the active history keeps none); one query."""
    rows = (
        models.Event.objects.filter(session_id=session_id)
        .flagged()
        .values_list("id", "unanswered_calls", "orphan_result")
    )
    return {row_id: (unanswered, orphan) for row_id, unanswered, orphan in rows}


def write_marks(changed: dict[int, Marks]) -> None:
    """Store `changed` ({event id: marks}); one UPDATE per distinct marks."""
    by_marks: dict[str, list[int]] = {}
    for event_id, marks in changed.items():
        by_marks.setdefault(repr(marks), []).append(event_id)
    for ids in by_marks.values():
        unanswered, orphan = changed[ids[0]]
        models.Event.objects.filter(pk__in=ids).update(
            unanswered_calls=unanswered, orphan_result=orphan
        )


def refresh_page_facts(session_id: str, events: Sequence[Event]) -> dict[str, Any]:
    """Recompute the session's kept page facts from `events` (its active events in id
    order, as `store.resume.protocol_events` builds them): store the marks that changed
    (one query, plus one UPDATE per distinct changed mark) and return the session row's
    token totals and legacy flag as expressions for the caller's UPDATE of that row, and a
    new generation of the context page's kept state (`new_context_generation`)."""
    wanted = protocol_marks(events)
    stored = stored_marks(session_id)
    changed = {i: m for i, m in wanted.items() if stored.get(i) != m}
    changed.update({i: _CLEAN for i in stored if i not in wanted})
    write_marks(changed)
    return {
        **token_sums(session_id),
        "has_legacy_events": legacy_events_exist(session_id),
        "context_checkpoint": new_context_generation(),
    }


def new_context_generation() -> dict[str, Any]:
    """A fresh `Session.context_checkpoint` for a write that rewrites history: no kept
    state of the context page (`pages.context_window`), and a generation no state
    computed before the write can be saved under."""
    return {"gen": uuid.uuid4().hex}


def refresh_page_facts_of(events: dict[str, Sequence[Event]], fresh: Collection[str] = ()) -> None:
    """`refresh_page_facts` of many sessions at once ({session id: its active events in id
    order}): store the marks that changed (one query for the stored marks, none when every
    session is `fresh`: each of its events was just inserted, unmarked; one UPDATE per
    distinct changed mark). The caller's UPDATE of the session rows sets their token
    totals and legacy flag from `row_page_facts`."""
    wanted: dict[int, Marks] = {}
    for session_events in events.values():
        wanted.update(protocol_marks(session_events))
    stored: dict[int, Marks] = {}
    if set(events) - set(fresh):
        rows = (
            models.Event.objects.filter(session_id__in=list(events))
            .flagged()
            .values_list("id", "unanswered_calls", "orphan_result")
        )
        stored = {row_id: (unanswered, orphan) for row_id, unanswered, orphan in rows}
    changed = {i: m for i, m in wanted.items() if stored.get(i) != m}
    changed.update({i: _CLEAN for i in stored if i not in wanted})
    write_marks(changed)


def row_page_facts() -> dict[str, Any]:
    """The session row's token totals and legacy flag as expressions of the row being
    updated (``OuterRef("pk")``), for an UPDATE of many session rows."""
    each = OuterRef("pk")
    return {**token_sums(each), "has_legacy_events": legacy_events_exist(each)}


def token_sums(session_id: str | OuterRef, **event_filter: Any) -> dict[str, Any]:
    """{`tokens_input`: ..., `tokens_output`: ..., `tokens_cached`: ...}: subqueries
    summing `search.numbers`' token expressions over the session's active events
    (narrowed by `event_filter`), for an UPDATE of the session row."""
    events = models.Event.objects.active().filter(
        session_id=session_id, usage__isnull=False, **event_filter
    )
    sums = {}
    for name, expression in token_expressions().items():
        total = events.order_by().values("session_id").annotate(t=Sum(expression)).values("t")
        sums[f"tokens_{name}"] = Coalesce(
            Subquery(total, output_field=BigIntegerField()), 0, output_field=BigIntegerField()
        )
    return sums


def note_tokens_added(session_id: str, first_id: int, last_id: int) -> None:
    """Add the tokens of the session's new events `first_id`..`last_id` to its totals;
    one UPDATE."""
    added = token_sums(session_id, id__gte=first_id, id__lte=last_id)
    models.Session.objects.filter(pk=session_id).update(
        **{name: F(name) + value for name, value in added.items()}
    )


#: Stand-ins compiled into `tokens_added_sql` for the values each run gives, and the
#: slots that name them in its parameter template.
_SESSION, _FIRST, _LAST = "\x00session", -987_654_321, -987_654_322
_SLOTS = {_SESSION: object(), _FIRST: object(), _LAST: object()}


@cache
def tokens_added_sql(alias: str = "default") -> tuple[str, tuple[Any, ...]]:
    """`note_tokens_added`'s UPDATE compiled once for database `alias` (the same ORM
    expressions): its SQL (``%s`` placeholders) and a template of its parameters: values
    and slots for the session and the event ids (`tokens_added_params`)."""
    added = token_sums(_SESSION, id__gte=_FIRST, id__lte=_LAST)
    query = cast(UpdateQuery, models.Session.objects.filter(pk=_SESSION).query.chain(UpdateQuery))
    query.add_update_values({name: F(name) + value for name, value in added.items()})
    sql, params = query.get_compiler(alias).as_sql()
    return sql, tuple(_SLOTS.get(p, p) if isinstance(p, str | int) else p for p in params)


def tokens_added_params(
    template: tuple[Any, ...], session_id: str, first_id: int, last_id: int
) -> list[Any]:
    """The parameters of `tokens_added_sql` for the session's events first..last."""
    given = {
        id(_SLOTS[_SESSION]): session_id,
        id(_SLOTS[_FIRST]): first_id,
        id(_SLOTS[_LAST]): last_id,
    }
    return [given.get(id(p), p) for p in template]


def opening_marks(fields: dict[str, Any]) -> dict[str, Any]:
    """The derived column values a new event (its column values `fields`) is inserted
    with: every call of an assistant event with calls unanswered (the results that
    follow answer them, `result_marks`); nothing for any other event."""
    if fields["role"] == Role.ASSISTANT.value and fields["tool_calls"]:
        return {"unanswered_calls": list(range(len(fields["tool_calls"])))}
    return {}


def note_appended(session_id: str, event: Event, event_id: int) -> None:
    """Keep the page facts after `event` was stored as `event_id` (inserted with its
    `opening_marks`), the session's newest active event, in the append's transaction: its
    tokens (one UPDATE when it has usage) and, for a tool result, the marks of the
    tool-call group it joins (one query and one UPDATE; anything else: none)."""
    if event.usage is not None:
        note_tokens_added(session_id, event_id, event_id)
    if event.content.role is Role.TOOL:
        _note_result(session_id, event, event_id)


def result_marks(
    anchor: tuple[int, str, Any, list[int] | None] | None, event: Event, event_id: int
) -> dict[int, Marks]:
    """The marks that change after tool result `event` was stored as `event_id`, from
    its group's assistant event `anchor` ((id, turn id, tool calls, kept unanswered call
    indexes) of the last active event before it that is not a tool result; None: there
    is none): it answers the first still unanswered call with its call id when that
    event has calls left unanswered and the same turn id, as the inspector matches
    (docs/runtime.md §5): the anchor's marks; else it is an orphan: its own. No query."""
    if anchor is not None:
        anchor_id, turn_id, calls, unanswered = anchor
        answered = event.content.answered_call_id
        if unanswered and turn_id == event.turn_id:
            for index in unanswered:
                if index < len(calls) and calls[index].get("id") == answered:
                    return {anchor_id: ([i for i in unanswered if i != index] or None, False)}
    return {event_id: (None, True)}


def _note_result(session_id: str, event: Event, event_id: int) -> None:
    """`result_marks`, stored. Reads the assistant event's row only: its kept marks say
    which calls earlier results left open."""
    anchor = (
        models.Event.objects.active()
        .filter(session_id=session_id, id__lt=event_id)
        .exclude(role=_TOOL)
        .order_by("-id")
        .values_list("id", "turn_id", "tool_calls", "unanswered_calls")
        .first()
    )
    write_marks(result_marks(anchor, event, event_id))


@dataclass
class KeptProtocol:
    """What the protocol page shows, read from the kept marks (`kept_protocol_pass`)."""

    issues: list[ToolProtocolIssue] = field(default_factory=list)
    orphans: list[tuple[OrphanResult, Event]] = field(default_factory=list)
    pending: dict[int, list[str]] = field(default_factory=dict)
    """{issue event id: the call ids its source marks as awaiting a person}."""
    compacted: int = 0
    """Active events before the live history (the last compaction)."""


def kept_protocol_pass(session_id: str) -> KeptProtocol:
    """What `store.stream.live_protocol_pass` finds (the issues and orphan results of the
    live history, how many active events came before it), read from the kept marks, with
    each orphan's event and each issue's pending call ids. Reads only the flagged events:
    one query, one for where the live history starts and one to count the compacted
    events when it has a compaction. Positions are not known (0): no page shows them.
    Raises `UnreadableRowError` for a flagged row that is not a valid event."""
    from sessions_app.store.stream import live_start_id

    start = live_start_id(session_id) or 0
    active = models.Event.objects.active().filter(session_id=session_id)
    rows = active.filter(id__gte=start).flagged().order_by("id")
    kept = KeptProtocol()
    extra = ("unanswered_calls", "orphan_result")
    for row in rows.values(*EVENT_RUNTIME_COLUMNS, *extra):
        event = event_from_values(row)
        if row["unanswered_calls"] is not None:
            calls = event.content.tool_calls
            unanswered = tuple(calls[i] for i in row["unanswered_calls"] if i < len(calls))
            kept.issues.append(
                ToolProtocolIssue(session_id, event.turn_id, event.id, unanswered, position=0)
            )
            kept.pending[event.id] = row["pending_call_ids"]
        if row["orphan_result"]:
            call_id = event.content.answered_call_id
            orphan = OrphanResult(session_id, event.turn_id, event.id, call_id, position=0)
            kept.orphans.append((orphan, event))
    kept.compacted = active.filter(id__lt=start).count() if start else 0
    return kept


def legacy_events_exist(session_id: str | OuterRef) -> Exists:
    """SQL: does the session have an active event whose turn id names none of its turn
    records (legacy events, docs/runtime.md §2)? Reads every event of the session: for
    full recomputations only (`Session.has_legacy_events` keeps the answer)."""
    events = models.Event.objects.active().filter(session_id=session_id)
    # The event's own session (so that `session_id` may be an OuterRef of a query above).
    turns = models.Turn.objects.filter(session_id=OuterRef("session_id")).values("id")
    return Exists(events.exclude(turn_id__in=turns))


def legacy_after_append(session_id: str, turn_ids: Sequence[str]) -> dict[str, Any]:
    """The session row's `has_legacy_events` once events of `turn_ids` are appended, as
    an expression for the append's own UPDATE of that row (no statement of its own):
    true when it was, or when one of them names no turn record of the session."""
    turns = models.Turn.objects.filter(session_id=session_id)
    unknown = [~Exists(turns.filter(pk=turn_id)) for turn_id in dict.fromkeys(turn_ids)]
    condition = Q(has_legacy_events=True)
    for expression in unknown:
        condition |= Q(expression)
    return {"has_legacy_events": ExpressionWrapper(condition, output_field=BooleanField())}


def legacy_after_begin(session_id: str) -> dict[str, Any]:
    """The session row's `has_legacy_events` once a turn record is added, for the UPDATE
    that records it: recomputed (`legacy_events_exist`) only when it was true, since a
    new record can only turn legacy events into a turn's."""
    return {
        "has_legacy_events": Case(
            When(has_legacy_events=True, then=legacy_events_exist(session_id)),
            default=Value(False),
            output_field=BooleanField(),
        )
    }
