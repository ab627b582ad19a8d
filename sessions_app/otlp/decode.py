"""OTLP/HTTP request bodies to `SpanRecord`s, with the official message classes.

Protobuf bodies are parsed as `ExportTraceServiceRequest` (or, for ``/v1/logs``,
`ExportLogsServiceRequest`: `otlp.logs`); JSON bodies (the OTLP JSON encoding:
camelCase, enum integers, trace and span ids as hex) with
`google.protobuf.json_format.Parse` on the same class, after the hex ids are turned into
the base64 that protobuf's JSON mapping expects for bytes. Bodies may be gzip or deflate
compressed; the decompressed size is capped (a small bomb cannot fill memory).
"""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import Any

import zstandard
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from sessions_app.otlp.langsmith import exception_type
from sessions_app.otlp.messages import EVENTS_KEY

__all__ = [
    "SPAN",
    "SPAN_FIELDS",
    "BadBody",
    "SpanRecord",
    "decode_request",
    "decompress",
    "spans_of",
]

#: `SpanRecord.kind` of a span (log records: `otlp.logs`).
SPAN = "span"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class BadBody(ValueError):
    """A body that cannot be read; `status` 400 (malformed) or 413 (too large after
    decompression) or 415 (a content type or encoding OTLP/HTTP does not use)."""

    def __init__(self, status: int, reason: str) -> None:
        self.status = status
        self.reason = reason
        super().__init__(reason)


@dataclass(slots=True)
class SpanRecord:
    """One received or kept span (what the mapping reads), flattened: ids as lower-case
    hex, times aware UTC, `attributes` the span's plus its resource's under
    ``resource.``; of its events only the GenAI ones (under `messages.EVENTS_KEY`)
    and an exception event's ``exception.type`` (as ``error.type`` when the span has
    none) are kept. `kind`: a span, or a log record kept as one (`otlp.logs`)."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_at: datetime
    end_at: datetime
    status_code: int
    attributes: dict[str, Any] = field(default_factory=dict)
    kind: str = SPAN


#: The fields of a `SpanRecord`, in order: also columns of the kept span (`OtlpSpan`).
SPAN_FIELDS = tuple(f.name for f in fields(SpanRecord))


def decompress(body: bytes, encoding: str, limit: int) -> bytes:
    """`body` decoded per `Content-Encoding` (identity, gzip, deflate: zlib or raw, zstd:
    the OpenTelemetry Collector's exporters offer it); raises BadBody 415 for another
    encoding, 400 when corrupt, 413 over `limit` bytes."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding == "zstd":
        return _unzstd(body, limit)
    if encoding not in ("gzip", "deflate"):
        raise BadBody(
            415, f"Content-Encoding {encoding[:40]!r} is not supported (gzip, deflate, zstd)"
        )
    tries = (31,) if encoding == "gzip" else (15, -15)
    for wbits in tries:
        try:
            return _inflated(body, wbits, limit)
        except zlib.error:
            continue
    raise BadBody(400, f"the body is not valid {encoding} data")


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _unzstd(body: bytes, limit: int) -> bytes:
    """`body`'s zstd frames decompressed (`zstandard`): first measured by a bounded read
    (a small body that would inflate past `limit` stops there: BadBody 413), then
    decoded frame by frame, each to its end (a frame cut short, other bytes after the
    frames, or no frame at all: BadBody 400)."""
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(body, read_across_frames=True)
        with reader:
            size = 0
            while chunk := reader.read(min(1 << 20, limit + 1 - size)):
                size += len(chunk)
                if size > limit:
                    raise BadBody(413, f"the body is larger than {limit} bytes once decompressed")
        out, rest = b"", body
        while True:
            frame = zstandard.ZstdDecompressor().decompressobj()
            out += frame.decompress(rest)
            if not frame.eof or len(out) > limit:
                break
            rest = frame.unused_data
            if not rest:
                return out
            if not rest.startswith(_ZSTD_MAGIC):
                break
    except zstandard.ZstdError:
        pass
    raise BadBody(400, "the body is not valid zstd data")


def _inflated(body: bytes, wbits: int, limit: int) -> bytes:
    """`body` inflated with `wbits` (gzip: each of its members in turn, as the format
    allows several); raises zlib.error when it is corrupt, cut short (its end-of-stream
    marker and checksum never came) or followed by other bytes, BadBody 413 over `limit`."""
    out = b""
    while True:
        inflater = zlib.decompressobj(wbits)
        out += inflater.decompress(body, limit + 1 - len(out))
        if len(out) > limit or inflater.unconsumed_tail:
            raise BadBody(413, f"the body is larger than {limit} bytes once decompressed")
        if not inflater.eof:
            raise zlib.error("the compressed data ends before its end-of-stream marker")
        body = inflater.unused_data
        if not body:
            return out
        if wbits != 31 or not body.startswith(b"\x1f\x8b"):
            raise zlib.error("other bytes follow the compressed data")


def _hex_to_base64(value: Any, where: str) -> Any:
    """A JSON body's hex id as the base64 that `json_format` reads; BadBody when it is not
    hex (its length is checked per span, `spans_of`)."""
    if not isinstance(value, str) or value == "":
        return value
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise BadBody(400, f"{where} {value[:40]!r} is not hex") from None
    # An id of the wrong length rejects its span alone (`spans_of`), as in protobuf.
    return base64.b64encode(raw).decode()


#: Where a JSON body keeps its records, and their id fields.
_SPAN_IDS = ("resourceSpans", "scopeSpans", "spans", ("traceId", "spanId", "parentSpanId"))
LOG_IDS = ("resourceLogs", "scopeLogs", "logRecords", ("traceId", "spanId"))


def _ids_to_base64(document: Any, layout: tuple[Any, ...] = _SPAN_IDS) -> None:
    outer, middle, inner, ids = layout
    for resource in _list(document, outer):
        for scope in _list(resource, middle):
            for record in _list(scope, inner):
                if not isinstance(record, dict):
                    continue
                for key in ids:
                    if key in record:
                        record[key] = _hex_to_base64(record[key], key)
                for link in _list(record, "links"):
                    if isinstance(link, dict):
                        for key in ("traceId", "spanId"):
                            if key in link:
                                link[key] = _hex_to_base64(link[key], f"link {key}")


def _list(value: Any, key: str) -> list[Any]:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, list) else []


def decode_request(
    body: bytes,
    content_type: str,
    request: Message | None = None,
    layout: tuple[Any, ...] = _SPAN_IDS,
) -> Any:
    """The request message of a (decompressed) body, parsed into `request` (default a
    new `ExportTraceServiceRequest`; `layout` says where its JSON keeps hex ids); BadBody
    415 for a content type that is neither protobuf nor JSON, 400 for one that does not
    parse."""
    kind = content_type.split(";")[0].strip().lower()
    request = request if request is not None else ExportTraceServiceRequest()
    name = type(request).__name__
    if kind == PROTOBUF:
        try:
            request.ParseFromString(body)
        except (DecodeError, RuntimeError, ValueError) as exc:
            raise BadBody(400, f"the body is not an {name}: {exc}") from None
        return request
    if kind != JSON:
        raise BadBody(415, f"Content-Type {kind[:60]!r} is not {PROTOBUF} or {JSON}")
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        raise BadBody(400, "the body is not JSON") from None
    if not isinstance(document, dict):
        raise BadBody(400, "the JSON body is not an object")
    _ids_to_base64(document, layout)
    try:
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
    except (json_format.ParseError, RecursionError, ValueError, TypeError) as exc:
        reason = str(exc).splitlines()[0][:200] if str(exc) else "invalid"
        raise BadBody(400, f"the JSON is not an {name}: {reason}") from None
    return request


def any_value(value: AnyValue) -> Any:
    """An OTLP `AnyValue` as a JSON value (bytes as base64 text)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return attributes_of(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, kind)


def attributes_of(pairs: Any, found: dict[str, Any] | None = None) -> dict[str, Any]:
    """OTLP key-value pairs as a dict (a repeated key: the last wins), added to `found`
    when given (a span's attributes go on top of its resource's without a second dict)."""
    if found is None:
        found = {}
    pair: KeyValue
    for pair in pairs:
        value = pair.value
        # Most values are strings: a non-empty `string_value` is one (its oneof is set),
        # read without asking which field is set (each access to a field costs a call).
        text = value.string_value
        if text:
            found[pair.key] = text
            continue
        kind = value.WhichOneof("value")
        if kind == "int_value":
            found[pair.key] = value.int_value
        elif kind == "string_value":
            found[pair.key] = text
        else:
            found[pair.key] = any_value(value)
    return found


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def time_of(nanos: int) -> datetime:
    """Nanoseconds since the epoch as an aware UTC datetime, cut to the microsecond
    (exactly: whole microseconds added to the epoch, in integers; no float rounding, and
    one operation where `datetime.fromtimestamp` then `replace` took twice as long)."""
    try:
        return _EPOCH + timedelta(0, 0, nanos // 1000)
    except (OverflowError, OSError, ValueError):
        raise BadBody(400, f"time {nanos} is out of range") from None


def _exception_type(events: Any, attributes: dict[str, Any]) -> str:
    """The ``exception.type`` of a span's first ``exception`` event naming one ("" when
    none): the error's class name, which SDKs record there rather than in ``error.type``
    (LangSmith's generic ``Exception``: the class name its message starts with,
    `langsmith.exception_type`). Nothing else of the event is kept (its message and stack
    trace are never stored)."""
    for event in events:
        if event.name == "exception":
            kind = message = ""
            for pair in event.attributes:  # the stack trace is not even read
                if pair.key == "exception.type":
                    kind = kind or pair.value.string_value
                elif pair.key == "exception.message":
                    message = message or pair.value.string_value
            if kind:
                return exception_type(attributes, str(kind), str(message))[:128]
    return ""


def _genai_events(events: Any) -> list[dict[str, Any]]:
    """A span's GenAI events (named ``gen_ai.*``: messages in the conventions that put
    them in span events) as ``{"name", "attributes"}``; no other event is kept."""
    return [
        {"name": event.name, "attributes": attributes_of(event.attributes)}
        for event in events
        if event.name.startswith("gen_ai.")
    ]


def spans_of(request: ExportTraceServiceRequest) -> tuple[list[SpanRecord], int]:
    """The spans of `request` and how many were unusable (ids of the wrong length: OTLP
    receivers reject those spans, not the request). Each field of a span is read once:
    every read of a protobuf field makes a new Python object."""
    records: list[SpanRecord] = []
    bad = 0
    for resource_spans in request.resource_spans:
        resource = {
            f"resource.{key}": value
            for key, value in attributes_of(resource_spans.resource.attributes).items()
        }
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
                if len(trace_id) != 16 or len(span_id) != 8 or len(parent) not in (0, 8):
                    bad += 1
                    continue
                if trace_id == _NO_TRACE or span_id == _NO_SPAN:
                    bad += 1
                    continue
                attributes = attributes_of(span.attributes, dict(resource))
                events = span.events
                if events:
                    if "error.type" not in attributes and (
                        kind := _exception_type(events, attributes)
                    ):
                        attributes["error.type"] = kind
                    if genai := _genai_events(events):
                        attributes[EVENTS_KEY] = genai
                started = span.start_time_unix_nano
                start = time_of(started)
                end = time_of(span.end_time_unix_nano or started)
                records.append(
                    SpanRecord(
                        trace_id.hex(),
                        span_id.hex(),
                        parent.hex(),
                        span.name[:255],
                        start,
                        max(end, start),
                        int(span.status.code),
                        attributes,
                    )
                )
    return records, bad


_NO_TRACE, _NO_SPAN = bytes(16), bytes(8)
