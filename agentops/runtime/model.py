"""Provider-neutral value types of the runtime: roles, content, tool calls, events
(docs/runtime.md §1).

Every type here is an immutable pydantic 2 model, so a value can be shared between the
runner, a projector and a store without defensive copies of the model itself (its dict
fields are still plain dicts: never mutate them). All of them round-trip through JSON:
``Event.model_validate_json(event.model_dump_json()) == event``.

Timestamps are timezone-aware UTC datetimes; an aware datetime in another zone is
converted to UTC, a naive one is taken to be UTC already.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

__all__ = [
    "Content",
    "ContentPart",
    "ContentPartType",
    "Event",
    "FinishReason",
    "ImageDetail",
    "Role",
    "ToolCall",
    "ToolResponse",
    "Usage",
    "as_utc",
    "utc_now",
]


def utc_now() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """`value` as an aware UTC datetime (naive values are taken to be UTC already)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


class _Value(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        ser_json_bytes="base64",
        val_json_bytes="base64",
    )


class Role(StrEnum):
    """Who speaks in a message (docs/runtime.md §1)."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class ContentPartType(StrEnum):
    """Kind of one multimodal content part (docs/runtime.md §1)."""

    TEXT = "text"
    IMAGE_URL = "image_url"
    IMAGE_BASE64 = "image_base64"


class ImageDetail(StrEnum):
    """Resolution hint for an image part; "" means the provider default."""

    NONE = ""
    AUTO = "auto"
    LOW = "low"
    HIGH = "high"


class FinishReason(StrEnum):
    """Why a model stopped producing an event (docs/runtime.md §1); "" when unknown or not a
    model."""

    NONE = ""
    STOP = "stop"
    TOOL_CALLS = "tool_calls"
    LENGTH = "length"
    CONTENT_FILTER = "content_filter"


class ContentPart(_Value):
    """One part of a multimodal message (docs/runtime.md §1).

    `text` is used by text parts, `image_url` or `image_base64` (with `mime_type`, e.g.
    ``image/png``) by image parts. When a `Content` has parts they take precedence over
    its plain `text`.
    """

    type: ContentPartType
    text: str = ""
    image_url: str = ""
    image_base64: str = ""
    mime_type: str = ""
    image_detail: ImageDetail = ImageDetail.NONE


class ToolCall(_Value):
    """A function call requested by an assistant message (docs/runtime.md §1).

    `arguments` is a JSON object. On load, a JSON *string* holding an object is unwrapped,
    and an empty string or None becomes ``{}``; a string that is not a JSON object raises
    a validation error. `thought_signature` is an opaque provider token (bytes, base64 in
    JSON) that must be sent back unchanged.
    """

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    thought_signature: bytes | None = None

    @field_validator("arguments", mode="before")
    @classmethod
    def _unwrap_arguments(cls, value: Any) -> Any:
        if value is None:
            return {}
        if isinstance(value, str | bytes):
            if not value.strip():
                return {}
            decoded = json.loads(value)
            if not isinstance(decoded, dict):
                raise ValueError(
                    f"tool call arguments must be a JSON object, got {type(decoded).__name__}"
                )
            return decoded
        return value


class ToolResponse(_Value):
    """The structured outcome of one tool call (docs/runtime.md §1).

    Exactly one of `result` (any JSON value, including null) or `error` (a handled error
    message for the model) is present; both or neither raise a validation error. Presence
    of `result` is tracked explicitly, so ``ToolResponse(..., result=None)`` is a success
    whose value is null. In JSON the absent one is omitted.
    """

    tool_call_id: str
    name: str = ""
    result: Any = None
    error: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ToolResponse:
        has_result = "result" in self.model_fields_set
        has_error = self.error is not None
        if has_result == has_error:
            raise ValueError("a tool response needs exactly one of result or error")
        return self

    @property
    def is_error(self) -> bool:
        """True when this response carries a handled error instead of a result."""
        return self.error is not None

    @model_serializer(mode="wrap")
    def _omit_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.error is None:
            data.pop("error", None)
        else:
            data.pop("result", None)
        return data


class Content(_Value):
    """The payload of one event: a message of some role (docs/runtime.md §1).

    - `text`: plain text; ignored by providers when `parts` is non-empty.
    - `reasoning`: model reasoning text, if the provider exposes it.
    - `tool_calls`: calls requested by an assistant message.
    - `tool_response`: the structured result of a tool message.
    - `tool_call_id`: plain fallback for a tool result without `tool_response`; such an
      event is a success whose value is `text`.
    """

    role: Role
    text: str = ""
    parts: tuple[ContentPart, ...] = ()
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_response: ToolResponse | None = None
    tool_call_id: str = ""

    @property
    def answered_call_id(self) -> str:
        """The call id this (tool) message answers: the response's id, else `tool_call_id`."""
        response = self.tool_response
        if response is not None and response.tool_call_id:
            return response.tool_call_id
        return self.tool_call_id


class Usage(_Value):
    """Token usage of one model call; `details` is free-form provider data (JSON object)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    details: dict[str, Any] = Field(default_factory=dict)


class Event(_Value):
    """One fact of a session's conversation (docs/runtime.md §1).

    - `id`: 0 when not persisted; stores assign positive ids that grow with time, so id
      order is conversation order.
    - `turn_id`: the user turn that produced the event; "" for legacy events.
    - `author`: display only ("user", "runner", an agent name), never sent to a model.
    - `partial`: a streaming fragment; the runner forwards it but never stores it.
    - `state_delta`: JSON object merged into the session state when the event is stored.
    - `pending_call_ids`: ids of this event's tool calls that wait for a person (an
      approval, an answer): the turn ends without their results, and a continuation turn
      runs once a decision answers them (docs/runtime.md §3 "Continuing a turn").
    - `created_at` / `updated_at`: UTC, set by the store (None before that).
    """

    id: int = 0
    session_id: str = ""
    turn_id: str = ""
    author: str = ""
    content: Content
    finish_reason: FinishReason = FinishReason.NONE
    usage: Usage | None = None
    partial: bool = False
    state_delta: dict[str, Any] = Field(default_factory=dict)
    pending_call_ids: tuple[str, ...] = ()
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @field_validator("created_at", "updated_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else as_utc(value)

    @property
    def role(self) -> Role:
        """Shortcut for ``content.role``."""
        return self.content.role
