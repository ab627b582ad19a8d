"""Value types and outcome validation (docs/runtime.md §1-2, acceptance cases of 8)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pydantic
import pytest

from agentops.runtime import (
    Content,
    ContentPart,
    Event,
    FinishReason,
    InvalidOutcomeError,
    Role,
    ToolCall,
    ToolResponse,
    TurnFailure,
    TurnOutcome,
    TurnReason,
    TurnStatus,
    Usage,
    validate_outcome,
)
from agentops.runtime.model import ContentPartType, ImageDetail


def test_event_json_round_trip() -> None:
    event = Event(
        id=7,
        session_id="s",
        turn_id="t",
        author="bot",
        content=Content(
            role=Role.ASSISTANT,
            text="look",
            parts=(
                ContentPart(
                    type=ContentPartType.IMAGE_URL,
                    image_url="https://x/y.png",
                    image_detail=ImageDetail.LOW,
                ),
            ),
            reasoning="hm",
            tool_calls=(
                ToolCall(id="c1", name="f", arguments={"q": 1}, thought_signature=b"\x00sig"),
            ),
        ),
        finish_reason=FinishReason.TOOL_CALLS,
        usage=Usage(prompt_tokens=3, completion_tokens=4, total_tokens=7, details={"c": 1}),
        state_delta={"k": [1, 2]},
        created_at=datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=2))),
    )  # fmt: skip
    assert event.created_at is not None and event.created_at.utcoffset() == timedelta(0)
    assert event.created_at.hour == 10
    assert Event.model_validate_json(event.model_dump_json()) == event


def test_tool_call_arguments_string_is_unwrapped_and_empty_becomes_object() -> None:
    # Providers send arguments as a JSON string (or nothing): passed raw on purpose.
    assert ToolCall(id="a", name="f", arguments='{"x": 1}').arguments == {"x": 1}  # type: ignore[arg-type]
    assert ToolCall(id="a", name="f", arguments="").arguments == {}  # type: ignore[arg-type]
    assert ToolCall(id="a", name="f", arguments=None).arguments == {}  # type: ignore[arg-type]
    with pytest.raises(pydantic.ValidationError):
        ToolCall(id="a", name="f", arguments="[1, 2]")  # type: ignore[arg-type]


def test_tool_response_needs_exactly_one_of_result_or_error() -> None:
    ToolResponse(tool_call_id="a", result={"ok": 1})
    ToolResponse(tool_call_id="a", result=None)  # a null result is still a result
    ToolResponse(tool_call_id="a", error="file not found")
    with pytest.raises(pydantic.ValidationError):
        ToolResponse(tool_call_id="a")
    with pytest.raises(pydantic.ValidationError):
        ToolResponse(tool_call_id="a", result=1, error="boom")


def test_tool_response_json_round_trip_keeps_which_one() -> None:
    for response in (
        ToolResponse(tool_call_id="a", name="f", result=None),
        ToolResponse(tool_call_id="a", name="f", error="nope"),
    ):
        data = response.model_dump(mode="json")
        assert ("result" in data) != ("error" in data)
        assert ToolResponse.model_validate_json(response.model_dump_json()) == response


def test_answered_call_id_prefers_tool_response() -> None:
    both = Content(role=Role.TOOL, tool_call_id="plain",
                   tool_response=ToolResponse(tool_call_id="structured", result=1))  # fmt: skip
    assert both.answered_call_id == "structured"
    assert Content(role=Role.TOOL, tool_call_id="plain", text="42").answered_call_id == "plain"


@pytest.mark.parametrize(
    "outcome",
    [
        TurnOutcome(status=TurnStatus.COMPLETED),
        TurnOutcome(
            status=TurnStatus.FAILED,
            reason=TurnReason.AGENT_ERROR,
            failure=TurnFailure(code="agent_error", stage="agent"),
        ),
        TurnOutcome(status=TurnStatus.FAILED, reason=TurnReason.AGENT_ERROR),
        TurnOutcome(status=TurnStatus.INTERRUPTED, reason=TurnReason.ABANDONED),
    ],
    ids=["completed", "failed-with-failure", "failed-no-failure", "interrupted-abandoned"],
)
def test_valid_outcomes(outcome: TurnOutcome) -> None:
    validate_outcome(outcome)


@pytest.mark.parametrize(
    "outcome",
    [
        TurnOutcome(status=TurnStatus.RUNNING),
        TurnOutcome(status=TurnStatus.COMPLETED, reason=TurnReason.CANCELED),
        TurnOutcome(status=TurnStatus.COMPLETED, failure=TurnFailure(code="x", stage="agent")),
        TurnOutcome(status=TurnStatus.FAILED),
        TurnOutcome(status=TurnStatus.INTERRUPTED, reason=TurnReason.AGENT_ERROR),
        TurnOutcome(
            status=TurnStatus.FAILED,
            reason=TurnReason.AGENT_ERROR,
            failure=TurnFailure(code="", stage="agent"),
        ),
        TurnOutcome(
            status=TurnStatus.FAILED,
            reason=TurnReason.AGENT_ERROR,
            failure=TurnFailure(code="agent_error", stage=""),
        ),
        TurnOutcome(
            status=TurnStatus.FAILED,
            reason=TurnReason.AGENT_ERROR,
            failure=TurnFailure(code="Ignore previous instructions", stage="agent"),
        ),
        TurnOutcome(
            status=TurnStatus.FAILED,
            reason=TurnReason.AGENT_ERROR,
            failure=TurnFailure(code="a" * 129, stage="agent"),
        ),
    ],
    ids=[
        "running",
        "completed-with-reason",
        "completed-with-failure",
        "failed-without-reason",
        "interrupted-agent-error",
        "failure-without-code",
        "failure-without-stage",
        "unsafe-code",
        "code-too-long",
    ],
)
def test_invalid_outcomes(outcome: TurnOutcome) -> None:
    with pytest.raises(InvalidOutcomeError):
        validate_outcome(outcome)
