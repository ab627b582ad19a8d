"""The resume status kept up to date incrementally (docs/runtime.md §4-5; the status is the
one `refresh_resume_status` recomputes from every event).

A session's resume status (`Session.protocol_issue_count`, `Session.cannot_resume`) is a
function of its turns, active events and recorded tool outcomes. Appends and turn
finishes change it only near the end of the history, so these functions look at the
session's last tool-call group or at the finishing turn's events only: their cost does not
grow with the length of the session. Each returns the changes for the session row: ``{}``
when the status is unchanged, or None when the history has a shape the local rules do not
cover (for example a turn whose events are interleaved with another's); the caller then
recomputes in full with `refresh_resume_status`. `tests/test_resume_status.py` checks, for
any sequence of operations, that the result equals the full recomputation.

Why the local rules hold (all inside the operation's transaction, after the session row is
locked):

- The issue count is the runtime inspector's over the active events with recorded outcomes
  applied (docs/runtime.md §5). It does not read turn statuses. A new event that is neither
  a tool result nor an assistant event with calls closes nothing and opens nothing. A new
  assistant event with calls opens one group, unanswered (no outcome can name a new event):
  one issue more. A new tool result can only answer the last group (the scan of every
  earlier group ended at a non-tool event): recount that group alone.
- `cannot_resume` says whether the default projection of the history fails (docs/runtime.md
  §4). Events of a running turn are dropped by it, so appending to a running turn leaves
  the projection unchanged. When a turn finishes whose events are contiguous at the end
  of the history and begin with a non-tool event, its group is appended to the projection
  and the scan of the groups before it ends at that first event: a failed or interrupted
  turn adds a valid group (cut before its first issue, plus a notice), a completed one adds
  its events as stored, so the session cannot resume exactly when it could not before or
  that turn has an issue of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db.models import F, Subquery

from agentops.runtime.model import Event, Role
from agentops.runtime.protocol import inspect_orphan_results, inspect_tool_protocol
from agentops.runtime.session import TurnStatus
from sessions_app import models
from sessions_app.projector import (
    COMPACTION_AUTHOR,
    RecordedOutcome,
    apply_tool_outcomes,
    load_outcomes,
)
from sessions_app.store.resume import protocol_events

__all__ = [
    "GROUP_COLUMNS",
    "status_after_append",
    "status_after_finish",
    "tool_result_counts",
]

#: The columns the local rules read of each event of a tool-call group.
GROUP_COLUMNS = _COLUMNS = (
    "id", "turn_id", "role", "tool_calls", "tool_response", "tool_call_id", "author",
)  # fmt: skip
_TOOL = Role.TOOL.value


def status_after_append(session_id: str, event: Event, event_id: int) -> dict[str, Any] | None:
    """Session-row changes after `event` was stored as `event_id` (the session's newest).

    At most three queries (the turn's status, the last tool-call group, its outcomes), and
    none for an event that is neither a tool result nor an assistant event with calls.
    """
    if event.author == COMPACTION_AUTHOR:
        return None  # everything before it leaves the live history: recompute in full
    role = event.content.role
    opens_group = role is Role.ASSISTANT and bool(event.content.tool_calls)
    if not opens_group and role is not Role.TOOL:
        return {}
    if not _is_running(session_id, event.turn_id):
        return None  # the projection changes too: recompute in full
    if opens_group:
        return {"protocol_issue_count": F("protocol_issue_count") + 1}
    active = models.Event.objects.active().filter(session_id=session_id)
    anchor = active.filter(id__lt=event_id).exclude(role=_TOOL).order_by("-id").values("id")[:1]
    rows = list(
        active.filter(id__gte=Subquery(anchor), id__lte=event_id)
        .order_by("id")
        .values_list(*_COLUMNS)
    )
    counts = tool_result_counts(
        session_id, event.turn_id, event_id, rows,
        lambda first_id: load_outcomes(session_id, event_ids=[first_id]),
    )  # fmt: skip
    if counts is None:
        return None
    return {name: F(name) + change for name, change in counts.items()}


def tool_result_counts(
    session_id: str,
    turn_id: str,
    event_id: int,
    rows: Sequence[tuple[Any, ...]],
    outcomes_of: Callable[[int], dict[tuple[int, str], RecordedOutcome] | None],
) -> dict[str, int] | None:
    """How a tool result `event_id` of running turn `turn_id` changes the session's issue
    counts (``{column: change}``, changes only), from `rows` (`_COLUMNS` of the active
    events from the last non-tool event through `event_id`, in id order) and the outcomes
    recorded on the group's assistant event (`outcomes_of(its id)`; None: unknown). None
    when the local rule does not cover the shape (recompute in full)."""
    if len(rows) < 2 or rows[-1][0] != event_id:
        return None  # no group before it: maybe an orphan result, recompute in full
    first_id, first_turn, first_role, calls = rows[0][0], rows[0][1], rows[0][2], rows[0][3]
    if first_role != Role.ASSISTANT.value or not calls or first_turn != turn_id:
        return None  # nothing it could answer here (or a state change in between)
    outcomes = outcomes_of(first_id)
    if outcomes is None:
        return None
    events = protocol_events(session_id, rows)
    before, after = (
        apply_tool_outcomes(events[:-1], outcomes),
        apply_tool_outcomes(events, outcomes),
    )
    changes: dict[str, int] = {}
    issues = len(inspect_tool_protocol(after)) - len(inspect_tool_protocol(before))
    if issues:
        changes["protocol_issue_count"] = issues
    orphans = len(inspect_orphan_results(after)) - len(inspect_orphan_results(before))
    if orphans:
        changes["orphan_result_count"] = orphans
    return changes


def status_after_finish(session_id: str, turn_id: str, status: TurnStatus) -> dict[str, Any] | None:
    """Session-row changes after running turn `turn_id` became `status` (terminal).

    One query (the turn's events onwards), two for a completed turn with tool calls.
    """
    active = models.Event.objects.active().filter(session_id=session_id)
    first = active.filter(turn_id=turn_id).order_by("id").values("id")[:1]
    rows = list(active.filter(id__gte=Subquery(first)).order_by("id").values_list(*_COLUMNS))
    if not rows:
        return {}  # a turn without events projects to nothing, before and after
    if rows[0][2] == _TOOL or any(row[1] != turn_id for row in rows):
        return None  # not contiguous at the end, or starts inside a tool run
    if any(row[6] == COMPACTION_AUTHOR for row in rows):
        return None  # a compaction moves the live history's start: recompute in full
    if status is not TurnStatus.COMPLETED:
        return {}  # cut before its first issue, plus a notice: always valid
    assistants = [row[0] for row in rows if row[3]]
    if not assistants:
        return {}
    events = protocol_events(session_id, rows)
    outcomes = load_outcomes(session_id, event_ids=assistants)
    if inspect_tool_protocol(apply_tool_outcomes(events, outcomes)):
        return {"cannot_resume": True}
    return {}


def _is_running(session_id: str, turn_id: str) -> bool:
    if not turn_id:
        return False  # legacy: kept by the projection
    status = (
        models.Turn.objects.filter(pk=turn_id, session_id=session_id)
        .values_list("status", flat=True)
        .first()
    )
    return status == TurnStatus.RUNNING.value
