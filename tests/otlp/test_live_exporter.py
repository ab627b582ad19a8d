"""The SDK's own OTLP/HTTP exporter (protobuf, SimpleSpanProcessor) against a live daphne
server: an agent's turns land, a failed one keeps no exception text, and a running turn
moves into its conversation when its root arrives."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from sessions_app import models
from sessions_app.api.keys import create_key
from tests.live.helpers import DaphneServer
from tests.otlp.agent_spans import (
    SECRET_MESSAGE,
    STATUS_TEXT,
    _agent_root,
    failed_turn,
    ok_turn,
    provider,
)
from tests.test_redaction_shapes import database_text


@pytest.mark.django_db(transaction=True)
def test_sdk_exporter_to_a_live_server() -> None:
    key = create_key("sdk-exporter").key
    with DaphneServer() as server:
        exporter = OTLPSpanExporter(
            endpoint=f"{server.url}/v1/traces", headers={"Authorization": f"Bearer {key}"}
        )
        tracer_provider = provider(exporter)
        tracer = tracer_provider.get_tracer("tests.otlp.live")
        ok_turn(tracer)
        failed_turn(tracer)
        root = _agent_root(tracer, "conv-live")
        with trace.use_span(root, end_on_exit=False):
            with tracer.start_as_current_span("execute_tool count") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.call.id", "call_live")
                tool.set_attribute("gen_ai.tool.name", "count")
        running = models.Turn.objects.exclude(session_id="conv-1").get()
        assert running.status == "running" and running.session_id.startswith("otlp-")
        root.end()
        tracer_provider.shutdown()
    turns = {t.session_id: t for t in models.Turn.objects.all()}
    assert set(turns) == {"conv-1", "conv-live"}
    assert turns["conv-live"].status == "completed"
    assert not models.Session.objects.filter(pk=running.session_id).exists()
    statuses = sorted(
        (t.status, t.failure_code, t.failure_stage)
        for t in models.Turn.objects.filter(session_id="conv-1")
    )
    assert statuses == [("completed", "", ""), ("failed", "openai.rate_limit_error", "provider")]
    assert models.Event.objects.filter(session_id="conv-1", role="tool").count() == 1
    dump = database_text()
    assert SECRET_MESSAGE not in dump and STATUS_TEXT not in dump
