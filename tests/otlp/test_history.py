"""A model span's input is kept without the history the mapping never reads
(`otlp.history.kept_inputs`): every trace plans to the same turn from the kept spans as
from the spans as received, and a long conversation's later model spans keep only what
was new to the model."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from openinference.instrumentation import using_session
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.test import TestModel

from sessions_app.benchmarks.children.otlp_child import agent_spans
from sessions_app.otlp import log_mapping
from sessions_app.otlp.decode import PROTOBUF, SpanRecord, decode_request, spans_of
from sessions_app.otlp.history import ADK_REQUEST, GENAI_INPUT, kept_inputs
from sessions_app.otlp.mapping import turn_outcome
from sessions_app.otlp.models import OtlpSpan
from tests.otlp.agent_spans import conversation_spans, protobuf_body, provider
from tests.otlp.conftest import OtlpPoster
from tests.otlp.test_openinference_langchain import agent, answer, tool_call, weather_tool
from tests.otlp.test_producer_shapes import SHAPES, _turn


def _records(body: bytes) -> list[SpanRecord]:
    return spans_of(decode_request(body, PROTOBUF))[0]


def _kept(records: Sequence[SpanRecord]) -> list[SpanRecord]:
    return [replace(record, attributes=kept_inputs(record.attributes)) for record in records]


def _plan(records: Sequence[SpanRecord]) -> tuple[Any, ...]:
    by_trace: dict[str, list[SpanRecord]] = {}
    for record in records:
        by_trace.setdefault(record.trace_id, []).append(record)
    return tuple(
        (log_mapping.place(spans), log_mapping.turn_drafts(spans), turn_outcome(spans))
        for _trace, spans in sorted(by_trace.items())
    )


def _pydantic_ai_spans() -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": "pai"}))
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = Agent(TestModel(), instructions="Answer in one line.", name="weather")
    agent.instrument = InstrumentationSettings(tracer_provider=tracer_provider)

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return f"sunny in {city}"

    first = agent.run_sync("Weather in Paris?", conversation_id="pai-conv")
    second = agent.run_sync("And in Rome?", message_history=first.all_messages())
    agent.run_sync("And in Oslo?", message_history=second.all_messages())
    return list(exporter.get_finished_spans())


def _adk_spans() -> list[ReadableSpan]:
    """Google ADK's shape: ``call_llm`` spans whose ``llm_request`` holds the whole
    conversation (roles user / model, function calls and responses)."""
    exporter = InMemorySpanExporter()
    tracer = provider(exporter, "adk-app").get_tracer("tests.otlp.history")
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "Weather?"}]}]
    with tracer.start_as_current_span("invoke_agent weather") as root:
        root.set_attribute("gcp.vertex.agent.session_id", "adk-history")
        for step in range(3):
            call = {"id": f"adk-{step}", "name": "get_weather", "args": {"step": step}}
            answer = {"role": "model", "parts": [{"function_call": call}]}
            request = {"model": "gemini", "config": {"system_instruction": "Be brief."},
                       "contents": contents}  # fmt: skip
            with tracer.start_as_current_span("call_llm") as span:
                span.set_attribute(ADK_REQUEST, json.dumps(request))
                span.set_attribute("gcp.vertex.agent.llm_response", json.dumps({"content": answer}))
            response = {"id": call["id"], "name": "get_weather", "response": {"ok": step}}
            contents = [*contents, answer,
                        {"role": "user", "parts": [{"function_response": response}]}]  # fmt: skip
    return list(exporter.get_finished_spans())


def _system_in_history_spans(rounds: int = 3) -> list[ReadableSpan]:
    """openai-v2's shape: the system prompt is the first input message (no system
    instructions attribute), later system messages sit among the history; two turns of
    one conversation, so the second turn's first model span gets the system prompt
    before the first turn's answers."""
    exporter = InMemorySpanExporter()
    tracer = provider(exporter).get_tracer("tests.otlp.history")
    history: list[dict[str, Any]] = [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Weather?"}]},
    ]
    for turn in range(2):
        with tracer.start_as_current_span("invoke_agent weather") as root:
            root.set_attribute("gen_ai.conversation.id", "system-in-history")
            for step in range(rounds):
                text = f"a{turn}.{step}"
                answer = {"role": "assistant", "parts": [{"type": "text", "content": text}]}
                with tracer.start_as_current_span("chat gpt-4o") as span:
                    span.set_attribute(GENAI_INPUT, json.dumps(history))
                    span.set_attribute("gen_ai.output.messages", json.dumps([answer]))
                history += [
                    answer,
                    {"role": "system", "parts": [{"type": "text", "content": f"note {text}"}]},
                    {"role": "user", "parts": [{"type": "text", "content": f"more {text}"}]},
                ]
    return list(exporter.get_finished_spans())


def _openinference_spans() -> list[ReadableSpan]:
    """OpenInference's LangChain spans: two runs of an agent loop with a system prompt,
    three tool calls in the first; each LLM span's ``llm.input_messages`` and
    ``input.value`` hold the whole conversation."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": "oi"}))
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider)
    try:
        replies = iter([
            *(tool_call(city, f"call_{city}", 10, 2) for city in ("Paris", "Rome", "Oslo")),
            answer("All sunny.", 40, 3),
            answer("Still sunny.", 50, 2),
        ])  # fmt: skip
        run = agent(replies, weather_tool())
        with using_session("oi-history"):
            first = run.invoke(
                [SystemMessage("Be brief."), HumanMessage("Weather in three cities?")]
            )
            run.invoke([*first, HumanMessage("And now?")])
    finally:
        instrumentor.uninstrument()
    return list(exporter.get_finished_spans())


PRODUCERS: dict[str, Callable[[], bytes]] = {
    "receiver fixtures": lambda: protobuf_body(conversation_spans()),
    "bench traces": lambda: protobuf_body(agent_spans(4, 5)),
    "pydantic ai": lambda: protobuf_body(_pydantic_ai_spans()),
    "google adk": lambda: protobuf_body(_adk_spans()),
    "system in history": lambda: protobuf_body(_system_in_history_spans()),
    "openinference langchain": lambda: protobuf_body(_openinference_spans()),
    **{f"shape {shape}": partial(_turn, shape) for shape in SHAPES},
}


@pytest.mark.parametrize("producer", PRODUCERS)
def test_the_kept_spans_plan_to_the_same_turn(producer: str) -> None:
    records = _records(PRODUCERS[producer]())
    assert _plan(_kept(records)) == _plan(records)


@pytest.mark.parametrize(
    ("producer", "at_most"),
    # Pydantic AI's spans carry more than their inputs (its run span holds all messages
    # again, under its own attribute, kept as received).
    # OpenInference's LLM spans hold the conversation twice (messages and input.value),
    # and their output.value (kept) repeats the answer.
    [
        ("bench traces", 0.7),
        ("pydantic ai", 0.95),
        ("google adk", 0.8),
        ("openinference langchain", 0.7),
    ],
)
def test_later_model_spans_keep_only_what_was_new(producer: str, at_most: float) -> None:
    records = _records(PRODUCERS[producer]())
    received = sum(len(json.dumps(r.attributes)) for r in records)
    kept = sum(len(json.dumps(kept_inputs(r.attributes))) for r in records)
    assert kept < received * at_most, (kept, received)


def test_openinference_llm_spans_keep_only_what_was_new() -> None:
    records = _records(protobuf_body(_openinference_spans()))
    llm = [r for r in records if r.attributes.get("openinference.span.kind") == "LLM"]
    kept = [kept_inputs(r.attributes) for r in llm]
    roles = [
        [v for k, v in sorted(attributes.items()) if k.startswith("llm.input_messages.")
         and k.endswith(".message.role")]
        for attributes in kept
    ]  # fmt: skip
    # The first run's model was given the question, then each tool's result; the second
    # run's the new question; each the system prompt.
    assert roles == [["system", "user"]] + [["system", "tool"]] * 3 + [["system", "user"]]
    assert ["input.value" in attributes for attributes in kept] == [False] * 5


def test_a_span_without_earlier_history_is_kept_as_received() -> None:
    attributes = {GENAI_INPUT: json.dumps([{"role": "user", "parts": []}]), "x": 1}
    assert kept_inputs(attributes) is attributes
    assert kept_inputs({GENAI_INPUT: "not json"}) == {GENAI_INPUT: "not json"}


def test_the_receiver_stores_the_kept_input(poster: OtlpPoster) -> None:
    assert poster.post(protobuf_body(agent_spans(1, 3))).status_code == 200
    chats = OtlpSpan.objects.filter(name__startswith="chat").order_by("start_at")
    stored = [json.loads(span.attributes[GENAI_INPUT]) for span in chats]
    # The first chat span was given the question; each later one only the tool result
    # that followed the model's last answer.
    assert [[m["role"] for m in inputs] for inputs in stored] == [["user"]] + [["tool"]] * 3
