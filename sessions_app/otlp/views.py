"""``POST /v1/traces`` and ``/v1/logs`` (and the same under ``/api/public/otel``): the
OTLP/HTTP receiver.

Answers follow the OTLP/HTTP specification (docs/otlp.md): 200 with an
`ExportTraceServiceResponse` (`ExportLogsServiceResponse` for logs) in the request's
encoding (protobuf or JSON), carrying `partial_success` {rejected_spans |
rejected_log_records, error_message} when some were refused; every
4xx/5xx carries a `google.rpc.Status` {code, message} in the request's encoding: 400
malformed, 401 no or bad key, 403 read-only key, 413 too large, 415 unknown content
type or encoding, 429 over the key's rate (Retry-After), 503 when the database is busy
(Retry-After). The Langfuse-compatible path also takes the key as the password of HTTP
Basic auth, so exporters set up for Langfuse only change the host.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2

from sessions_app.api.keys import bearer_token, find_key
from sessions_app.api.middleware import declared_length
from sessions_app.api.models import ApiKey
from sessions_app.api.problems import problem_response
from sessions_app.otlp.decode import (
    JSON,
    PROTOBUF,
    BadBody,
    SpanRecord,
    decode_request,
    decompress,
    spans_of,
)
from sessions_app.otlp.export import accept, key_refusal, logs_answer, may_write, traces_answer
from sessions_app.otlp.logs import decode_logs, log_records_of

__all__ = ["receive_logs", "receive_traces", "refuse_metrics"]

_CODES = {
    400: code_pb2.INVALID_ARGUMENT,
    404: code_pb2.UNIMPLEMENTED,
    401: code_pb2.UNAUTHENTICATED,
    403: code_pb2.PERMISSION_DENIED,
    413: code_pb2.INVALID_ARGUMENT,
    415: code_pb2.INVALID_ARGUMENT,
    429: code_pb2.RESOURCE_EXHAUSTED,
    503: code_pb2.UNAVAILABLE,
}


def _json_request(request: HttpRequest) -> bool:
    return (request.content_type or "").lower() == JSON


def _encoded(request: HttpRequest, message: Message, status: int) -> HttpResponse:
    if _json_request(request):
        body = json_format.MessageToJson(message, indent=None).encode()
        return HttpResponse(body, status=status, content_type=JSON)
    return HttpResponse(message.SerializeToString(), status=status, content_type=PROTOBUF)


def refusal(
    request: HttpRequest, status: int, message: str, retry_after: float = 0
) -> HttpResponse:
    """A 4xx/5xx answer: a `google.rpc.Status` in the request's encoding; for a body in
    neither OTLP encoding, the API's problem+json (the caller is not an OTLP exporter)."""
    if (request.content_type or "").lower() not in (JSON, PROTOBUF):
        headers = {"Retry-After": str(int(retry_after))} if retry_after else None
        return problem_response(request, status, "otlp-refused", message, headers=headers)
    response = _encoded(
        request,
        status_pb2.Status(code=_CODES.get(status, code_pb2.UNKNOWN), message=message),
        status,
    )
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="agentops"'
    if retry_after:
        response["Retry-After"] = str(int(retry_after))
    return response


def _token(request: HttpRequest) -> str:
    authorization = request.headers.get("Authorization", "")
    if token := bearer_token(authorization):
        return token
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "basic" and request.path.startswith("/api/public/otel/"):
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return ""
        return decoded.partition(":")[2].strip()
    return ""


def _traces(body: bytes, content_type: str) -> tuple[list[SpanRecord], int]:
    return spans_of(decode_request(body, content_type))


def _logs(body: bytes, content_type: str) -> tuple[list[SpanRecord], int]:
    return log_records_of(decode_logs(body, content_type), timezone.now())


@csrf_exempt
@require_POST
async def receive_traces(request: HttpRequest) -> HttpResponse:
    """Receive one OTLP/HTTP export of spans (see the module docstring)."""
    return await _receive(request, _traces, traces_answer, "spans")


@csrf_exempt
@require_POST
async def receive_logs(request: HttpRequest) -> HttpResponse:
    """Receive one OTLP/HTTP export of log records (`otlp.logs`; see the module
    docstring): the same keys, limits and answers as spans."""
    return await _receive(request, _logs, logs_answer, "log records")


async def _receive(
    request: HttpRequest,
    records_of: Callable[[bytes, str], tuple[list[SpanRecord], int]],
    answer_of: Callable[[int, str], Message],
    noun: str,
) -> HttpResponse:
    """Authenticate, limit, decode (`records_of`: the records and how many were
    unusable), store and answer (`answer_of(rejected, reason)`) one export."""
    token = _token(request)
    key: ApiKey | None = await sync_to_async(find_key)(token) if token else None
    how = "Authorization: Bearer"
    if request.path.startswith("/api/public/otel/"):
        how += ", or as the password of HTTP Basic auth"
    if not may_write(key):
        return refusal(request, *key_refusal(key, how))
    limit = settings.AGENTOPS_API_MAX_BODY_BYTES
    size = declared_length(request)
    if size <= limit:
        try:
            size = len(request.body)
        except RequestDataTooBig:  # no Content-Length, more than Django will read
            return refusal(
                request, 413, f"the body has more than {limit} bytes; the limit is {limit}"
            )
    if size > limit:
        return refusal(request, 413, f"the body has {size} bytes; the limit is {limit}")
    try:
        body = decompress(
            request.body,
            request.headers.get("Content-Encoding", ""),
            limit * settings.AGENTOPS_OTLP_INFLATE_FACTOR,
        )
        records, bad = records_of(body, request.content_type or "")
    except BadBody as refused:
        return refusal(request, refused.status, refused.reason)
    outcome = await accept(records, bad, key, noun)
    if outcome.status != 200:
        return refusal(request, outcome.status, outcome.message, outcome.retry_after)
    return _encoded(request, answer_of(outcome.rejected, outcome.message), 200)


@csrf_exempt
@require_POST
def refuse_metrics(request: HttpRequest) -> HttpResponse:
    """``POST /v1/metrics``: 404 with the reason, in the request's encoding (SDKs export
    metrics to the same endpoint by default; exporters log the reason and do not retry)."""
    return refusal(
        request, 404, "this dashboard receives traces and logs, not metrics: set "
        "OTEL_METRICS_EXPORTER=none"
    )  # fmt: skip
