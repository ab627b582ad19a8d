"""Credentials sent from other processes are stored redacted like imports: every shape of
`tests.redaction_cases` planted in the texts, tool arguments, tool results and state of
events sent through the HTTP API and in the GenAI attributes of OTLP spans; the whole
database, the session pages and the export hold none of them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.test import Client
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sessions_app.api.keys import create_key
from tests.api.conftest import ApiClient
from tests.otlp.agent_spans import protobuf_body
from tests.otlp.conftest import OtlpPoster
from tests.redaction_cases import ALL_TEXT
from tests.test_redaction_shapes import database_text, leaks

pytestmark = pytest.mark.django_db


@pytest.fixture
def writer(db: None) -> ApiClient:
    return ApiClient(create_key("redaction-writer").key)


@pytest.fixture
def poster(db: None) -> OtlpPoster:
    return OtlpPoster(create_key("redaction-otel").key)


def _pages(client: Client, session_id: str) -> str:
    paths = ["", "context/", "protocol/", "export/"]
    answers = [client.get(f"/sessions/{session_id}/{path}") for path in paths]
    assert [a.status_code for a in answers] == [200] * len(paths)
    return "\n".join(
        b"".join(a.streaming_content).decode() if a.streaming else a.content.decode()  # type: ignore[attr-defined]
        for a in answers
    )


def test_events_sent_through_the_api_are_stored_and_shown_redacted(
    writer: ApiClient, admin_client: Client
) -> None:
    assert writer.post("/sessions", {"app_name": "ops", "session_id": "s-api"}).status_code == 201
    assert writer.post("/sessions/s-api/turns", {"turn_id": "t-api"}).status_code == 201
    call = {"id": "c-1", "name": "deploy", "arguments": {"env": ALL_TEXT}}
    events = [
        {"client_key": "k-1", "turn_id": "t-api", "content": {"role": "user", "text": ALL_TEXT}},
        {
            "client_key": "k-2",
            "turn_id": "t-api",
            "content": {"role": "assistant", "text": ALL_TEXT, "tool_calls": [call]},
            "state_delta": {"note": ALL_TEXT},
        },
        {
            "client_key": "k-3",
            "turn_id": "t-api",
            "content": {
                "role": "tool",
                "tool_response": {"tool_call_id": "c-1", "name": "deploy", "result": ALL_TEXT},
            },
        },
    ]
    response = writer.post("/sessions/s-api/events", {"events": events})
    assert response.status_code in (200, 201), response.content
    assert leaks(database_text()) == []
    assert leaks(_pages(admin_client, "s-api")) == []
    assert "[REDACTED:" in database_text()  # the planting reached the store


def _secret_spans() -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("secrets")
    with tracer.start_as_current_span("invoke_agent ops") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("gen_ai.conversation.id", "conv-secrets")
        with tracer.start_as_current_span("chat gpt-4o") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute(
                "gen_ai.input.messages",
                json.dumps([{"role": "user", "parts": [{"type": "text", "content": ALL_TEXT}]}]),
            )
            chat.set_attribute(
                "gen_ai.output.messages",
                json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [
                                {"type": "text", "content": ALL_TEXT},
                                {
                                    "type": "tool_call",
                                    "id": "c-9",
                                    "name": "lookup",
                                    "arguments": {"q": ALL_TEXT},
                                },
                            ],
                        }
                    ]
                ),
            )
        with tracer.start_as_current_span("execute_tool lookup") as tool:
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.call.id", "c-9")
            tool.set_attribute("gen_ai.tool.name", "lookup")
            tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"q": ALL_TEXT}))
            tool.set_attribute("gen_ai.tool.call.result", json.dumps({"found": ALL_TEXT}))
    provider.shutdown()
    return list(exporter.get_finished_spans())


@pytest.fixture
def secret_spans() -> Iterator[list[ReadableSpan]]:
    yield _secret_spans()


def test_spans_received_over_otlp_are_stored_and_shown_redacted(
    poster: OtlpPoster, admin_client: Client, secret_spans: list[ReadableSpan]
) -> None:
    response = poster.post(protobuf_body(secret_spans))
    assert response.status_code == 200
    assert leaks(database_text()) == []
    assert leaks(_pages(admin_client, "conv-secrets")) == []
    assert "[REDACTED:" in database_text()
