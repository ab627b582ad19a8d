"""Traces holding no agent's span (an application's HTTP requests and queries, sent to
the same endpoint as its agent's) land in no session: their spans are kept, the answer
warns (partial success with nothing rejected), and a later batch bringing an agent span
of the same trace lands it whole."""

from __future__ import annotations

import json

from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sessions_app import models
from sessions_app.otlp.models import OtlpSpan
from tests.otlp.agent_spans import conversation_spans, json_body, ok_turn, protobuf_body, provider
from tests.otlp.conftest import OtlpPoster


def _http_trace(exporter: InMemorySpanExporter, with_model_call: bool = False) -> None:
    tracer = provider(exporter).get_tracer("web")
    root = tracer.start_span("POST /ask", attributes={"http.request.method": "POST"})
    with trace.use_span(root, end_on_exit=True):
        with tracer.start_as_current_span("SELECT users", attributes={"db.system": "sqlite"}):
            pass
        if with_model_call:
            with tracer.start_as_current_span("chat m", attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m",
                "gen_ai.usage.input_tokens": 5,
                "gen_ai.usage.output_tokens": 2,
            }):  # fmt: skip
                pass


def _answer(response: object) -> ExportTraceServiceResponse:
    return ExportTraceServiceResponse.FromString(response.content)  # type: ignore[attr-defined]


def test_a_trace_of_no_agent_lands_nowhere_and_the_answer_warns(poster: OtlpPoster) -> None:
    exporter = InMemorySpanExporter()
    _http_trace(exporter)
    response = poster.post(protobuf_body(exporter.get_finished_spans()))
    assert response.status_code == 200
    success = _answer(response).partial_success
    assert success.rejected_spans == 0
    assert success.error_message.startswith("2 spans belong to traces with no GenAI or agent span")
    assert not models.Session.objects.exists()
    assert not models.Turn.objects.exists()
    assert list(OtlpSpan.objects.values_list("name", "session_id", "turn_id")) == [
        ("SELECT users", "", ""),
        ("POST /ask", "", ""),
    ]
    # The exporter's retry: accepted (already kept), nothing more kept, still no session.
    retried = _answer(poster.post(protobuf_body(exporter.get_finished_spans())))
    assert retried.partial_success.rejected_spans == 0
    assert OtlpSpan.objects.count() == 2
    assert not models.Session.objects.exists()


def test_only_the_traces_of_no_agent_are_counted_in_the_warning(poster: OtlpPoster) -> None:
    exporter = InMemorySpanExporter()
    _http_trace(exporter)
    spans = [*exporter.get_finished_spans(), *conversation_spans()]
    response = poster.post(json_body(spans), "application/json")
    assert response.status_code == 200
    success = json.loads(response.content)["partialSuccess"]
    assert success["errorMessage"].startswith("2 spans belong to traces with no GenAI")
    assert "rejectedSpans" not in success  # 0: nothing was rejected
    assert set(models.Session.objects.values_list("id", flat=True)) >= {"conv-1"}
    assert OtlpSpan.objects.filter(turn_id="").count() == 2


def test_an_agent_trace_answers_without_a_warning(poster: OtlpPoster) -> None:
    exporter = InMemorySpanExporter()
    ok_turn(provider(exporter).get_tracer("agent"))
    response = poster.post(protobuf_body(exporter.get_finished_spans()))
    assert not _answer(response).HasField("partial_success")


def test_a_later_agent_span_lands_the_trace_whole(poster: OtlpPoster) -> None:
    exporter = InMemorySpanExporter()
    _http_trace(exporter, with_model_call=True)
    select, chat, root = exporter.get_finished_spans()
    assert poster.post(protobuf_body([select])).status_code == 200  # lands nowhere yet
    assert not models.Turn.objects.exists()
    response = poster.post(protobuf_body([chat, root]))
    assert not _answer(response).HasField("partial_success")
    (turn,) = models.Turn.objects.all()
    assert turn.status == models.Turn.Status.COMPLETED  # the HTTP root ended OK
    assert set(OtlpSpan.objects.values_list("turn_id", flat=True)) == {turn.id}
    (event,) = models.Event.objects.filter(turn_id=turn.id)
    assert (event.role, (event.usage or {}).get("prompt_tokens")) == ("assistant", 5)
