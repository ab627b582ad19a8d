"""The OTLP/gRPC receiver (``AGENTOPS_OTLP_GRPC_ADDRESS``, e.g. ``127.0.0.1:4317``): the
OpenTelemetry collector's `TraceService` and `LogsService` ``Export`` calls, served by
`grpc.aio` on the server process's own event loop, so what it stores reaches the
session's watchers as an OTLP/HTTP export's does (`export.accept`: the same keys, rate,
storing and partial success).

The key comes in the ``authorization`` metadata (``Bearer <key>``). Refusals are gRPC
statuses with a one-line reason, as OTLP/gRPC specifies: UNAUTHENTICATED (no or bad
key), PERMISSION_DENIED (read-only key), RESOURCE_EXHAUSTED (over the key's rate, with
the delay as `google.rpc.RetryInfo` in the status details and in
``google.rpc.retryinfo-bin``, which the Python exporter reads), UNAVAILABLE (the database
is busy; exporters retry), INVALID_ARGUMENT (a message that does not parse: parsed
once the key is checked), INTERNAL (an unexpected error: logged, its text not sent),
and, from gRPC itself, RESOURCE_EXHAUSTED for a message over
AGENTOPS_API_MAX_BODY_BYTES times AGENTOPS_OTLP_INFLATE_FACTOR once decompressed (gzip is
gRPC's own). Unusable records are a partial success, as over HTTP.

Daphne has no lifespan events: `start_with` starts the server when the reactor runs
(daphne's is Twisted's asyncio reactor), and at the latest on the first ASGI call.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2

from sessions_app.api.keys import bearer_token, find_key
from sessions_app.otlp.decode import PROTOBUF, BadBody, SpanRecord, decode_request, spans_of
from sessions_app.otlp.export import (
    Outcome,
    accept,
    key_refusal,
    logs_answer,
    may_write,
    traces_answer,
)
from sessions_app.otlp.logs import decode_logs, log_records_of

__all__ = ["serve", "start_with"]

logger = logging.getLogger(__name__)

_STATUSES = {
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    503: grpc.StatusCode.UNAVAILABLE,
}


async def _export(
    context: grpc.aio.ServicerContext,
    records_and_bad: Callable[[], tuple[Sequence[SpanRecord], int]],
    noun: str,
) -> Outcome:
    """Check the call's key, then `export.accept` the records; a refusal aborts the call
    with its gRPC status."""
    metadata = dict(context.invocation_metadata() or ())
    token = bearer_token(str(metadata.get("authorization", "")))
    key = await sync_to_async(find_key)(token) if token else None
    if not may_write(key):
        status, reason = key_refusal(key, "the authorization metadata: Bearer <key>")
        await context.abort(_STATUSES[status], reason)  # raises
        raise AssertionError("unreachable")
    try:
        records, bad = records_and_bad()
    except BadBody as refused:
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, refused.reason)
        raise AssertionError("unreachable") from None
    outcome = await accept(records, bad, key, noun)
    if outcome.status != 200:
        if outcome.retry_after:
            context.set_trailing_metadata(_retry_metadata(outcome))
        await context.abort(_STATUSES[outcome.status], outcome.message)
    return outcome


def _retry_metadata(outcome: Outcome) -> tuple[tuple[str, bytes], ...]:
    """`outcome`'s retry delay as `RetryInfo`, in the status details and on its own."""
    delay = duration_pb2.Duration(seconds=int(outcome.retry_after) or 1)
    info = error_details_pb2.RetryInfo(retry_delay=delay)
    detail = any_pb2.Any()
    detail.Pack(info)
    code = _STATUSES[outcome.status].value[0]  # the status's number, as google.rpc.Code
    status = status_pb2.Status(code=code, message=outcome.message, details=[detail])
    return (
        ("grpc-status-details-bin", status.SerializeToString()),
        ("google.rpc.retryinfo-bin", info.SerializeToString()),
    )


async def _traces(body: bytes, context: grpc.aio.ServicerContext) -> bytes:
    """``TraceService/Export``: the request decoded once the key is checked."""

    def records() -> tuple[Sequence[SpanRecord], int]:
        return spans_of(decode_request(body, PROTOBUF))

    outcome = await _export(context, records, "spans")
    return traces_answer(outcome.rejected, outcome.message).SerializeToString()


async def _logs(body: bytes, context: grpc.aio.ServicerContext) -> bytes:
    """``LogsService/Export``: the request decoded once the key is checked."""

    def records() -> tuple[Sequence[SpanRecord], int]:
        return log_records_of(decode_logs(body, PROTOBUF), timezone.now())

    outcome = await _export(context, records, "log records")
    return logs_answer(outcome.rejected, outcome.message).SerializeToString()


def _service(name: str, export: Callable[..., Any]) -> grpc.GenericRpcHandler:
    """The `name` service's ``Export``, given the request's bytes (no deserializer: an
    unkeyed caller's message is never parsed) and answering the serialized response; an
    unexpected error is logged and answered INTERNAL, without its text."""

    async def guarded(body: bytes, context: grpc.aio.ServicerContext) -> bytes:
        try:
            answer: bytes = await export(body, context)
        except grpc.aio.AbortError:
            raise
        except Exception:  # as a 500 over HTTP: logged here, its text not sent
            logger.exception("OTLP/gRPC %s/Export failed", name)
            await context.abort(grpc.StatusCode.INTERNAL, "the receiver failed; it is logged")
            raise AssertionError("unreachable") from None
        return answer

    handler = grpc.unary_unary_rpc_method_handler(guarded)
    return grpc.method_handlers_generic_handler(name, {"Export": handler})


#: The collector's services (`opentelemetry-proto`'s names), each with its ``Export``.
_SERVICES = (
    ("opentelemetry.proto.collector.trace.v1.TraceService", _traces),
    ("opentelemetry.proto.collector.logs.v1.LogsService", _logs),
)


async def serve(address: str) -> grpc.aio.Server | None:
    """Start the receiver on `address` (host:port); None, logged, when it cannot bind."""
    limit = settings.AGENTOPS_API_MAX_BODY_BYTES * settings.AGENTOPS_OTLP_INFLATE_FACTOR
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", limit)])
    server.add_generic_rpc_handlers([_service(name, export) for name, export in _SERVICES])
    try:
        server.add_insecure_port(address)
    except RuntimeError as refused:
        logger.error("OTLP/gRPC receiver not started on %s: %s", address, refused)
        return None
    await server.start()
    logger.info("OTLP/gRPC receiver on %s", address)
    return server


def start_with(application: Any) -> Any:
    """`application` wrapped to start `serve` on AGENTOPS_OTLP_GRPC_ADDRESS once: when
    the reactor runs, or on the first ASGI call if that comes first."""
    state: dict[str, asyncio.Task[grpc.aio.Server | None]] = {}

    def start() -> None:
        if "task" not in state:
            address = settings.AGENTOPS_OTLP_GRPC_ADDRESS
            state["task"] = asyncio.ensure_future(serve(address))

    reactor = sys.modules.get("twisted.internet.reactor")
    if reactor is not None and hasattr(reactor, "callWhenRunning"):
        reactor.callWhenRunning(start)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        start()
        await application(scope, receive, send)

    return app
