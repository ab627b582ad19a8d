"""A real producer: the official OpenAI instrumentation (``opentelemetry-instrumentation-
openai-v2``, with the latest GenAI conventions and
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY``: spans without content,
the messages in ``gen_ai.client.inference.operation.details`` log events) around the
``openai`` client talking to a fake OpenAI server, exported with the SDK's span and log
exporters to a live server: one turn, its messages, its tool call and result, and the
model's usage."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

from sessions_app import models
from sessions_app.api.keys import create_key
from tests.live.helpers import DaphneServer
from tests.otlp.agent_logs import log_provider
from tests.otlp.agent_spans import APP, provider
from tests.otlp.test_logs import _events

TOOL_CALL = {"id": "call_abc", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'}}  # fmt: skip


class _FakeOpenAI(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions``: a tool call, then (once the tool answered) text."""

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        answered = any(m.get("role") == "tool" for m in request["messages"])
        message: dict[str, Any] = (
            {"role": "assistant", "content": "It is raining in Lyon."}
            if answered
            else {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]}
        )
        body = json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "stop" if answered else "tool_calls"}],
            "usage": {"prompt_tokens": 40 if answered else 25, "completion_tokens": 8,
                      "total_tokens": 48 if answered else 33},
        }).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def fake_openai() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.mark.django_db(transaction=True)
def test_openai_v2_instrumentation_lands_one_turn(
    fake_openai: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "EVENT_ONLY")
    headers = {"Authorization": f"Bearer {create_key('openai-v2').key}"}
    with DaphneServer() as server:
        tracer_provider = provider(OTLPSpanExporter(f"{server.url}/v1/traces", headers=headers))
        logs = log_provider(OTLPLogExporter(f"{server.url}/v1/logs", headers=headers), APP)
        instrumentor = OpenAIInstrumentor()  # type: ignore[no-untyped-call]
        instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logs)
        try:
            client = openai.OpenAI(base_url=fake_openai, api_key="test", max_retries=0)
            messages: list[Any] = [
                {"role": "system", "content": "You answer about the weather."},
                {"role": "user", "content": "What is the weather in Lyon?"},
            ]
            tracer = tracer_provider.get_tracer("tests.otlp.openai_v2")
            with tracer.start_as_current_span("invoke_agent weather") as root:
                root.set_attribute("gen_ai.operation.name", "invoke_agent")
                root.set_attribute("gen_ai.conversation.id", "conv-openai-v2")
                first = client.chat.completions.create(model="gpt-4o", messages=messages)
                messages.append(first.choices[0].message.model_dump(exclude_none=True))
                messages.append({"role": "tool", "tool_call_id": "call_abc", "content": "rain"})
                client.chat.completions.create(model="gpt-4o", messages=messages)
        finally:
            instrumentor.uninstrument()
        tracer_provider.shutdown()
        logs.shutdown()
    assert _events("conv-openai-v2") == [
        ("system", "You answer about the weather.", [], ""),
        ("user", "What is the weather in Lyon?", [], ""),
        ("assistant", "", ["call_abc"], ""),
        ("tool", "", [], "call_abc"),
        ("assistant", "It is raining in Lyon.", [], ""),
    ]
    turn = models.Turn.objects.get(session_id="conv-openai-v2")
    assert turn.status == "completed" and "not captured" not in turn.status_note
    call = models.Event.objects.get(tool_calls__0__id="call_abc")
    assert call.tool_calls[0]["arguments"] == {"city": "Lyon"}
    result = models.Event.objects.get(role="tool")
    assert (result.tool_response or {})["result"] == "rain"
    answer = models.Event.objects.get(text="It is raining in Lyon.")
    assert (answer.usage or {})["prompt_tokens"] == 40
    assert models.Session.objects.get(pk="conv-openai-v2").model == "gpt-4o"
