"""The OTLP/gRPC receiver (`sessions_app.otlp.grpc_server`) in a live daphne server with
AGENTOPS_OTLP_GRPC_ADDRESS set: the SDK's own gRPC exporters (spans and log records,
gzip too) land turns as over HTTP, a watcher gets the events as they are stored (live
polling off: only the broadcast can bring them), and refusals are the gRPC statuses OTLP
names, with a one-line reason and nothing stored."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from django.contrib.auth.models import User
from google.rpc import error_details_pb2, status_pb2
from grpc import Compression
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sessions_app import models
from sessions_app.api.keys import create_key
from tests.api.test_watch_remote import Watcher
from tests.live.helpers import DaphneServer, free_port, session_cookie
from tests.otlp.agent_logs import GENAI_EVENTS, genai_turn, log_provider
from tests.otlp.agent_spans import (
    APP,
    SECRET_MESSAGE,
    STATUS_TEXT,
    OpenTurn,
    failed_turn,
    ok_turn,
    provider,
)
from tests.otlp.test_logs import _events
from tests.test_redaction_shapes import database_text

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def grpc_server() -> Iterator[tuple[DaphneServer, str]]:
    """A live server receiving OTLP/gRPC on a free port, and that address."""
    address = f"127.0.0.1:{free_port()}"
    env = {"AGENTOPS_OTLP_GRPC_ADDRESS": address, "AGENTOPS_LIVE_POLL_MS": "0", "REDIS_URL": ""}
    with DaphneServer(env) as server:
        with grpc.insecure_channel(address) as channel:
            grpc.channel_ready_future(channel).result(timeout=30)
        yield server, address


def _exporter(address: str, key: str, **options: Any) -> OTLPSpanExporter:
    headers = (("authorization", f"Bearer {key}"),)
    return OTLPSpanExporter(endpoint=address, insecure=True, headers=headers, **options)


def test_sdk_grpc_exporters_land_turns_and_log_events(grpc_server: tuple[Any, str]) -> None:
    _server, address = grpc_server
    key = create_key("grpc-exporter").key
    tracer_provider = provider(_exporter(address, key))
    tracer = tracer_provider.get_tracer("tests.otlp.grpc")
    ok_turn(tracer)
    failed_turn(tracer)
    zipped = provider(_exporter(address, key, compression=Compression.Gzip))
    ok_turn(zipped.get_tracer("tests.otlp.grpc.gzip"), conversation="conv-gzip")
    logs = log_provider(
        OTLPLogExporter(
            endpoint=address, insecure=True, headers=(("authorization", f"Bearer {key}"),)
        ),
        APP,
    )
    logger = logs.get_logger("opentelemetry.instrumentation.openai_v2")
    genai_turn(tracer, logger, "conv-grpc-logs", False)
    for done in (tracer_provider, zipped):
        done.shutdown()
    logs.shutdown()
    statuses = sorted(
        (t.session_id, t.status, t.failure_code, t.failure_stage) for t in models.Turn.objects.all()
    )
    assert statuses == [
        ("conv-1", "completed", "", ""),
        ("conv-1", "failed", "openai.rate_limit_error", "provider"),
        ("conv-grpc-logs", "completed", "", ""),
        ("conv-gzip", "completed", "", ""),
    ]
    assert models.Event.objects.filter(session_id="conv-1", role="tool").count() == 1
    assert _events("conv-grpc-logs") == GENAI_EVENTS
    completed = models.Turn.objects.get(session_id="conv-1", status="completed")
    gzipped = models.Event.objects.filter(session_id="conv-gzip").values_list("role", "text")
    assert list(gzipped) == list(
        models.Event.objects.filter(session_id="conv-1", turn_id=completed.pk).values_list(
            "role", "text"
        )
    )
    dump = database_text()
    assert SECRET_MESSAGE not in dump and STATUS_TEXT not in dump


def test_a_watcher_gets_a_grpc_export_live(
    grpc_server: tuple[DaphneServer, str], operator_user: User
) -> None:
    server, address = grpc_server
    exporter = _exporter(address, create_key("grpc-live").key)
    turn = OpenTurn("turn-1", conversation="conv-grpc-live")
    assert exporter.export(turn.take()) is SpanExportResult.SUCCESS
    watcher = Watcher(
        f"ws://127.0.0.1:{server.port}/ws/sessions/conv-grpc-live/?after=0",
        {"Cookie": session_cookie(operator_user), "Origin": server.url},
    )
    watcher.start()
    assert watcher.ready.wait(30)
    turn.tool_answers()
    assert exporter.export(turn.take()) is SpanExportResult.SUCCESS
    for _ in range(100):
        if any(f["kind"] == "event" and f.get("role") == "tool" for f in watcher.frames):
            break
        threading.Event().wait(0.1)
    watcher.stop.set()
    watcher.join(10)
    tool_results = [f for f in watcher.frames if f["kind"] == "event" and f.get("role") == "tool"]
    assert len(tool_results) == 1
    assert models.Turn.objects.get(session_id="conv-grpc-live").status == "running"


def _request() -> trace_service_pb2.ExportTraceServiceRequest:
    spans = InMemorySpanExporter()
    ok_turn(provider(spans).get_tracer("tests.otlp.grpc.raw"), conversation="conv-raw")
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return encode_spans(spans.get_finished_spans())


def _call(address: str, request: Any, metadata: tuple[tuple[str, str], ...]) -> Any:
    with grpc.insecure_channel(address) as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)  # type: ignore[no-untyped-call]
        return stub.Export.with_call(request, metadata=metadata, timeout=10)


@pytest.mark.parametrize(
    ("metadata", "code", "reason"),
    [
        ((), grpc.StatusCode.UNAUTHENTICATED, "send a valid, unrevoked API key"),
        ((("authorization", "Bearer ao_nope"),), grpc.StatusCode.UNAUTHENTICATED, "API key"),
        ((("authorization", "Basic eDp5"),), grpc.StatusCode.UNAUTHENTICATED, "Bearer <key>"),
        ("read-only", grpc.StatusCode.PERMISSION_DENIED, "is read-only: it cannot write"),
    ],
)
def test_refused_keys_get_their_status_and_nothing_is_stored(
    grpc_server: tuple[Any, str], metadata: Any, code: grpc.StatusCode, reason: str
) -> None:
    _server, address = grpc_server
    if metadata == "read-only":
        metadata = (("authorization", f"Bearer {create_key('ro', read_only=True).key}"),)
    with pytest.raises(grpc.RpcError) as refused:
        _call(address, _request(), metadata)
    assert refused.value.code() is code
    assert reason in refused.value.details()
    assert not models.Session.objects.exists() and not models.Event.objects.exists()


def test_bad_ids_are_a_partial_success(grpc_server: tuple[Any, str]) -> None:
    _server, address = grpc_server
    request = _request()
    request.resource_spans[0].scope_spans[0].spans[0].span_id = b"\x01\x02"
    metadata = (("authorization", f"Bearer {create_key('ids').key}"),)
    answer, _call_info = _call(address, request, metadata)
    assert answer.partial_success.rejected_spans == 1
    assert "wrong length or all zero" in answer.partial_success.error_message


def test_over_the_rate_is_resource_exhausted_with_the_delay(operator_user: User) -> None:
    address = f"127.0.0.1:{free_port()}"
    env = {
        "AGENTOPS_OTLP_GRPC_ADDRESS": address,
        "AGENTOPS_OTLP_SPANS_PER_SECOND": "1",
        "AGENTOPS_OTLP_BURST_SPANS": "2",
    }
    metadata = (("authorization", f"Bearer {create_key('rate').key}"),)
    with DaphneServer(env):
        with grpc.insecure_channel(address) as channel:
            grpc.channel_ready_future(channel).result(timeout=30)
        with pytest.raises(grpc.RpcError) as refused:
            _call(address, _request(), metadata)
    assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "over its rate of spans" in refused.value.details()
    trailing = dict(refused.value.trailing_metadata())
    info = error_details_pb2.RetryInfo.FromString(trailing["google.rpc.retryinfo-bin"])
    assert info.retry_delay.seconds >= 1
    status = status_pb2.Status.FromString(trailing["grpc-status-details-bin"])
    assert status.details[0].Is(error_details_pb2.RetryInfo.DESCRIPTOR)
    assert not models.Event.objects.exists()


def _raw_call(address: str, body: bytes, metadata: tuple[tuple[str, str], ...]) -> bytes:
    """An ``Export`` of `body` as it is (no serializer: any bytes)."""
    with grpc.insecure_channel(address) as channel:
        export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
        return bytes(export(body, metadata=metadata, timeout=10))


def test_a_malformed_message_is_invalid_argument_and_unread_without_a_key(
    grpc_server: tuple[Any, str],
) -> None:
    _server, address = grpc_server
    garbage = b"\xff\xff\xff not protobuf"
    with pytest.raises(grpc.RpcError) as unkeyed:
        _raw_call(address, garbage, ())
    assert unkeyed.value.code() is grpc.StatusCode.UNAUTHENTICATED
    metadata = (("authorization", f"Bearer {create_key('garbage').key}"),)
    with pytest.raises(grpc.RpcError) as refused:
        _raw_call(address, garbage, metadata)
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "the body is not an ExportTraceServiceRequest" in refused.value.details()
    assert not models.Session.objects.exists()


def test_a_lone_surrogate_in_message_json_is_stored_replaced(
    grpc_server: tuple[Any, str],
) -> None:
    _server, address = grpc_server
    request = _request()
    for span in request.resource_spans[0].scope_spans[0].spans:
        for pair in span.attributes:
            if pair.key == "gen_ai.input.messages":  # JSON text escaping half a pair
                pair.value.string_value = pair.value.string_value.replace("Paris", "Par\\ud800is")
    metadata = (("authorization", f"Bearer {create_key('surrogate').key}"),)
    answer, _call_info = _call(address, request, metadata)
    assert answer.partial_success.rejected_spans == 0
    assert models.Session.objects.get(pk="conv-raw").title == "What is the weather in Par\ufffdis?"
