"""A session's stored facts as runtime values, and its resume status.

`load_facts` reads the turns and active events the projector and the tool-protocol
inspector take (docs/runtime.md §4-5); `resume_status` computes (open tool-protocol issue count,
cannot_resume) from them and `orphan_count` the tool results that answer no call, both
on the live history the product projector sends (`sessions_app.projector`: from the last
compaction on); `refresh_resume_status` stores them on the session row, which the
sessions list shows and filters on without loading every session's events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter

from agentops.runtime import errors
from agentops.runtime.model import Event
from agentops.runtime.projection import ProjectionInput, project_default
from agentops.runtime.protocol import inspect_orphan_results, inspect_tool_protocol
from agentops.runtime.session import Turn
from sessions_app import models
from sessions_app.projector import RecordedOutcome, live_history, load_outcomes, product_history
from sessions_app.store.columns import EVENT_RUNTIME_COLUMNS
from sessions_app.store.rows import event_from_values, turn_from_row

__all__ = [
    "ProtocolFacts",
    "load_archived_events",
    "load_events",
    "load_facts",
    "load_turns",
    "orphan_count",
    "protocol_events",
    "refresh_resume_status",
    "resume_status",
]


def load_turns(session_id: str) -> list[Turn]:
    """The session's turns by started_at, then id (index turn_session_order_idx); one query."""
    rows = models.Turn.objects.filter(session_id=session_id).order_by("started_at", "id")
    return [turn_from_row(row) for row in rows]


def load_events(session_id: str) -> list[Event]:
    """The session's active events (not deleted, not archived) in id order; one query."""
    rows = (
        models.Event.objects.active()
        .filter(session_id=session_id)
        .order_by("id")
        .values(*EVENT_RUNTIME_COLUMNS)
    )
    return [event_from_values(row) for row in rows]


def load_archived_events(session_id: str) -> list[Event]:
    """The session's archived events that are not deleted (an abandoned rewind branch of
    an import, or archived history), in id order; one query. Never part of a context."""
    rows = (
        models.Event.objects.filter(
            session_id=session_id, deleted_at__isnull=True, archived_at__isnull=False
        )
        .order_by("id")
        .values(*EVENT_RUNTIME_COLUMNS)
    )
    return [event_from_values(row) for row in rows]


def load_facts(session_id: str) -> tuple[list[Turn], list[Event]]:
    """The session's turns (timeline order) and active events (id order) as runtime values.

    Two queries; the input the projector and the tool-protocol inspector take
    (docs/runtime.md §4-5).
    """
    return load_turns(session_id), load_events(session_id)


def resume_status(
    turns: Sequence[Turn],
    events: Sequence[Event],
    outcomes: Mapping[tuple[int, str], RecordedOutcome] | None = None,
) -> tuple[int, bool]:
    """(open tool-protocol issue count, cannot_resume) of a session's facts.

    `turns` in timeline order, `events` the active events in id order (only ids for order,
    turn ids, roles, tool calls, tool responses and tool call ids matter), `outcomes` the
    recorded tool outcomes keyed by (assistant event id, call id). Recorded outcomes close
    their calls first, as the product projector does; then the issue count is the runtime
    inspector's (docs/runtime.md §5) and cannot_resume says whether the default projection fails
    (docs/runtime.md §4: the next run would be refused), both on the live history (from the
    last compaction on, as the product projector sends it). No query.
    """
    # Only tool-protocol facts are loaded here (no text), so state-only events cannot be
    # told apart: they stay in, as the runtime's own projection keeps them.
    _compacted, events = product_history(events, outcomes or {}, drop_state_only=False)
    issue_count = len(inspect_tool_protocol(events))
    try:
        project_default(ProjectionInput(turns=turns, events=events))
    except errors.ToolExecutionUnknownError:
        return issue_count, True
    return issue_count, False


def orphan_count(events: Sequence[Event]) -> int:
    """How many tool results of the live history answer no call (docs/runtime.md §5,
    orphans; `events` as for `resume_status`). No query."""
    return len(inspect_orphan_results(live_history(events)))


def refresh_resume_status(session_id: str, *, page_facts: bool = True) -> tuple[int, bool]:
    """Recompute and store the session's resume status (`resume_status` of the stored
    turns, active events and recorded outcomes) and its `orphan_count`; returns the
    resume status.

    The full recomputation: reads every active event, so its cost grows with the session.
    Imports, recorded tool outcomes and deletes use it; appends and turn finishes keep the
    status current incrementally (`sessions_app.store.resume_delta`), falling back to it
    for histories the local rules do not cover; tests use it as their oracle. Call it
    inside the transaction that changed those facts. Also recomputes the kept page facts
    (`page_facts.refresh_page_facts`) unless `page_facts` is false (an append, which
    keeps them itself). Five queries, plus one per distinct changed mark.
    """
    from sessions_app.store.page_facts import refresh_page_facts

    turns = load_turns(session_id)
    # Only what the tool protocol and the projection verdict depend on: no text, parts,
    # reasoning or usage, so large sessions are not decoded in full.
    rows = (
        models.Event.objects.active()
        .filter(session_id=session_id)
        .order_by("id")
        .values_list(
            "id", "turn_id", "role", "tool_calls", "tool_response", "tool_call_id", "author"
        )
    )
    events = protocol_events(session_id, rows)
    issue_count, cannot_resume = resume_status(turns, events, load_outcomes(session_id))
    models.Session.objects.filter(pk=session_id).update(
        protocol_issue_count=issue_count,
        cannot_resume=cannot_resume,
        orphan_result_count=orphan_count(events),
        **(refresh_page_facts(session_id, events) if page_facts else {}),
    )
    return issue_count, cannot_resume


ProtocolFacts = tuple[
    int, str, str, Sequence[Mapping[str, Any]] | None, Mapping[str, Any] | None, str, str
]
"""(event id, turn id, role, tool calls, tool response, tool call id, author) of one event
(the author tells a compaction event, `sessions_app.projector.COMPACTION_AUTHOR`)."""

_EVENT_LIST = TypeAdapter(list[Event])


def protocol_events(session_id: str, facts: Iterable[ProtocolFacts]) -> list[Event]:
    """Runtime `Event`s holding only what the tool protocol and the projection verdict
    read (`resume_status`), validated in one pydantic call (nested models validated in
    pydantic-core). Raises pydantic.ValidationError for shapes docs/runtime.md §1 does not allow."""
    return _EVENT_LIST.validate_python(
        [
            {
                "id": event_id,
                "session_id": session_id,
                "turn_id": turn_id,
                "author": author,
                "content": {
                    "role": role,
                    "tool_calls": tool_calls or (),
                    "tool_response": tool_response,
                    "tool_call_id": tool_call_id,
                },
            }
            for event_id, turn_id, role, tool_calls, tool_response, tool_call_id, author in facts
        ]
    )
