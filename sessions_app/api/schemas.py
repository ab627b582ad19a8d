"""Request and response bodies of the HTTP API (django-ninja schemas, pydantic models).

The OpenAPI document at ``/api/v1/openapi.json`` is derived from these and from the
runtime's own value types (`Event`'s `Content`, `Session`, `Turn`), never written by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from django.utils import timezone
from ninja import Schema
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from agentops.runtime.model import Content, Event, FinishReason, ToolCall, Usage
from agentops.runtime.session import Turn, TurnReason, TurnStatus

__all__ = [
    "AppendIn",
    "AppendOut",
    "ContextOut",
    "EventIn",
    "EventsOut",
    "FailureIn",
    "FinalizeIn",
    "InterruptIn",
    "IssueOut",
    "LeaseIn",
    "LeaseOut",
    "OutcomeIn",
    "OutcomeOut",
    "PartialsIn",
    "Problem",
    "RenewIn",
    "SessionIn",
    "TurnIn",
    "TurnsOut",
]

#: The largest token count an event may carry (a JavaScript number's exact range).
MAX_TOKENS = 2**53 - 1
#: The earliest start a turn may be given.
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)


def plausible_time(value: datetime | None) -> datetime | None:
    """A time a client recorded, with its time zone, from the year 2000 to a day ahead of
    the server's clock (a far-future time would spoil every chart and duration)."""
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError("give the time zone (e.g. 2026-12-01T10:00:00Z)")
    if not EARLIEST <= value <= timezone.now() + timedelta(days=1):
        raise ValueError("must be from 2000-01-01 to a day ahead of the server's clock")
    return value


#: A time a client recorded (`plausible_time`); none: the server's clock.
RecordedTime = Annotated[datetime | None, AfterValidator(plausible_time)]

#: Ids and names: what the columns hold (255 characters).
Id = Field(min_length=1, max_length=255, pattern=r"^[^\x00]+$")


class Problem(Schema):
    """An error (RFC 9457 ``application/problem+json``); extension members name the ids."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    instance: str


class SessionIn(Schema):
    """Create a session, or get it when `session_id` exists with the same app and user."""

    app_name: str = Id
    user_id: str = Field("", max_length=255, pattern=r"^[^\x00]*$")
    session_id: str | None = Field(None, min_length=1, max_length=255, pattern=r"^[\w.:-]+$")
    state: dict[str, Any] = Field(default_factory=dict)


class EventIn(BaseModel):
    """One complete event to store. `client_key`: unique per session; a retried batch
    whose keys were stored answers the stored ids instead of storing them again."""

    client_key: str = Field("", max_length=200)
    turn_id: str = Field("", max_length=255)
    author: str = Field("", max_length=255)
    content: Content
    finish_reason: FinishReason = FinishReason.NONE
    usage: Usage | None = None
    state_delta: dict[str, Any] = Field(default_factory=dict)
    #: When the event happened, for events recorded after the fact (a transcript sent by
    #: `watch_transcripts --to`); none: when it is stored.
    created_at: RecordedTime = None
    #: Ids of this event's tool calls that wait for a person (docs/runtime.md §1).
    pending_call_ids: list[str] = Field(default_factory=list, max_length=1000)

    @field_validator("usage")
    @classmethod
    def _counts(cls, usage: Usage | None) -> Usage | None:
        """Token counts are whole numbers a page can add up (0 to 2^53 - 1)."""
        counts = (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) if usage else ()
        if any(not 0 <= count <= MAX_TOKENS for count in counts):
            raise ValueError(f"token counts must be from 0 to {MAX_TOKENS:,}")
        return usage


class AppendIn(BaseModel):
    """A batch of events, stored in order in one transaction (all or none).

    Plain pydantic models (not ninja's `Schema`, whose per-object validator wraps each
    input for ORM attribute access: the most of a large batch's validation time)."""

    events: list[EventIn] = Field(min_length=1, max_length=1000)


class AppendOut(Schema):
    """The stored id and creation time (UTC) of each event of the batch, in batch order."""

    ids: list[int]
    created_at: list[datetime]


class PartialIn(Schema):
    """A streaming fragment for watchers (never stored)."""

    turn_id: str = Field("", max_length=255)
    author: str = Field("", max_length=255)
    content: Content


class PartialsIn(Schema):
    """Fragments to publish, in order."""

    events: list[PartialIn] = Field(min_length=1, max_length=1000)


class EventsOut(Schema):
    """Active events in conversation order."""

    events: list[Event]


class TurnIn(Schema):
    """Begin a running turn. `lease_id`: the caller's run lease (needed while one is held)."""

    turn_id: str = Id
    started_at: RecordedTime = None
    lease_id: str = Field("", max_length=64)


class FailureIn(Schema):
    """A failure (docs/runtime.md §2). `message` is stored only when `message_safe` is true:
    the client vouches that it holds no user data, secret or instruction (docs/runtime.md §6)."""

    code: str = Field(max_length=200)
    stage: str = Field("", max_length=40)
    message: str = Field("", max_length=2000)
    message_safe: bool = False


class FinalizeIn(Schema):
    """A terminal outcome; checked by the runtime's `validate_outcome` (docs/runtime.md §2)."""

    status: TurnStatus
    reason: TurnReason = TurnReason.NONE
    failure: FailureIn | None = None
    #: When the turn ended, for turns recorded after the fact; none: now. Never before its
    #: start.
    finished_at: RecordedTime = None


class InterruptIn(Schema):
    """Interrupt every running turn of the session with `reason`."""

    reason: TurnReason


class TurnsOut(Schema):
    """Turns by start, then id."""

    turns: list[Turn]


class IssueOut(Schema):
    """A tool-protocol issue (docs/runtime.md §5): calls of an assistant event without a
    durable result."""

    turn_id: str
    event_id: int
    tool_calls: list[ToolCall]


class ContextOut(Schema):
    """What the next turn's agent would be sent (the product projection, docs/runtime.md
    §4), the tool-protocol issues of the stored history, and the unknown-execution error
    that refuses the next run (null when none)."""

    context: list[Event]
    issues: list[IssueOut]
    error: str | None


class OutcomeIn(Schema):
    """What happened to an unanswered tool call (docs/concepts.md, recorded tool outcomes)."""

    event_id: int = Field(ge=1)
    call_id: str = Id
    outcome: str = Field(pattern=r"^(did_not_run|ran)$")
    result: Any = None
    reason: str = Field(min_length=1, max_length=5000)


class OutcomeOut(Schema):
    """A recorded outcome."""

    id: int
    event_id: int
    call_id: str
    outcome: str
    recorded_via: str
    recorded_at: datetime


class LeaseIn(Schema):
    """Acquire the session's run lease for `ttl_seconds`, waiting up to `wait_seconds` for
    a current holder. `lease_id` (optional, chosen by the client) makes a retry safe."""

    ttl_seconds: float = Field(15.0, ge=1, le=3600)
    wait_seconds: float = Field(0.0, ge=0, le=30)
    lease_id: str = Field("", max_length=64, pattern=r"^[\w-]*$")
    holder: str = Field("", max_length=100)


class RenewIn(Schema):
    """Renew a lease for `ttl_seconds` from now."""

    ttl_seconds: float = Field(15.0, ge=1, le=3600)


class LeaseOut(Schema):
    """A lease held: its id and when it expires (UTC) unless renewed."""

    lease_id: str
    expires_at: datetime
    ttl_seconds: float
