"""The product's projector: what an imported agent really sends, with recorded tool outcomes.

Compaction: an event with author "compaction" (role user, `COMPACTION_AUTHOR`) stands for
a compaction the source transcript records (Claude Code's "This session is being
continued..." summary). After it, the agent sends that summary and what came after it,
never the summarised history: `live_history` keeps the events from the last compaction
on, and everything before it is *compacted* (shown greyed, never projected). Events of
an abandoned rewind branch are stored archived, so they are not active history at all.

State changes: an event with nothing a model reads (no text, parts, reasoning or tool
calls, and not a tool result; e.g. an imported ADK state-only event) is a fact of the
session (its `state_delta`) but is never sent: the product history leaves it out before
the runtime's default projection, which replays completed turns exactly as stored.

When a person records what happened to a tool call that has no stored result
(`ToolOutcome`: "did not run", or "ran, with this result"), or decides on a call awaiting
them ("approved" / "rejected"), this projector inserts a
synthetic tool-result event (id 0, never stored, author "operator") right after the
assistant event's contiguous tool results, so the call's group closes and the session can
resume. Everything else is the runtime's default projection (docs/runtime.md §4); the runner still
validates the tool protocol of the result (docs/runtime.md §3 step 7). Stored history is untouched.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async

from agentops.runtime.model import Content, Event, Role, ToolResponse
from agentops.runtime.projection import (
    ProjectionExplanation,
    ProjectionInput,
    explain_projection,
    project_default,
)
from agentops.runtime.protocol import OrphanResult, inspect_orphan_results, inspect_tool_protocol
from agentops.runtime.session import Turn

#: Author of the synthetic results (display only; never sent to a model as such).
OUTCOME_AUTHOR = "operator"
#: Author of a compaction event: the summary an agent resumes from (role user, not a prompt).
COMPACTION_AUTHOR = "compaction"


def compaction_index(events: Sequence[Event]) -> int:
    """The index of the last compaction event in `events` (author `COMPACTION_AUTHOR`,
    role user), or -1 when there is none."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.author == COMPACTION_AUTHOR and event.content.role is Role.USER:
            return index
    return -1


def is_state_only(event: Event) -> bool:
    """True for an event with nothing a model reads: no text, parts, reasoning or tool
    calls, and not a tool result (a state change only). Never sent to a model."""
    content = event.content
    return content.role is not Role.TOOL and not (
        content.text or content.parts or content.reasoning or content.tool_calls
    )


def live_history(events: Sequence[Event]) -> list[Event]:
    """What the agent really sends of `events`: from the last compaction event on (the
    summary and what came after it), or all of them when there was no compaction."""
    return list(events[max(compaction_index(events), 0) :])


@dataclass(frozen=True, slots=True)
class RecordedOutcome:
    """A `ToolOutcome` row as a plain value: which call, what happened, who said so (UTC)."""

    event_id: int
    call_id: str
    tool_name: str
    outcome: str  # "did_not_run", "ran", "approved" or "rejected"
    result: Any
    reason: str
    recorded_by: str
    recorded_at: datetime


def outcome_result_event(assistant: Event, outcome: RecordedOutcome) -> Event:
    """The synthetic tool-result event for `outcome` of a call of `assistant` (id 0).

    "ran" gives a success whose value is the recorded result; "did_not_run" a handled
    error telling the model the call was not executed, with the recorded reason;
    "approved" a success carrying the person's decision and note; "rejected" a handled
    error saying the person declined, with their note.
    """
    note = f" Note: {outcome.reason}" if outcome.reason else ""
    if outcome.outcome == "ran":
        response = ToolResponse(
            tool_call_id=outcome.call_id, name=outcome.tool_name, result=outcome.result
        )
    elif outcome.outcome == "approved":
        response = ToolResponse(
            tool_call_id=outcome.call_id,
            name=outcome.tool_name,
            result={"decision": "approved", "by": outcome.recorded_by, "note": outcome.reason},
        )
    elif outcome.outcome == "rejected":
        response = ToolResponse(
            tool_call_id=outcome.call_id,
            name=outcome.tool_name,
            error=f"The person rejected this tool call; it was not executed.{note}",
        )
    else:
        response = ToolResponse(
            tool_call_id=outcome.call_id,
            name=outcome.tool_name,
            error=(
                "This tool call was not executed (recorded by an operator after the run "
                f"stopped). Reason: {outcome.reason}"
            ),
        )
    return Event(
        session_id=assistant.session_id,
        turn_id=assistant.turn_id,
        author=OUTCOME_AUTHOR,
        content=Content(role=Role.TOOL, tool_response=response),
    )


def apply_tool_outcomes(
    events: Sequence[Event], outcomes: Mapping[tuple[int, str], RecordedOutcome]
) -> list[Event]:
    """`events` with a synthetic result inserted for every unanswered call that has a
    recorded outcome, keyed by (assistant event id, call id).

    Unanswered calls are those the runtime's inspector reports (docs/runtime.md §5); a call that has
    a stored result is never answered twice. Each insertion goes after the assistant event's
    contiguous tool events, where the inspector looks for results. The input is not mutated.
    """
    if not outcomes:
        return list(events)
    inserts: dict[int, list[Event]] = {}
    for issue in inspect_tool_protocol(events):
        assistant = events[issue.position]
        extra = [
            outcome_result_event(assistant, outcomes[(issue.event_id, call.id)])
            for call in issue.tool_calls
            if (issue.event_id, call.id) in outcomes
        ]
        if extra:
            end = issue.position + 1
            while end < len(events) and events[end].content.role is Role.TOOL:
                end += 1
            inserts.setdefault(end, []).extend(extra)
    if not inserts:
        return list(events)
    result: list[Event] = []
    for index, event in enumerate(events):
        result.extend(inserts.get(index, ()))
        result.append(event)
    result.extend(inserts.get(len(events), ()))
    return result


def load_outcomes(
    session_id: str, event_ids: Collection[int] | None = None, *, after: int = 0
) -> dict[tuple[int, str], RecordedOutcome]:
    """The session's recorded outcomes keyed by (assistant event id, call id); only those
    of the assistant events `event_ids` when given, of events above `after`. One query."""
    from sessions_app.models import ToolOutcome

    rows = ToolOutcome.objects.filter(session_id=session_id).select_related("recorded_by")
    if after:
        rows = rows.filter(event_id__gt=after)
    if event_ids is not None:
        rows = rows.filter(event_id__in=list(event_ids))
    return {
        (row.event_id, row.call_id): RecordedOutcome(
            event_id=row.event_id,
            call_id=row.call_id,
            tool_name=row.tool_name,
            outcome=row.outcome,
            result=row.result,
            reason=row.reason,
            recorded_by=row.recorded_via
            or (row.recorded_by.get_username() if row.recorded_by else ""),
            recorded_at=row.recorded_at,
        )
        for row in rows
    }


@dataclass(frozen=True, slots=True)
class ProductExplanation:
    """The product projection of a session, with its reasons.

    - `explanation`: the runtime's explanation of the live history (docs/runtime.md §4);
    - `compacted`: the stored events before the last compaction (never sent);
    - `compaction`: that compaction event, or None;
    - `orphans`: tool results of the live history that answer no call (docs/runtime.md §5):
      the context would send them, and providers reject such a history;
    - `awaiting_user`: ids of the session's calls the source marks as waiting for a person
      (`Event.pending_call_ids`: approvals, long-running calls, questions);
    - `compaction_raw`: the stored `raw` of the compaction event (its facts), or None;
    - `state_only`: events of the live history that only change state (`is_state_only`):
      facts of the session, never sent.
    """

    explanation: ProjectionExplanation
    compacted: tuple[Event, ...] = ()
    compaction: Event | None = None
    orphans: tuple[OrphanResult, ...] = ()
    awaiting_user: frozenset[str] = frozenset()
    compaction_raw: Any = None
    state_only: tuple[Event, ...] = ()


def product_history(
    events: Sequence[Event],
    outcomes: Mapping[tuple[int, str], RecordedOutcome],
    *,
    drop_state_only: bool = True,
) -> tuple[list[Event], list[Event]]:
    """(compacted, live) of `events`: the live history (`live_history`) with recorded
    outcomes applied, and the compacted events before it. State-only events leave the live
    history (`drop_state_only`) unless the caller's events carry no content to tell them
    by (the resume status reads only the tool-protocol facts of each event)."""
    cut = max(compaction_index(events), 0)
    live = [e for e in events[cut:] if not (drop_state_only and is_state_only(e))]
    return list(events[:cut]), apply_tool_outcomes(live, outcomes)


def explain_product_projection(
    session_id: str, turns: Sequence[Turn], events: Sequence[Event]
) -> ProductExplanation:
    """The runtime's `explain_projection` of the live history with recorded outcomes applied
    (what the product projector would give the next turn's agent), the compacted events,
    the orphan results and the calls awaiting the user. Three queries at most."""
    from sessions_app.models import Event as EventRow

    compacted, live = product_history(events, load_outcomes(session_id))
    compaction = live[0] if compaction_index(events) >= 0 else None
    pending = EventRow.objects.filter(session_id=session_id, role=Role.ASSISTANT.value)
    return ProductExplanation(
        explanation=explain_projection(turns, live),
        compacted=tuple(compacted),
        compaction=compaction,
        state_only=tuple(e for e in events[max(compaction_index(events), 0) :] if is_state_only(e)),
        orphans=tuple(inspect_orphan_results(live)),
        awaiting_user=frozenset(
            call for ids in pending.values_list("pending_call_ids", flat=True) for call in ids
        ),
        compaction_raw=(
            EventRow.objects.filter(pk=compaction.id).values_list("raw", flat=True).first()
            if compaction is not None
            else None
        ),
    )


class ProductProjector:
    """`Projector` for runs of the dashboard: the live history (from the last compaction
    on), recorded outcomes, then the default projection.

    Raises `ToolExecutionUnknownError` like the default one when calls stay unanswered.
    """

    async def project(self, projection_input: ProjectionInput) -> list[Event]:
        events = projection_input.events
        if not events:
            return project_default(projection_input)
        outcomes = await sync_to_async(load_outcomes)(events[0].session_id)
        _compacted, live = product_history(events, outcomes)
        return project_default(ProjectionInput(turns=projection_input.turns, events=live))
