"""The product's projector: the default durable-turn projection plus recorded tool outcomes.

When a person records what happened to a tool call that has no stored result
(`ToolOutcome`: "did not run", or "ran, with this result"), this projector inserts a
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
from agentops.runtime.protocol import inspect_tool_protocol
from agentops.runtime.session import Turn

#: Author of the synthetic results (display only; never sent to a model as such).
OUTCOME_AUTHOR = "operator"


@dataclass(frozen=True, slots=True)
class RecordedOutcome:
    """A `ToolOutcome` row as a plain value: which call, what happened, who said so (UTC)."""

    event_id: int
    call_id: str
    tool_name: str
    outcome: str  # "did_not_run" or "ran"
    result: Any
    reason: str
    recorded_by: str
    recorded_at: datetime


def outcome_result_event(assistant: Event, outcome: RecordedOutcome) -> Event:
    """The synthetic tool-result event for `outcome` of a call of `assistant` (id 0).

    "ran" gives a success whose value is the recorded result; "did_not_run" a handled
    error telling the model the call was not executed, with the recorded reason.
    """
    if outcome.outcome == "ran":
        response = ToolResponse(
            tool_call_id=outcome.call_id, name=outcome.tool_name, result=outcome.result
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
    session_id: str, event_ids: Collection[int] | None = None
) -> dict[tuple[int, str], RecordedOutcome]:
    """The session's recorded outcomes keyed by (assistant event id, call id); only those
    of the assistant events `event_ids` when given. One query."""
    from sessions_app.models import ToolOutcome

    rows = ToolOutcome.objects.filter(session_id=session_id).select_related("recorded_by")
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
            recorded_by=row.recorded_by.get_username() if row.recorded_by else "",
            recorded_at=row.recorded_at,
        )
        for row in rows
    }


def explain_product_projection(
    session_id: str, turns: Sequence[Turn], events: Sequence[Event]
) -> ProjectionExplanation:
    """The runtime's `explain_projection` of the stored facts with recorded outcomes applied
    (what the product projector would give the next turn's agent)."""
    return explain_projection(turns, apply_tool_outcomes(events, load_outcomes(session_id)))


class ProductProjector:
    """`Projector` for runs of the dashboard: recorded outcomes, then the default projection.

    Raises `ToolExecutionUnknownError` like the default one when calls stay unanswered.
    """

    async def project(self, projection_input: ProjectionInput) -> list[Event]:
        events = projection_input.events
        if not events:
            return project_default(projection_input)
        outcomes = await sync_to_async(load_outcomes)(events[0].session_id)
        return project_default(
            ProjectionInput(
                turns=projection_input.turns, events=apply_tool_outcomes(events, outcomes)
            )
        )
