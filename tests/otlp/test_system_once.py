"""A session's system prompt is stored once: frameworks send it with every model call,
so each trace (turn) carries it, but the model is sent it once and the next context
replays every stored event (`landing._without_repeated_system`). A turn whose system
prompt differs from the one before it keeps its own."""

from __future__ import annotations

import json

from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sessions_app import models
from tests.otlp.agent_spans import protobuf_body, provider
from tests.otlp.conftest import OtlpPoster


def _turn(tracer: trace.Tracer, system: str, question: str) -> None:
    with tracer.start_as_current_span("invoke_agent a", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "sys-1",
    }):  # fmt: skip
        with tracer.start_as_current_span("chat m", attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.system_instructions": json.dumps([{"type": "text", "content": system}]),
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": question}]}]
            ),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]
            ),
        }):  # fmt: skip
            pass


def _systems() -> list[tuple[str, str]]:
    turns = list(models.Turn.objects.filter(session_id="sys-1").order_by("started_at"))
    return [
        (str(index), event.text)
        for index, turn in enumerate(turns)
        for event in models.Event.objects.filter(turn_id=turn.id, role="system")
    ]


def test_the_same_system_prompt_is_stored_once_a_session(poster: OtlpPoster) -> None:
    exporter = InMemorySpanExporter()
    tracer = provider(exporter).get_tracer("tests.otlp.system")
    for question in ("one?", "two?"):  # two batches: the second turn's session exists
        _turn(tracer, "Be brief.", question)
        assert poster.post(protobuf_body(exporter.get_finished_spans())).status_code == 200
        exporter.clear()
    _turn(tracer, "Be brief.", "three?")
    _turn(tracer, "Be thorough.", "four?")  # two turns of one batch
    assert poster.post(protobuf_body(exporter.get_finished_spans())).status_code == 200
    assert _systems() == [("0", "Be brief."), ("3", "Be thorough.")]
    assert models.Event.objects.filter(session_id="sys-1", role="user").count() == 4
