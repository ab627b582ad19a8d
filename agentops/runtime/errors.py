"""Named runtime errors; each carries the ids it is about as attributes (CONVENTIONS 9).

Messages contain ids and fixed wording only, never payload text, so they are safe to log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentops.runtime.model import ToolCall
    from agentops.runtime.session import TurnFailure

__all__ = [
    "TOOL_EXECUTION_UNKNOWN_CODE",
    "TOOL_EXECUTION_UNKNOWN_MESSAGE",
    "AgentOpsRuntimeError",
    "EventNotFoundError",
    "InvalidEventError",
    "InvalidOutcomeError",
    "InvalidTurnError",
    "NothingToContinueError",
    "SessionNotFoundError",
    "ToolExecutionUnknownError",
    "TurnNotFoundError",
    "TurnStateConflictError",
]

#: Failure code recorded for a turn refused because of unanswered tool calls (docs/runtime.md §5).
TOOL_EXECUTION_UNKNOWN_CODE = "tool_execution_unknown"
#: Fixed, safe message of that failure (docs/runtime.md §5).
TOOL_EXECUTION_UNKNOWN_MESSAGE = (
    "Stored history contains tool calls without a recorded result, so whether they ran is "
    "unknown. Record their outcome before continuing this session."
)


class AgentOpsRuntimeError(Exception):
    """Base class of every error the runtime raises on its own account."""


class SessionNotFoundError(AgentOpsRuntimeError, LookupError):
    """The session `session_id` does not exist (docs/runtime.md §3 step 2)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"session {session_id!r} not found")


class EventNotFoundError(AgentOpsRuntimeError, LookupError):
    """No active event `event_id` in session `session_id`."""

    def __init__(self, session_id: str, event_id: int) -> None:
        self.session_id = session_id
        self.event_id = event_id
        super().__init__(f"event {event_id} not found in session {session_id!r}")


class InvalidEventError(AgentOpsRuntimeError, ValueError):
    """An event a store refuses to append (for example a partial one); `problem` says why."""

    def __init__(self, session_id: str, problem: str) -> None:
        self.session_id = session_id
        self.problem = problem
        super().__init__(f"session {session_id!r}: {problem}")


class TurnNotFoundError(AgentOpsRuntimeError, LookupError):
    """No turn `turn_id` (docs/runtime.md §2, finalize)."""

    def __init__(self, turn_id: str) -> None:
        self.turn_id = turn_id
        super().__init__(f"turn {turn_id!r} not found")


class TurnStateConflictError(AgentOpsRuntimeError):
    """Turn `turn_id` is already terminal with `status`; only running turns finalize."""

    def __init__(self, turn_id: str, status: str) -> None:
        self.turn_id = turn_id
        self.status = status
        super().__init__(f"turn {turn_id!r} is already {status}")


class InvalidTurnError(AgentOpsRuntimeError, ValueError):
    """A turn a store refuses to begin (empty id, wrong session, not running, duplicate)."""

    def __init__(self, turn_id: str, problem: str) -> None:
        self.turn_id = turn_id
        self.problem = problem
        super().__init__(f"turn {turn_id!r}: {problem}")


class InvalidOutcomeError(AgentOpsRuntimeError, ValueError):
    """A (status, reason, failure) outcome that breaks docs/runtime.md §2; `problem` says which
    rule."""

    def __init__(self, status: str, reason: str, problem: str) -> None:
        self.status = status
        self.reason = reason
        self.problem = problem
        super().__init__(f"invalid turn outcome {status}/{reason or '-'}: {problem}")


class ToolExecutionUnknownError(AgentOpsRuntimeError):
    """Stored history has tool calls without a durable result (docs/runtime.md §5).

    Attributes: `session_id`, `turn_id` ("" for legacy events), `event_id` (the
    assistant event holding the calls) and `tool_calls` (only the unmatched calls, in
    their original order). The runner raises it before storing the user input or calling
    the agent. `turn_failure()` gives the safe failure recorded for the refused turn.
    """

    def __init__(
        self, session_id: str, turn_id: str, event_id: int, tool_calls: Sequence[ToolCall]
    ) -> None:
        self.session_id = session_id
        self.turn_id = turn_id
        self.event_id = event_id
        self.tool_calls: tuple[ToolCall, ...] = tuple(tool_calls)
        ids = ", ".join(repr(call.id) for call in self.tool_calls)
        super().__init__(
            f"tool execution unknown: session {session_id!r}, turn {turn_id!r}, "
            f"event {event_id}: no result for call(s) {ids}"
        )

    @property
    def call_ids(self) -> list[str]:
        """Ids of the unmatched calls, in order."""
        return [call.id for call in self.tool_calls]

    def turn_failure(self) -> TurnFailure:
        """Code ``tool_execution_unknown``, stage ``tool``, and a fixed safe message."""
        from agentops.runtime.session import FailureStage, TurnFailure

        return TurnFailure(
            code=TOOL_EXECUTION_UNKNOWN_CODE,
            message=TOOL_EXECUTION_UNKNOWN_MESSAGE,
            stage=FailureStage.TOOL,
        )


class NothingToContinueError(AgentOpsRuntimeError):
    """A continuation turn was asked for, but the projected history does not end with the
    results of its last assistant event's tool calls (docs/runtime.md §3 "Continuing a
    turn"). Raised before a turn is begun: nothing is stored.

    Attributes: `session_id`, `event_id` (the projection's last event, 0 when it is empty
    or synthetic), `key` (a key of `agentops.runtime.protocol.NOTHING_TO_CONTINUE`) and
    `problem`, its fixed text (safe to show).
    """

    def __init__(self, session_id: str, event_id: int, key: str, problem: str) -> None:
        self.session_id = session_id
        self.event_id = event_id
        self.key = key
        self.problem = problem
        super().__init__(f"nothing to continue in session {session_id!r}: {problem}")
