"""What a trace's log records add to its turn: pure functions over kept records.

A trace (`landing.plan_trace`) may hold spans and log records (`otlp.logs` keeps both as
`SpanRecord`s; `kind` tells them apart). `place`, `turn_drafts` and `turn_outcome` are
`mapping`'s, with the log records taken in (docs/otlp.md, "Logs"):

- GenAI events (``gen_ai.*``: the per-message events and the operation-details event)
  naming a span that is there join that span's events, so the span reads them as if it
  had carried them (its own message attributes first: nothing is read twice); the others
  stand for the model call they describe (a virtual ``chat`` span named by the span id
  they carry, so its events keep their keys when the span arrives), one per call for
  records without trace context (a call ends with its ``gen_ai.choice`` events);
- Claude Code's events (``claude_code.*``) and its own spans become the user's prompt,
  the assistant's text, usage (tokens, cost), tool calls and results, each once
  (`claude_code`, `claude_code_spans`);
- Codex CLI's events (``codex.*``) are mapped by `codex_events` (a turn per prompt);
- a turn whose records have no trace context and no spans (Claude Code sends no traces
  by default) is completed as of its latest record (nothing marks the end of a turn),
  failed when its last model request ended in ``claude_code.api_error``; a trace's
  records wait for its root span like the spans do (running until it arrives; a trace
  of Claude Code's spans: `claude_code.outcome`).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sessions_app.otlp import claude_code, codex_events, mapping
from sessions_app.otlp.decode import SPAN, SpanRecord
from sessions_app.otlp.mapping import SESSION_KEYS, Draft, Outcome, Place
from sessions_app.otlp.messages import EVENTS_KEY, LEGACY_EVENTS, has_content

__all__ = ["LOG", "ORDER_KEY", "UNTRACED", "place", "turn_drafts", "turn_outcome", "untraced_keys"]

#: `SpanRecord.kind` of a log record naming a trace, and of one without trace context.
LOG = "log"
UNTRACED = "untraced log"
#: Attribute of a kept log record: its place among records of the same time (Claude
#: Code's ``event.sequence``, else its position in its request).
ORDER_KEY = "otlp.log.order"
REDACTED, CLAUDE = claude_code.REDACTED, claude_code.CLAUDE


def _ordered(records: Sequence[SpanRecord]) -> list[SpanRecord]:
    def order(record: SpanRecord) -> tuple[datetime, int, str]:
        value = record.attributes.get(ORDER_KEY)
        return record.start_at, value if isinstance(value, int) else 0, record.span_id

    return sorted(records, key=order)


def untraced_keys(attributes: dict[str, Any], at: datetime) -> tuple[str, str]:
    """The session and turn keys of a log record without trace context: the session
    attribute (`mapping.SESSION_KEYS`), else one session per resource (``logs-`` and a
    digest of its resource attributes); the turn Claude Code's ``prompt.id``, else the
    record's minute (UTC); a Codex record's session its ``conversation.id``, its turn
    `codex_events.keyed`'s."""
    keys = (*SESSION_KEYS, "conversation.id")
    session = next((str(attributes[k]) for k in keys if attributes.get(k) not in (None, "")), "")
    if not session:
        resource = {k: v for k, v in attributes.items() if k.startswith("resource.")}
        digest = hashlib.sha256(json.dumps(resource, sort_keys=True, default=str).encode())
        session = f"logs-{digest.hexdigest()[:16]}"
    prompt = attributes.get(codex_events.TURN_KEY, attributes.get("prompt.id"))
    return session, str(prompt) if prompt not in (None, "") else at.strftime("%Y%m%dT%H%MZ")


def _split(records: Sequence[SpanRecord]) -> tuple[list[SpanRecord], list[SpanRecord]]:
    spans = [r for r in records if r.kind == SPAN]
    return spans, _ordered([r for r in records if r.kind != SPAN])


def _log_content(record: SpanRecord) -> bool:
    attrs = record.attributes
    if record.name.startswith(codex_events.CODEX):
        return codex_events.has_content(attrs)
    if record.name.startswith(CLAUDE):
        texts = (attrs.get("prompt"), attrs.get("response"))
        return any(isinstance(t, str) and t and t != REDACTED for t in texts) or any(
            attrs.get(k) for k in ("tool_input", "tool_parameters")
        )
    for event in attrs.get(EVENTS_KEY) or []:
        body = event.get("attributes") if isinstance(event, dict) else None
        if isinstance(body, dict) and (
            "content" in body
            or has_content(body)
            or (isinstance(body.get("message"), dict) and "content" in body["message"])
        ):
            return True
    return False


def place(records: Sequence[SpanRecord]) -> Place:
    """`mapping.place` of the trace's spans (of its log records when it has none), its
    log records filling what the spans lack; records without trace context land where
    `untraced_keys` says."""
    spans, logs = _split(records)
    where = mapping.place(spans or logs)
    claude_code.fill_place(where, spans, logs)
    if not logs:
        return where
    if not spans and all(log.kind == UNTRACED for log in logs):
        where.session_key, where.turn_key = untraced_keys(logs[0].attributes, logs[0].start_at)
    elif not where.session_key:
        where.session_key = mapping.place(logs).session_key
    where.user_id = where.user_id or mapping.place(logs).user_id
    where.content_captured = where.content_captured or any(_log_content(r) for r in logs)
    if not where.model:
        for log in reversed(logs):
            found = log.attributes.get("gen_ai.response.model") or log.attributes.get(
                "gen_ai.request.model", log.attributes.get("model")
            )
            if isinstance(found, str) and found:
                where.model = found[:255]
                break
    return where


def _events(records: Sequence[SpanRecord]) -> list[dict[str, Any]]:
    return [e for r in records for e in r.attributes.get(EVENTS_KEY) or [] if isinstance(e, dict)]


def _virtual_span(span_id: str, records: Sequence[SpanRecord]) -> SpanRecord:
    """A ``chat`` span standing for the model call `records` describe: the first record's
    resource, model and agent, the usage and response model any of them names (an
    operation-details record carries them)."""
    first = records[0]
    attributes = {
        k: v for k, v in first.attributes.items()
        if k.startswith("resource.") or k in ("gen_ai.request.model", "gen_ai.agent.name")
    }  # fmt: skip
    for record in records:
        attributes.update(
            (k, v) for k, v in record.attributes.items()
            if k.startswith("gen_ai.usage.") or k == "gen_ai.response.model"
        )  # fmt: skip
    attributes[EVENTS_KEY] = _events(records)
    return SpanRecord(first.trace_id, span_id, first.parent_span_id, "chat", first.start_at,
                      records[-1].start_at, 0, attributes, first.kind)  # fmt: skip


def _calls(records: Sequence[SpanRecord]) -> list[list[SpanRecord]]:
    """Records without a span, one list per model call: a call's input events, then its
    ``gen_ai.choice`` events; an operation-details event is a call of its own."""
    calls: list[list[SpanRecord]] = []
    open_call = False  # the last call has inputs and may get more, or its choices
    for record in records:
        if (
            record.name == "gen_ai.choice"
            and calls
            and calls[-1][-1].name in (*LEGACY_EVENTS, "gen_ai.choice")
        ):
            calls[-1].append(record)
            open_call = False
        elif record.name in LEGACY_EVENTS and open_call:
            calls[-1].append(record)
        else:
            calls.append([record])
            open_call = record.name in LEGACY_EVENTS
    return calls


def turn_drafts(records: Sequence[SpanRecord]) -> list[Draft]:
    """`mapping.turn_drafts` of the trace's spans with its GenAI log records merged in
    (see the module docstring), and the events of its Claude Code records."""
    spans, logs = _split(records)
    claude_spans = [s for s in spans if s.name.startswith(CLAUDE)]
    spans = [s for s in spans if not s.name.startswith(CLAUDE)] if claude_spans else spans
    genai = [r for r in logs if r.name.startswith("gen_ai.") and EVENTS_KEY in r.attributes]
    by_span: dict[str, list[SpanRecord]] = defaultdict(list)
    loose: list[SpanRecord] = []
    for record in genai:
        if record.parent_span_id:
            by_span[record.parent_span_id].append(record)
        else:
            loose.append(record)
    merged = spans  # a new list (`_split`); most traces send no log records naming a span
    if by_span:
        merged = []
        for span in spans:
            tied = by_span.pop(span.span_id, [])
            if tied:
                own = span.attributes.get(EVENTS_KEY) or []
                span = replace(
                    span, attributes={**span.attributes, EVENTS_KEY: own + _events(tied)}
                )
            merged.append(span)
    merged += [_virtual_span(span_id, tied) for span_id, tied in by_span.items()]
    merged += [_virtual_span(call[0].span_id, call) for call in _calls(loose)]
    claude = [r for r in logs if r.name.startswith(CLAUDE)]
    codex = codex_events.drafts([r for r in logs if r.name.startswith(codex_events.CODEX)])
    return mapping.turn_drafts(merged, extra=claude_code.drafts(claude_spans, claude) + codex)


def turn_outcome(records: Sequence[SpanRecord]) -> Outcome | None:
    """`mapping.turn_outcome` of the trace's spans (`claude_code.outcome` of a trace of
    Claude Code's own spans); for records without trace context and no spans, completed
    as of the latest record, or failed (stage provider) when the last Claude Code model
    request ended in ``claude_code.api_error`` (`claude_code.outcome`)."""
    spans, logs = _split(records)
    if spans and all(span.name.startswith(CLAUDE) for span in spans):
        return claude_code.outcome(spans, logs)
    if spans or not logs or any(log.kind == LOG for log in logs):
        return mapping.turn_outcome(spans)
    if any(log.name.startswith(codex_events.CODEX) for log in logs):
        return codex_events.outcome(logs)
    return claude_code.outcome(spans, logs)
