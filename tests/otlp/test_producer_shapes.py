"""The message shapes real producers send, each made with the OpenTelemetry SDK and sent
as protobuf, land as the same turn: the earlier GenAI conventions' span events (as
Strands and older instrumentations send), the current conventions' operation-details
span event, and OpenLLMetry's flattened ``gen_ai.prompt.N`` / ``gen_ai.completion.N``
attributes (its LangChain and OpenAI instrumentations)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span, Status, StatusCode

from sessions_app import models
from tests.otlp.agent_spans import protobuf_body, provider
from tests.otlp.conftest import OtlpPoster
from tests.otlp.rows import EventRow, event_rows

CALL = {"id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}  # fmt: skip
EXPECTED = [
    ("system", "Be brief.", [], ""),
    ("user", "Weather in Paris?", [], ""),
    ("assistant", "", ["c1"], ""),
    ("tool", "", [], "c1"),
    ("assistant", "Sunny.", [], ""),
]


def _legacy_events(span: Span, second: bool) -> None:
    span.add_event("gen_ai.system.message", {"content": "Be brief."})
    span.add_event("gen_ai.user.message", {"content": "Weather in Paris?"})
    if not second:
        answer = {"role": "assistant", "tool_calls": [CALL]}
        span.add_event("gen_ai.choice", {"index": 0, "finish_reason": "tool_calls",
                                         "message": json.dumps(answer)})  # fmt: skip
        return
    span.add_event("gen_ai.assistant.message", {"tool_calls": json.dumps([CALL])})
    span.add_event("gen_ai.tool.message", {"id": "c1", "content": "sunny, 21 C"})
    span.add_event("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                                     "message": json.dumps({"content": "Sunny."})})  # fmt: skip


def _details_event(span: Span, second: bool) -> None:
    user = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}
    asked = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1",
             "name": "get_weather", "arguments": {"city": "Paris"}}]}  # fmt: skip
    result = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1",
              "response": "sunny, 21 C"}]}  # fmt: skip
    final = {"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}]}
    inputs, outputs = ([user, asked, result], [final]) if second else ([user], [asked])
    span.add_event("gen_ai.client.inference.operation.details", {
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief."}]),
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
    })  # fmt: skip


def _openllmetry(span: Span, second: bool) -> None:
    span.set_attributes({
        "llm.request.type": "chat",
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Be brief.",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Weather in Paris?",
        "gen_ai.usage.prompt_tokens": 12, "gen_ai.usage.completion_tokens": 3,
    })  # fmt: skip
    if not second:
        span.set_attributes({
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.finish_reason": "tool_calls",
            "gen_ai.completion.0.tool_calls.0.id": "c1",
            "gen_ai.completion.0.tool_calls.0.name": "get_weather",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Paris"}',
        })  # fmt: skip
        return
    span.set_attributes({
        "gen_ai.prompt.2.role": "assistant",
        "gen_ai.prompt.2.tool_calls.0.id": "c1",
        "gen_ai.prompt.2.tool_calls.0.name": "get_weather",
        "gen_ai.prompt.2.tool_calls.0.arguments": '{"city": "Paris"}',
        "gen_ai.prompt.3.role": "tool", "gen_ai.prompt.3.content": "sunny, 21 C",
        "gen_ai.prompt.3.tool_call_id": "c1",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Sunny.",
    })  # fmt: skip


SHAPES: dict[str, tuple[str, Callable[[Span, bool], None]]] = {
    "legacy span events": ("chat gpt-4o", _legacy_events),
    "operation details event": ("chat gpt-4o", _details_event),
    "openllmetry attributes": ("openai.chat", _openllmetry),
}


def _turn(shape: str, *, failing: bool = False) -> bytes:
    name, write = SHAPES[shape]
    exporter = InMemorySpanExporter()
    tracer = provider(exporter).get_tracer("tests.otlp.shapes")
    with tracer.start_as_current_span("invoke_agent weather") as root:
        root.set_attribute("session.id", f"shape-{shape}")
        with tracer.start_as_current_span(name) as first:
            write(first, False)
        with tracer.start_as_current_span(name) as second:
            write(second, True)
            if failing:
                second.set_status(Status(StatusCode.ERROR))
        if failing:
            root.set_status(Status(StatusCode.ERROR))
    return protobuf_body(exporter.get_finished_spans())


def _events(session_id: str) -> list[EventRow]:
    return event_rows(session_id=session_id)


@pytest.mark.parametrize("shape", SHAPES)
def test_each_producer_shape_lands_as_the_same_turn(poster: OtlpPoster, shape: str) -> None:
    assert poster.post(_turn(shape)).status_code == 200
    assert _events(f"shape-{shape}") == EXPECTED
    result = models.Event.objects.get(session_id=f"shape-{shape}", role="tool")
    assert (result.tool_response or {})["result"] == "sunny, 21 C"
    call = models.Event.objects.get(session_id=f"shape-{shape}", tool_calls__isnull=False,
                                    role="assistant", text="")  # fmt: skip
    assert call.tool_calls[0]["arguments"] == {"city": "Paris"}
    state = models.Session.objects.get(pk=f"shape-{shape}").state
    assert state["otlp"] == {"content_captured": True}


def test_a_failing_openllmetry_model_span_is_a_provider_failure(poster: OtlpPoster) -> None:
    assert poster.post(_turn("openllmetry attributes", failing=True)).status_code == 200
    turn = models.Turn.objects.get(session_id="shape-openllmetry attributes")
    assert (turn.status, turn.failure_code, turn.failure_stage) == (
        "failed",
        "agent_error",
        "provider",
    )
