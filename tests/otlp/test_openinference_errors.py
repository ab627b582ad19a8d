"""What the receiver reads of OpenInference spans as the OpenAI Agents SDK's
instrumentation sends them, span by span: a message's text is its ``content`` when the
``contents`` parts come with it (not both joined), else the parts in index order; a
failed TOOL span ends the run (a failed turn under an OK root) only when no LLM span
starts after it; a failed TOOL span's output and the SDK's default error text in a later
LLM span's input are not kept past their fixed words, and other spans are kept as sent
(the same dict)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sessions_app.otlp.messages import output_messages
from sessions_app.otlp.openinference import (
    ERROR_OUTPUTS,
    ERROR_STATUS,
    KIND_KEY,
    tool_error_ending_run,
    without_error_details,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ERROR_TEXT = f"{ERROR_OUTPUTS[0]} Error: the-exception-message-oe19"


@dataclass
class Span:
    """A span as `tool_error_ending_run` reads it."""

    span_id: str
    start_at: datetime
    end_at: datetime
    status_code: int
    attributes: dict[str, Any]


def _span(span_id: str, kind: str, start: int, end: int, status_code: int = 1) -> Span:
    """A span of OpenInference `kind` from `start` to `end` seconds after `T0`."""
    at = T0 + timedelta(seconds=start)
    return Span(span_id, at, at + timedelta(seconds=end - start), status_code, {KIND_KEY: kind})


def test_a_message_text_is_its_content_else_its_parts_in_order() -> None:
    both = {
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "It is sunny.",
        "llm.output_messages.0.message.contents.0.message_content.type": "text",
        "llm.output_messages.0.message.contents.0.message_content.text": "It is sunny.",
    }
    parts = {"llm.output_messages.0.message.role": "assistant"} | {
        f"llm.output_messages.0.message.contents.{i}.message_content.text": f"p{i}"
        for i in (10, 2, 0)
    }
    assert [m.text for m in output_messages(both)] == ["It is sunny."]
    assert [m.text for m in output_messages(parts)] == ["p0\np2\np10"]


def test_a_failed_tool_ends_the_run_only_when_no_model_call_follows() -> None:
    model = _span("m1", "LLM", 0, 1)
    failed = _span("t1", "TOOL", 2, 3, ERROR_STATUS)
    assert tool_error_ending_run([_span("root", "AGENT", 0, 5), model, failed]) is failed
    assert tool_error_ending_run([model, failed, _span("m2", "LLM", 4, 5)]) is None
    assert tool_error_ending_run([model, _span("t2", "TOOL", 2, 3)]) is None


def test_error_details_are_not_kept() -> None:
    tool = {KIND_KEY: "TOOL", "tool.name": "get_weather", "output.value": ERROR_TEXT}
    assert without_error_details(tool, ERROR_STATUS) == {
        KIND_KEY: "TOOL",
        "tool.name": "get_weather",
    }
    assert without_error_details(tool, 1) is tool  # a result, not an error
    model = {
        KIND_KEY: "LLM",
        "input.value": f'[{{"output": "{ERROR_TEXT}", "type": "function_call_output"}}]',
        "llm.input_messages.3.message.role": "tool",
        "llm.input_messages.3.message.content": ERROR_TEXT,
        "llm.input_messages.3.message.tool_call_id": "call_1",
    }
    assert without_error_details(model, 1) == {
        KIND_KEY: "LLM",
        "llm.input_messages.3.message.role": "tool",
        "llm.input_messages.3.message.content": ERROR_OUTPUTS[0],
        "llm.input_messages.3.message.tool_call_id": "call_1",
    }
    plain = {KIND_KEY: "LLM", "input.value": "[]", "llm.input_messages.0.message.content": "hi"}
    assert without_error_details(plain, 1) is plain
    genai = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.result": "x"}
    assert without_error_details(genai, ERROR_STATUS) is genai
