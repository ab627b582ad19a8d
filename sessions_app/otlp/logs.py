"""OTLP/HTTP log bodies (``/v1/logs``) to `SpanRecord`s, kept beside the spans.

The body is an `ExportLogsServiceRequest` (`decode.decode_request`, protobuf or JSON).
Only event records are read: GenAI events (``gen_ai.*``), Claude Code's
(``claude_code.*``) and Codex CLI's (``codex.*``, those `codex_events.kept` keeps), named
by the record's ``event_name`` (OTLP 1.5), else its body (as Claude Code sends it), else
its ``event.name`` attribute; other log records are accepted and not kept. Each kept
record becomes a `SpanRecord` of kind `log_mapping.LOG` in the trace it names (its
``parent_span_id`` the span it names), or of kind `log_mapping.UNTRACED` in a trace id
derived from its app, session and turn (`log_mapping.untraced_keys`; a Codex record's
turn: `codex_events.keyed`) when it has no trace context (a Codex record always: its
trace is Codex's own tracing, not its turn). Its ``span_id`` is a digest of
the record and its resource, so a re-sent record is kept once. A GenAI record's body and
message attributes are kept as its event (under `messages.EVENTS_KEY`, as span events
are); Claude Code's ``error`` attribute (the raw error message), ``error.message``,
exception details, the body of a record and a failed Codex tool's output are never kept.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from sessions_app.otlp import claude_code, codex_events
from sessions_app.otlp.decode import (
    LOG_IDS,
    SpanRecord,
    any_value,
    attributes_of,
    decode_request,
    time_of,
)
from sessions_app.otlp.log_mapping import CLAUDE, LOG, ORDER_KEY, UNTRACED, untraced_keys
from sessions_app.otlp.messages import CONTENT_KEYS, EVENTS_KEY

__all__ = ["decode_logs", "log_records_of", "untraced_trace"]

_PREFIXES = ("gen_ai.", CLAUDE, codex_events.CODEX)


def decode_logs(body: bytes, content_type: str) -> ExportLogsServiceRequest:
    """The `ExportLogsServiceRequest` of a (decompressed) body (BadBody as traces')."""
    request: ExportLogsServiceRequest = decode_request(
        body, content_type, ExportLogsServiceRequest(), LOG_IDS
    )
    return request


def _event_name(record: Any, body: Any, attributes: dict[str, Any], scope: str) -> str:
    for name in (record.event_name, body, attributes.get("event.name")):
        if isinstance(name, str) and name.startswith(_PREFIXES):
            return name[:255]
    short = attributes.get("event.name")
    if isinstance(short, str) and short and "claude_code" in scope:
        return f"{CLAUDE}{short}"[:255]
    return ""


def _kept(attributes: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attributes.items()
            if k not in ("error", "error.message") and not k.startswith("exception.")}  # fmt: skip


def _genai_event(name: str, body: Any, attributes: dict[str, Any]) -> dict[str, Any]:
    """The record as a span event: its attributes and its body's fields (a body that is
    not a map is a message's content)."""
    fields = dict(attributes)
    if isinstance(body, dict):
        fields.update(_kept(body))
    elif body not in (None, ""):
        fields["content"] = body
    return {"name": name, "attributes": fields}


def _record_time(record: Any, attributes: dict[str, Any], received: datetime) -> datetime:
    nanos = record.time_unix_nano or record.observed_time_unix_nano
    if nanos:
        return time_of(nanos)
    stamp = attributes.get("event.timestamp")
    if isinstance(stamp, str):
        try:
            found = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            found = None
        if found is not None and found.tzinfo is not None:
            return found
    return received


def untraced_trace(app: str, kept: dict[str, Any], at: datetime) -> str:
    session, turn = untraced_keys(kept, at)
    return hashlib.sha256("\n".join(("logs", app, session, turn)).encode()).hexdigest()[:32]


def log_records_of(
    request: ExportLogsServiceRequest, received: datetime
) -> tuple[list[SpanRecord], int]:
    """The event records of `request` (see the module docstring) and how many were
    unusable (trace or span ids of the wrong length: rejected, as spans are); a record
    with no time of its own is dated `received`."""
    records: list[SpanRecord] = []
    bad = 0
    position = 0
    for resource_logs in request.resource_logs:
        resource = {
            f"resource.{key}": value
            for key, value in attributes_of(resource_logs.resource.attributes).items()
        }
        origin = resource_logs.resource.SerializeToString(deterministic=True)
        app = str(resource.get("resource.service.name") or "otlp")
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                position += 1
                if len(record.trace_id) not in (0, 16) or len(record.span_id) not in (0, 8):
                    bad += 1
                    continue
                raw = attributes_of(record.attributes)
                attributes = _kept(raw)
                body = any_value(record.body) if record.HasField("body") else None
                name = _event_name(record, body, attributes, scope_logs.scope.name)
                codex = name.startswith(codex_events.CODEX)
                found = codex_events.kept(name, attributes, raw) if codex else attributes
                if not name or found is None:
                    continue  # not an event this receiver reads: accepted, not kept
                attributes = found
                at = _record_time(record, attributes, received)
                sequence = attributes.get("event.sequence")
                kept = {**resource, ORDER_KEY: sequence if isinstance(sequence, int) else position}
                if name.startswith("gen_ai."):
                    kept.update(
                        {k: v for k, v in attributes.items()
                         if k not in CONTENT_KEYS and not k.startswith("gen_ai.system_inst")}
                    )  # fmt: skip
                    kept[EVENTS_KEY] = [_genai_event(name, body, attributes)]
                else:
                    kept.update(attributes)
                digest = hashlib.sha256(origin + record.SerializeToString(deterministic=True))
                traced = record.trace_id not in (b"", bytes(16)) and not codex
                trace_id = record.trace_id.hex() if traced else untraced_trace(app, kept, at)
                parent = record.span_id.hex() if record.span_id != bytes(8) else ""
                records.append(
                    SpanRecord(trace_id, digest.hexdigest()[:16], parent, name, at, at, 0,
                               kept, LOG if traced else UNTRACED)
                )  # fmt: skip
    records = claude_code.side_requests_joined(records, untraced_trace)
    return codex_events.keyed(records, untraced_trace), bad
