"""Sessions, turns, outcomes and the store protocols (docs/runtime.md §2).

- `Session`: one conversation; its `state` is a JSON object fed by events' state deltas.
- `Turn`: one user turn with a status, a reason and a safe `TurnFailure`.
- `SessionService`: the required async store of sessions and events.
- `TurnStore` and `RunLock`: optional capabilities of a session service. The runner
  detects them with ``isinstance`` (the protocols are runtime-checkable), so a store that
  keeps no turns simply does not define those methods (legacy rollback semantics).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentops.runtime.errors import InvalidOutcomeError
from agentops.runtime.model import Event, as_utc

__all__ = [
    "FAILURE_CODE_RE",
    "TEMP_STATE_PREFIX",
    "FailureStage",
    "RunLock",
    "Session",
    "SessionService",
    "Turn",
    "TurnFailure",
    "TurnOutcome",
    "TurnReason",
    "TurnStatus",
    "TurnStore",
    "failure_code_of",
    "is_valid_failure_code",
    "persisted_state",
    "validate_outcome",
]

#: A failure code: 1-128 characters of lower-case letters, digits, ``_ . -`` (docs/runtime.md §2),
#: so free text (say, an instruction to a model) can never pass as a code.
FAILURE_CODE_RE = re.compile(r"[a-z0-9_.-]{1,128}")


def is_valid_failure_code(code: str) -> bool:
    """True when `code` matches `FAILURE_CODE_RE` completely (docs/runtime.md §2)."""
    return FAILURE_CODE_RE.fullmatch(code) is not None


# A word boundary inside a CamelCase name ("RateLimit|Error", "HTTP|Error", "Error|404").
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_OUTSIDE_FAILURE_CODE = re.compile(r"[^a-z0-9_.-]+")
# A class's repr, as some instrumentations send an error type: "<class 'openai.APIError'>".
_CLASS_REPR = re.compile(r"<class '([^']*)'>")


def failure_code_of(value: object, default: str = "agent_error") -> str:
    """`value` (an exception type name such as ``openai.RateLimitError``, a vendor's error
    code) squeezed into a failure code (docs/runtime.md §2): CamelCase words split by
    ``_``, lower-cased, runs of other characters as ``_``, cut to 128 characters
    (``openai.rate_limit_error``; a class's repr, ``<class 'openai.RateLimitError'>``, as
    its name); `default` when nothing is left."""
    text = str(value or "").strip()
    words = _CAMEL_BOUNDARY.sub("_", _CLASS_REPR.sub(r"\1", text))
    code = _OUTSIDE_FAILURE_CODE.sub("_", words.lower()).strip("_")[:128].rstrip("_")
    return code if is_valid_failure_code(code) else default


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TurnStatus(StrEnum):
    """Lifecycle of a turn (docs/runtime.md §2). "Legacy" is not a status: it is a missing
    record."""

    RUNNING = "running"
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    FAILED = "failed"

    @property
    def is_terminal(self) -> bool:
        """True for every status except running."""
        return self is not TurnStatus.RUNNING


class TurnReason(StrEnum):
    """Why a turn did not complete (docs/runtime.md §2); NONE ("") for running and completed
    turns."""

    NONE = ""
    CANCELED = "canceled"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    CONSUMER_STOPPED = "consumer_stopped"
    AGENT_ERROR = "agent_error"
    ABANDONED = "abandoned"


class FailureStage(StrEnum):
    """Where a turn failed (docs/runtime.md §2)."""

    AGENT = "agent"
    PROVIDER = "provider"
    TOOL = "tool"
    PERSISTENCE = "persistence"
    CONSUMER = "consumer"


_STAGES = frozenset(s.value for s in FailureStage)
_INTERRUPT_REASONS = frozenset(
    {
        TurnReason.CANCELED,
        TurnReason.DEADLINE_EXCEEDED,
        TurnReason.CONSUMER_STOPPED,
        TurnReason.ABANDONED,
    }
)


class TurnFailure(_Value):
    """Safe, structured information about a failed turn (docs/runtime.md §2, 6).

    - `code`: stable machine code, valid when it matches `FAILURE_CODE_RE`.
    - `message`: text safe to store and show; never arbitrary exception text.
    - `stage`: a `FailureStage` value, or "" for "fill in from context" (the default
      classifier fills an empty stage with the stage where the error happened).

    Construction does not validate code or stage, so a custom classifier *can* return an
    invalid failure; `validate_outcome` (called by every `TurnStore.finalize_turn`)
    rejects it with `InvalidOutcomeError`.
    """

    code: str
    message: str = ""
    stage: str = ""

    @property
    def is_valid(self) -> bool:
        """True when the code matches `FAILURE_CODE_RE` and the stage is a `FailureStage`."""
        return is_valid_failure_code(self.code) and self.stage in _STAGES


class TurnOutcome(_Value):
    """How a turn ended: terminal status, reason, optional failure (docs/runtime.md §2).

    Validity is checked by `validate_outcome`, not at construction, so stores can report
    exactly what was wrong with an outcome they were asked to record.
    """

    status: TurnStatus
    reason: TurnReason = TurnReason.NONE
    failure: TurnFailure | None = None


def validate_outcome(outcome: TurnOutcome) -> None:
    """Raise `InvalidOutcomeError` unless `outcome` is valid (docs/runtime.md §2).

    Valid means: the status is terminal; ``completed`` has no reason and no failure;
    ``interrupted`` has reason canceled, deadline_exceeded, consumer_stopped or
    abandoned; ``failed`` has reason agent_error; a failure, when present, has a valid
    code and a valid stage.
    """
    status, reason, failure = outcome.status, outcome.reason, outcome.failure
    problem = ""
    if not status.is_terminal:
        problem = f"status {status.value!r} is not terminal"
    elif status is TurnStatus.COMPLETED and (reason or failure is not None):
        problem = "a completed turn has no reason and no failure"
    elif status is TurnStatus.INTERRUPTED and reason not in _INTERRUPT_REASONS:
        problem = f"reason {reason.value!r} is not valid for an interrupted turn"
    elif status is TurnStatus.FAILED and reason is not TurnReason.AGENT_ERROR:
        problem = f"reason {reason.value!r} is not valid for a failed turn"
    elif failure is not None and not is_valid_failure_code(failure.code):
        problem = f"failure code {failure.code[:140]!r} does not match {FAILURE_CODE_RE.pattern}"
    elif failure is not None and failure.stage not in _STAGES:
        problem = f"failure stage {failure.stage[:40]!r} is not one of {sorted(_STAGES)}"
    if problem:
        raise InvalidOutcomeError(status.value, reason.value, problem)


class Session(_Value):
    """One conversation of an app with a user (docs/runtime.md §2).

    `state` is a JSON object; stores merge each stored event's `state_delta` into it
    (top-level keys, last write wins). Keys starting with ``temp:`` are never persisted
    (`persisted_state`). Timestamps are UTC.
    """

    id: str
    app_name: str
    user_id: str = ""
    state: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime

    @field_validator("created_at", "updated_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return as_utc(value)


#: State keys with this prefix live only in the values a store hands back from the call
#: that set them (docs/runtime.md §2 "Temporary state"): never persisted.
TEMP_STATE_PREFIX = "temp:"


def persisted_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """A new dict of `state`'s top-level entries whose key does not start with ``temp:``
    (`TEMP_STATE_PREFIX`): what a store keeps of a state or a state delta (docs/runtime.md §2).
    Values are shared, not copied."""
    return {key: value for key, value in state.items() if not key.startswith(TEMP_STATE_PREFIX)}


class Turn(_Value):
    """Durable record of one user turn (docs/runtime.md §2).

    `started_at` and `finished_at` are UTC; `finished_at` is None while running.
    `reason` is NONE ("") while running and for completed turns.
    """

    id: str
    session_id: str
    status: TurnStatus = TurnStatus.RUNNING
    reason: TurnReason = TurnReason.NONE
    failure: TurnFailure | None = None
    started_at: datetime
    finished_at: datetime | None = None

    @field_validator("started_at", "finished_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else as_utc(value)

    @property
    def outcome(self) -> TurnOutcome:
        """The turn's (status, reason, failure) as a `TurnOutcome`."""
        return TurnOutcome(status=self.status, reason=self.reason, failure=self.failure)


@runtime_checkable
class SessionService(Protocol):
    """Async store of sessions and their events (docs/runtime.md §2). Required by the runner."""

    async def create_session(
        self,
        app_name: str,
        user_id: str = "",
        *,
        session_id: str | None = None,
        state: dict[str, Any] | None = None,
    ) -> Session:
        """Create and return a session (id generated when None); duplicate id -> ValueError."""
        ...

    async def get_session(self, session_id: str) -> Session | None:
        """The session, or None when it does not exist."""
        ...

    async def list_events(self, session_id: str) -> list[Event]:
        """Active events (not soft-deleted, not archived) in conversation (id) order.

        Raises `SessionNotFoundError` for an unknown session.
        """
        ...

    async def append_event(self, event: Event) -> Event:
        """Store a complete event of `event.session_id` and return the stored copy.

        Assigns a positive, growing id and UTC timestamps, and merges `state_delta` into the
        session state in the same transaction. Raises `SessionNotFoundError` for an
        unknown session and `ValueError` for a partial event.
        """
        ...

    async def delete_event(self, session_id: str, event_id: int) -> None:
        """Soft-delete one event; raises `EventNotFoundError` when there is no such event."""
        ...


@runtime_checkable
class TurnStore(Protocol):
    """Optional capability: durable turn records (docs/runtime.md §2)."""

    async def begin_turn(self, session_id: str, turn: Turn) -> Turn:
        """Record a new running turn of `session_id` and return the stored copy.

        Raises `InvalidTurnError` for an empty id, a `turn.session_id` other than
        `session_id`, a status other than running, or a duplicate id, and
        `SessionNotFoundError` for an unknown session.
        """
        ...

    async def finalize_turn(self, turn_id: str, outcome: TurnOutcome) -> Turn:
        """Atomically move a running turn to a terminal outcome; sets `finished_at` (UTC).

        Raises `InvalidOutcomeError` for an invalid outcome, `TurnNotFoundError` for an
        unknown id and `TurnStateConflictError` (carrying the current status) when the
        turn is already terminal.
        """
        ...

    async def get_turn(self, turn_id: str) -> Turn | None:
        """The turn, or None when missing."""
        ...

    async def list_turns(self, session_id: str) -> list[Turn]:
        """The session's turns ordered by `started_at`, then `id`, ascending."""
        ...

    async def interrupt_running_turns(self, session_id: str, reason: TurnReason) -> list[Turn]:
        """Mark every running turn of the session interrupted with `reason`; return them."""
        ...


@runtime_checkable
class RunLock(Protocol):
    """Optional capability: serialise runs of one session (docs/runtime.md §2)."""

    def run_lock(
        self, app_name: str, user_id: str, session_id: str
    ) -> AbstractAsyncContextManager[None]:
        """An async context manager holding the lock for key (app, user, session).

        Waiting may be cancelled (raises `asyncio.CancelledError`, lock not taken). A
        cross-process implementation must release the lock when its holder dies.
        """
        ...


def turns_by_id(turns: Sequence[Turn]) -> dict[str, Turn]:
    """Index turns by id (later duplicates win)."""
    return {turn.id: turn for turn in turns}
