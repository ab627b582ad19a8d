"""``POST /v1/logs``: GenAI log events join their spans' turns (logs before or after the
spans), Claude Code's events make a session with turns on their own, re-sent batches are
stored once, bad requests write nothing (docs/otlp.md, "Logs")."""

from __future__ import annotations

import base64
import itertools
import json
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sessions_app import models
from sessions_app.api.keys import create_key
from sessions_app.otlp.logs import decode_logs, log_records_of
from sessions_app.otlp.models import OtlpSpan
from sessions_app.otlp.writer import store_spans
from tests.otlp.agent_logs import (
    GENAI_EVENTS,
    SECRET_ERROR,
    _claude,
    claude_prompt,
    genai_turn,
    json_logs,
    log_provider,
    memory_logs,
    protobuf_logs,
)
from tests.otlp.agent_spans import protobuf_body, provider
from tests.otlp.conftest import OtlpPoster
from tests.otlp.test_receiver import landed
from tests.test_redaction_shapes import database_text


def _genai(conversation: str, content_on_spans: bool = False) -> tuple[bytes, bytes]:
    """The spans body and the logs body of `genai_turn`."""
    spans, logs = InMemorySpanExporter(), memory_logs()
    tracer = provider(spans, app="weather-app").get_tracer("tests.otlp.logs")
    logger = log_provider(logs, "weather-app").get_logger("opentelemetry.instrumentation.openai_v2")
    genai_turn(tracer, logger, conversation, content_on_spans)
    return protobuf_body(spans.get_finished_spans()), protobuf_logs(logs.get_finished_logs())


def _claude_records() -> list[Any]:
    logs = memory_logs()
    claude_prompt(log_provider(logs, "claude-code").get_logger("com.anthropic.claude_code.events"))
    return list(logs.get_finished_logs())


def _events(session_id: str) -> list[tuple[Any, ...]]:
    (found,) = [s for s in landed() if s[0] == session_id]
    ((*_, events),) = found[3]
    return list(events)


def _logs(poster: OtlpPoster, body: bytes, **kwargs: Any) -> ExportLogsServiceResponse:
    response = poster.post(body, path="/v1/logs", **kwargs)
    assert response.status_code == 200, response.content
    if response["Content-Type"] == "application/json":
        return json_format.Parse(response.content, ExportLogsServiceResponse())
    return ExportLogsServiceResponse.FromString(response.content)


def test_genai_log_events_fill_their_spans_turn_logs_first_or_after(poster: OtlpPoster) -> None:
    spans, logs = _genai("conv-logs-after")
    assert poster.post(spans).status_code == 200
    # Before its content arrives, the model call is an event of its usage alone.
    (usage_alone,) = models.Event.objects.filter(session_id="conv-logs-after")
    assert (usage_alone.role, usage_alone.text, usage_alone.tool_calls) == ("assistant", "", [])
    assert (usage_alone.usage or {})["prompt_tokens"] == 30
    assert _logs(poster, logs).partial_success.rejected_log_records == 0
    assert _events("conv-logs-after") == GENAI_EVENTS

    spans, logs = _genai("conv-logs-first")
    _logs(poster, logs)
    (early,) = models.Turn.objects.exclude(session_id="conv-logs-after")
    assert early.status == "running" and early.session_id.startswith("otlp-")
    assert poster.post(spans).status_code == 200
    assert _events("conv-logs-first") == GENAI_EVENTS
    turn = models.Turn.objects.get(session_id="conv-logs-first")
    assert turn.status == "completed" and "not captured" not in turn.status_note
    assert not models.Session.objects.filter(pk=early.session_id).exists()
    answer = models.Event.objects.get(session_id="conv-logs-first", text__startswith="It is")
    assert (answer.usage or {})["prompt_tokens"] == 30

    spans, logs = _genai("conv-both", content_on_spans=True)  # SPAN_AND_EVENT: once each
    poster.post(spans)
    _logs(poster, logs)
    assert _events("conv-both") == GENAI_EVENTS


def test_claude_code_events_make_a_turn_without_traces_json(poster: OtlpPoster) -> None:
    answer = _logs(poster, json_logs(_claude_records()), content_type="application/json")
    assert answer.partial_success.rejected_log_records == 0
    session = models.Session.objects.get()
    assert (session.id, session.app_name, session.user_id) == ("cc-session", "claude-code", "dev-1")
    assert session.model == "claude-sonnet-5"
    assert session.title == "List the files"  # its first prompt, as an import titles it
    assert session.get_source_format_display() == "OpenTelemetry (OTLP)"
    turn = models.Turn.objects.get()
    assert (turn.id, turn.status) == ("cc-session/prompt-1", "completed")
    # The calls are on the response of the request that made them (the one before them).
    assert _events("cc-session") == [
        ("user", "List the files", [], ""),
        ("assistant", "", ["toolu_ok", "toolu_bad"], ""),
        ("tool", "", [], "toolu_ok"),
        ("tool", "", [], "toolu_bad"),
        ("assistant", "", [], ""),
    ]
    first, second = (
        e.usage or {} for e in models.Event.objects.filter(usage__isnull=False).order_by("id")
    )
    # The input counts the cache reads and writes (input_tokens leaves them out).
    assert (first["prompt_tokens"], first["completion_tokens"]) == (120 + 100, 40)
    assert first["details"]["cost_usd"] == pytest.approx(0.0123)
    assert first["details"]["cached_input_tokens"] == 100
    assert second["prompt_tokens"] == 200
    ok, bad = (e.tool_response for e in models.Event.objects.filter(role="tool").order_by("id"))
    assert ok == {"tool_call_id": "toolu_ok", "name": "Bash",
                  "result": {"content_captured": False}}  # fmt: skip
    assert bad == {"tool_call_id": "toolu_bad", "name": "Read", "error": "error_enoent"}
    call = models.Event.objects.get(tool_calls__0__id="toolu_ok")
    assert call.tool_calls[0]["arguments"] == {"command": "ls"}
    assert SECRET_ERROR not in database_text()


def test_a_resent_logs_batch_is_stored_once(poster: OtlpPoster) -> None:
    body = protobuf_logs(_claude_records())
    _logs(poster, body)
    stored = (OtlpSpan.objects.count(), landed())
    _logs(poster, body)
    _logs(poster, body, gzipped=True)
    assert (OtlpSpan.objects.count(), landed()) == stored
    assert models.Event.objects.count() == 5


def test_bad_logs_requests_write_nothing(poster: OtlpPoster, reader: OtlpPoster) -> None:
    body = protobuf_logs(_claude_records())
    garbage = poster.post(b"\xff\xff not protobuf", path="/v1/logs")
    assert garbage.status_code == 400
    document = json.loads(json_logs(_claude_records()))
    document["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["traceId"] = "zz"
    bad_id = poster.post(json.dumps(document).encode(), "application/json", path="/v1/logs")
    assert bad_id.status_code == 400 and "traceId" in bad_id.json()["message"]
    assert OtlpPoster("").post(body, path="/v1/logs").status_code == 401
    assert reader.post(body, path="/v1/logs").status_code == 403
    assert OtlpSpan.objects.count() == 0 and models.Session.objects.count() == 0


def test_langfuse_path_takes_logs_with_basic_auth(poster: OtlpPoster) -> None:
    basic = base64.b64encode(f"pk-lf:{poster.key}".encode()).decode()
    response = poster.post(
        protobuf_logs(_claude_records()),
        path="/api/public/otel/v1/logs",
        Authorization=f"Basic {basic}",
    )
    assert response.status_code == 200
    assert models.Turn.objects.get().id == "cc-session/prompt-1"


_batches = itertools.count()


def _claude_batch(prompts: int) -> list[Any]:
    """Records of the first `prompts` prompts, with requests and calls of their own (a
    prompt's later records: its requests and calls are new, its turn is not)."""
    logs = memory_logs()
    logger = log_provider(logs, "claude-code").get_logger("com.anthropic.claude_code.events")
    batch = next(_batches)
    for number in range(prompts):
        claude_prompt(logger, f"prompt-{number}", ids=f"-{batch}")
    body = protobuf_logs(logs.get_finished_logs())
    records, bad = log_records_of(decode_logs(body, "application/x-protobuf"), timezone.now())
    assert bad == 0 and len(records) == 5 * prompts
    return records


@pytest.mark.django_db
def test_queries_of_a_logs_batch_do_not_grow(django_assert_num_queries: Any) -> None:
    key = create_key("log-queries").row
    # Made in time order: a batch starting before the session would move its start back
    # (one query more, `otlp.session_rows`).
    first, small, large = _claude_batch(1), _claude_batch(2), _claude_batch(12)
    # The session is there already (a new one takes four queries fewer: nothing of it
    # is read back, `otlp.resume_batch`).
    store_spans(first, key)
    with CaptureQueriesContext(connection) as few:
        store_spans(small, key)
    with CaptureQueriesContext(connection) as many:
        store_spans(large, key)
    assert len(few) == len(many)
    # As a batch of spans (test_queries): read the kept records, sessions and turns;
    # write records, turns and events in bulk (the session is there already: no INSERT;
    # its earlier turns' system prompts are read, `landing._without_repeated_system`);
    # read the session's other turns and events, its tool outcomes and stored marks, and
    # keep its resume status and page facts in one UPDATE; read its turn count and token
    # totals for the watchers' turn payloads; in a transaction. SQLite: the events' search
    # index marker set and taken away (`search.batch_index`).
    with django_assert_num_queries(18 + (2 if connection.vendor == "sqlite" else 0)):
        store_spans(_claude_batch(5)[::-1], key)


def test_a_prompt_whose_last_request_failed_is_a_failed_turn(poster: OtlpPoster) -> None:
    logs = memory_logs()
    logger = log_provider(logs, "claude-code").get_logger("com.anthropic.claude_code.events")
    _claude(logger, "prompt-err", "user_prompt", 1, prompt="Go", prompt_length=2)
    _claude(logger, "prompt-err", "api_error", 2, model="claude-sonnet-5", status_code=529,
            error=SECRET_ERROR, attempt=3, duration_ms=100)  # fmt: skip
    _logs(poster, protobuf_logs(logs.get_finished_logs()))
    turn = models.Turn.objects.get()
    assert (turn.status, turn.failure_code, turn.failure_stage) == (
        "failed",
        "http_529",
        "provider",
    )
    assert SECRET_ERROR not in database_text()


def test_an_operation_details_record_without_a_span_counts_its_usage(poster: OtlpPoster) -> None:
    """A model call sent as one ``gen_ai.client.inference.operation.details`` record with
    no trace context (no span to take the usage from): its tokens and model land on the
    call's answer, as a span's would."""
    from opentelemetry._logs import LogRecord

    from tests.otlp.agent_logs import log_provider, memory_logs, protobuf_logs

    exporter = memory_logs()
    logger = log_provider(exporter, "logs-usage").get_logger("tests.otlp.usage")
    message = [{"role": "assistant", "parts": [{"type": "text", "content": "Hi."}]}]
    logger.emit(LogRecord(event_name="gen_ai.client.inference.operation.details", attributes={
        "gen_ai.conversation.id": "logs-usage-1",
        "gen_ai.request.model": "lm-1",
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "Hello?"}]}]
        ),
        "gen_ai.output.messages": json.dumps(message),
        "gen_ai.usage.input_tokens": 3,
        "gen_ai.usage.output_tokens": 2,
    }))  # fmt: skip
    response = poster.post(protobuf_logs(exporter.get_finished_logs()), path="/v1/logs")
    assert response.status_code == 200
    answer = models.Event.objects.get(session_id="logs-usage-1", role="assistant")
    assert answer.text == "Hi."
    assert answer.usage is not None
    assert (answer.usage["prompt_tokens"], answer.usage["completion_tokens"]) == (3, 2)
    session = models.Session.objects.get(pk="logs-usage-1")
    assert (session.tokens_input, session.tokens_output, session.model) == (3, 2, "lm-1")
