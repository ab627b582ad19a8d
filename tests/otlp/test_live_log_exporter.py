"""The SDK's own OTLP/HTTP log exporter (`OTLPLogExporter`, protobuf) against a live
daphne server, beside its span exporter: the OpenAI instrumentation's message events
land in their spans' turn, and Claude Code's events make a session of their own, with
the failed tool's error text stored nowhere."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from sessions_app import models
from sessions_app.api.keys import create_key
from tests.live.helpers import DaphneServer
from tests.otlp.agent_logs import (
    GENAI_EVENTS,
    SECRET_ERROR,
    claude_prompt,
    genai_turn,
    log_provider,
)
from tests.otlp.agent_spans import APP, provider
from tests.otlp.test_logs import _events
from tests.test_redaction_shapes import database_text


@pytest.mark.django_db(transaction=True)
def test_sdk_log_exporter_to_a_live_server() -> None:
    key = create_key("sdk-log-exporter").key
    headers = {"Authorization": f"Bearer {key}"}
    with DaphneServer() as server:
        logs = log_provider(OTLPLogExporter(f"{server.url}/v1/logs", headers=headers), APP)
        tracer_provider = provider(OTLPSpanExporter(f"{server.url}/v1/traces", headers=headers))
        logger = logs.get_logger("opentelemetry.instrumentation.openai_v2")
        genai_turn(tracer_provider.get_tracer("tests.otlp.live"), logger, "conv-live-logs", False)
        claude_prompt(logs.get_logger("com.anthropic.claude_code.events"))
        tracer_provider.shutdown()
        logs.shutdown()
    assert _events("conv-live-logs") == GENAI_EVENTS
    assert models.Turn.objects.get(session_id="conv-live-logs").status == "completed"
    answer = models.Event.objects.get(session_id="conv-live-logs", text__startswith="It is")
    assert (answer.usage or {})["prompt_tokens"] == 30  # the span's usage: every span landed
    turn = models.Turn.objects.get(session_id="cc-session")
    assert (turn.id, turn.status) == ("cc-session/prompt-1", "completed")
    assert models.Event.objects.filter(session_id="cc-session", role="tool").count() == 2
    assert SECRET_ERROR not in database_text()
