"""Tool-protocol inspection: assistant tool calls without durable results, and tool results
without a call (docs/runtime.md §5).

Every function is linear in the number of events (each event is looked at once, each
call id is matched with O(1) dict and list operations).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentops.runtime.errors import NothingToContinueError, ToolExecutionUnknownError
from agentops.runtime.model import Event, Role, ToolCall

__all__ = [
    "NOTHING_TO_CONTINUE",
    "OrphanResult",
    "ToolProtocolIssue",
    "continuation_problem",
    "inspect_orphan_results",
    "inspect_tool_protocol",
    "validate_continuation",
    "validate_tool_protocol",
]

#: Why a history cannot be continued without a new user message (docs/runtime.md §3
#: "Continuing a turn"): fixed texts, safe to show.
NOTHING_TO_CONTINUE = {
    "empty": "the session has no history to continue",
    "not_tool": "the history does not end with a tool result",
    "no_call": "the last assistant message asked for no tool call",
    "unanswered": "a tool call of the last assistant message has no result",
}


@dataclass(frozen=True, slots=True)
class ToolProtocolIssue:
    """One assistant event whose tool calls are not all answered (docs/runtime.md §5).

    `event_id` is the assistant event's id (0 if it was never stored), `tool_calls` only
    the unmatched calls in their original order, `position` the event's index in the
    inspected sequence.
    """

    session_id: str
    turn_id: str
    event_id: int
    tool_calls: tuple[ToolCall, ...]
    position: int

    def to_error(self) -> ToolExecutionUnknownError:
        """The `ToolExecutionUnknownError` describing this issue."""
        return ToolExecutionUnknownError(
            self.session_id, self.turn_id, self.event_id, self.tool_calls
        )


@dataclass(frozen=True, slots=True)
class OrphanResult:
    """A tool event that answers no call (docs/runtime.md §5, orphan results).

    `event_id` is the tool event's id (0 if never stored), `call_id` the call id it names
    (`Content.answered_call_id`, maybe ""), `position` its index in the inspected sequence.
    Anthropic's Messages API, the OpenAI Responses API and Google ADK reject a history
    holding such a result.
    """

    session_id: str
    turn_id: str
    event_id: int
    call_id: str
    position: int


_ASSISTANT = Role.ASSISTANT
_TOOL = Role.TOOL


def _scan(
    events: Sequence[Event],
    start: int,
    stop: int,
    orphans: list[OrphanResult] | None = None,
) -> list[ToolProtocolIssue]:
    """Issues of ``events[start:stop]`` (positions relative to `events`), without copying.

    When `orphans` is given, every tool event that answers no call is appended to it.
    """
    issues: list[ToolProtocolIssue] = []
    i = start
    while i < stop:
        position = i
        event = events[i]
        content = event.content
        calls = content.tool_calls
        i += 1
        if not calls or content.role != _ASSISTANT:
            if orphans is not None and content.role == _TOOL:
                orphans.append(_orphan(event, position))
            continue
        # Call id -> positions of not-yet-matched calls with that id, reversed so that
        # list.pop() yields the *first* unmatched one in O(1).
        waiting: dict[str, list[int]] = {}
        for index in range(len(calls) - 1, -1, -1):
            waiting.setdefault(calls[index].id, []).append(index)
        open_calls = len(calls)
        turn_id = event.turn_id
        while i < stop:
            result = events[i]
            result_content = result.content
            if result_content.role != _TOOL:
                break
            i += 1
            if open_calls and result.turn_id == turn_id:
                positions = waiting.get(result_content.answered_call_id)
                if positions:
                    positions.pop()
                    open_calls -= 1
                    continue
            if orphans is not None:
                orphans.append(_orphan(result, i - 1))
        # Scanning resumes after the tool run (i already points there), so a later group
        # reusing a call id can never close this one.
        if open_calls:
            unmatched = sorted(index for positions in waiting.values() for index in positions)
            issues.append(
                ToolProtocolIssue(
                    session_id=event.session_id,
                    turn_id=turn_id,
                    event_id=event.id,
                    tool_calls=tuple(calls[index] for index in unmatched),
                    position=position,
                )
            )
    return issues


def _orphan(event: Event, position: int) -> OrphanResult:
    return OrphanResult(
        session_id=event.session_id,
        turn_id=event.turn_id,
        event_id=event.id,
        call_id=event.content.answered_call_id,
        position=position,
    )


def inspect_orphan_results(events: Sequence[Event]) -> list[OrphanResult]:
    """Every tool event that answers no call, in order (docs/runtime.md §5, orphans).

    A tool event answers a call exactly when `inspect_tool_protocol`'s matching uses it:
    it sits in the run of tool events right after an assistant event with calls, has that
    event's turn id, and is the first result for a not-yet-matched call with its id. Every
    other tool event (after a user or plain assistant event, from another turn, unknown,
    extra or duplicate) is an orphan. Orphans do not change the dangling-call verdicts and
    the projection never refuses because of them. Never raises; never mutates `events`.
    """
    orphans: list[OrphanResult] = []
    _scan(events, 0, len(events), orphans)
    return orphans


def inspect_tool_protocol(events: Sequence[Event]) -> list[ToolProtocolIssue]:
    """Every assistant tool-call event whose calls are not all answered, in order
    (docs/runtime.md §5).

    For each assistant event with tool calls, the events right after it are scanned while
    their role is tool. A tool event with another turn id is skipped without ending the
    scan ("" equals ""). Each result marks the first not-yet-matched call with the same id
    (`Content.answered_call_id`); extra, duplicate and unknown results are ignored.
    Scanning resumes after the tool run. Never raises; never mutates `events`.
    """
    return _scan(events, 0, len(events))


def validate_tool_protocol(events: Sequence[Event]) -> None:
    """Raise `ToolExecutionUnknownError` for the first issue of `events`; else return None.

    The error carries the session id, turn id, assistant event id and only the unmatched
    calls; its `turn_failure()` is code ``tool_execution_unknown``, stage ``tool``, with a
    fixed safe message (docs/runtime.md §5).
    """
    issues = _scan(events, 0, len(events))
    if issues:
        raise issues[0].to_error()


def continuation_problem(events: Sequence[Event]) -> str:
    """Why `events` (a projected context) cannot be continued without a new user message,
    as a key of `NOTHING_TO_CONTINUE`, or "" when it can: its last assistant event asked
    for tool calls, every event after it is a tool result, and each of its calls is
    answered (docs/runtime.md §3 "Continuing a turn"). Linear; never raises."""
    if not events:
        return "empty"
    if events[-1].content.role is not Role.TOOL:
        return "not_tool"
    last = len(events) - 1
    while last >= 0 and events[last].content.role is Role.TOOL:
        last -= 1
    if last < 0 or events[last].content.role is not Role.ASSISTANT:
        return "no_call"
    if not events[last].content.tool_calls:
        return "no_call"
    if inspect_tool_protocol(events[last:]):
        return "unanswered"
    return ""


def validate_continuation(session_id: str, events: Sequence[Event]) -> None:
    """Raise `NothingToContinueError` when `continuation_problem(events)` names a problem."""
    problem = continuation_problem(events)
    if problem:
        event_id = events[-1].id if events else 0
        raise NothingToContinueError(session_id, event_id, problem, NOTHING_TO_CONTINUE[problem])
