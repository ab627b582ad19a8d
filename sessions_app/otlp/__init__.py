"""The OTLP/HTTP trace and log receiver (docs/otlp.md): OpenTelemetry GenAI spans and
log events (and Claude Code's events) become sessions, turns and events.

Modules: `models` (`OtlpSpan`, the kept spans; registered through `sessions_app.models`),
`decode` (bodies to `SpanRecord`s with the official `opentelemetry-proto` classes),
`logs` (log bodies to `SpanRecord`s of kind log), `log_mapping` (what a trace's log
records add to its turn),
`messages` (GenAI and vendor message attributes and span events to plain messages),
`openinference` (what OpenInference spans say beyond their messages: span kinds, tool
spans' call ids, arguments and results),
`history` (what is kept of a model span's input: the part the mapping reads),
`mapping` (which session and turn a trace lands in, a span's events, a turn's outcome;
`tool_pairs`: a tool span paired with the model's call when their ids differ or it
has none),
`landing` (a request's traces written together: sessions, turns, events in bulk),
`watched` (what the sessions' watchers are sent, made from that write), `writer`
(keeping spans and landing their traces in one transaction, broadcast to the sessions'
outboxes, silent turns ended), `limits`
(the per-key token bucket), `views` (``POST /v1/traces``, ``/v1/logs`` and the same
under ``/api/public/otel``). Only the model is imported eagerly.
"""

from __future__ import annotations

from sessions_app.otlp.models import OtlpSpan

__all__ = ["OtlpSpan"]
