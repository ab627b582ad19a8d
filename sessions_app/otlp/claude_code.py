"""Claude Code's log events (and its beta spans) as the events of one turn per prompt.

Checked against what Claude Code 2.1.197 really exports (docs/otlp.md,
``tests/otlp/test_claude_code_capture.py``). Its log events (``claude_code.*``) are one
prompt's record: ``user_prompt``, then per model request ``api_request`` (tokens, cost,
duration) or ``api_error``, and ``assistant_response`` (its text, same ``request_id``),
per tool call ``tool_decision`` and ``tool_result``. Without traces they carry no trace
context (the turn is ``<session.id>/<prompt.id>``); with its beta traces on they carry the
trace of the prompt's ``claude_code.interaction`` span, so both signals land in one turn
and each fact is taken once (`claude_code_spans`: what the spans add):

- the prompt: ``user_prompt``'s ``prompt`` (else the interaction span's);
- each model request (by ``request_id``): one assistant event with its text, the tool
  calls it made (the calls decided while it ran, as Claude Code starts a tool while the
  response still streams, else after it ended), usage and cost;
- each tool call (by ``tool_use_id``): the model's arguments (``tool_result``'s
  ``tool_input``, else Claude Code's summary ``tool_parameters``), its result:
  ``{"content_captured": false}`` (Claude Code never sends a tool's output) or the error
  ``error_type`` as a failure code (``ShellError`` -> ``shell_error``), else
  ``tool_error``; ``decision`` ``reject``: the error ``tool_rejected``;
- the outcome (`outcome`): failed at stage provider (``http_<status_code>``, else
  ``api_error``) when the turn's last model request failed; the ``error`` attribute (the
  raw error message) is never read nor kept (`without_error`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from agentops.runtime.session import failure_code_of
from sessions_app.otlp import claude_code_spans as cc_spans
from sessions_app.otlp.authors import USER
from sessions_app.otlp.claude_code_spans import (
    CLAUDE,
    REDACTED,
    Call,
    Request,
    Turn,
    number,
    text,
    usage_of,
)
from sessions_app.otlp.decode import SpanRecord
from sessions_app.otlp.mapping import Draft, Outcome, Place
from sessions_app.otlp.messages import arguments_object, has_content

__all__ = [
    "CLAUDE", "REDACTED", "SIDE_KEY", "drafts", "fill_place", "outcome", "side_requests_joined",
    "without_error",
]  # fmt: skip

LOG = "log"  # `log_mapping.LOG`: a record naming a trace
UNTRACED = "untraced log"  # `log_mapping.UNTRACED`
#: Attribute of a kept record of a side request that joined its prompt's turn.
SIDE_KEY = "otlp.claude.side_request"
#: How far from a prompt a side request's records may be to join its turn.
SIDE_WINDOW = timedelta(seconds=60)


def side_requests_joined(
    records: Sequence[SpanRecord], trace_of: Callable[[str, dict[str, Any], datetime], str]
) -> list[SpanRecord]:
    """`records` with those of Claude Code's side requests put in a prompt's turn: a
    model request Claude Code makes beside the prompt's own (the session's title, a
    topic check: ``query_source`` other than the prompt's) sends its records with
    neither a ``prompt.id`` nor trace context. Each such record joins the prompt of the
    same session nearest to it in time (at most `SIDE_WINDOW`) among `records` (one
    export): that prompt's trace when its records carry one, else its ``prompt.id``'s
    turn (`trace_of(app, attributes, time)`: the trace id of a record without trace
    context), marked `SIDE_KEY` (its text, a title, is not the assistant's answer). A
    record with no such prompt in its export keeps a turn of its own (its minute)."""
    prompts = [
        r for r in records
        if r.name == CLAUDE + "user_prompt" and r.attributes.get("prompt.id")
        and r.attributes.get("session.id")
    ]  # fmt: skip
    if not prompts:
        return list(records)
    joined: list[SpanRecord] = []
    for record in records:
        attrs = record.attributes
        session = attrs.get("session.id")
        near = [
            p for p in prompts
            if p.attributes["session.id"] == session
            and abs(p.start_at - record.start_at) <= SIDE_WINDOW
        ]  # fmt: skip
        if (
            record.kind != UNTRACED or not record.name.startswith(CLAUDE)
            or attrs.get("prompt.id") or not near
        ):  # fmt: skip
            joined.append(record)
            continue
        prompt = min(near, key=lambda p: abs(p.start_at - record.start_at))
        attrs = {**attrs, "prompt.id": prompt.attributes["prompt.id"], SIDE_KEY: True}
        if prompt.kind == LOG:
            joined.append(replace(record, trace_id=prompt.trace_id, kind=LOG, attributes=attrs))
        else:
            app = str(attrs.get("resource.service.name") or "otlp")
            trace_id = trace_of(app, attrs, record.start_at)
            joined.append(replace(record, trace_id=trace_id, attributes=attrs))
    return joined


without_error = cc_spans.without_error


def _read_logs(turn: Turn, records: Sequence[SpanRecord]) -> None:
    floor = records[0].start_at if records else datetime.min
    for record in records:
        attrs, event, at = record.attributes, record.name.removeprefix(CLAUDE), record.start_at
        request_id = str(attrs.get("request_id") or f"record-{record.span_id}")
        if event == "user_prompt" and (prompt := text(attrs.get("prompt"))):
            turn.prompt = turn.prompt or (at, prompt)
        elif event in ("api_request", "api_error"):
            request = turn.request(request_id, at)
            took = number(attrs.get("duration_ms")) or 0
            request.start, request.end = at - timedelta(milliseconds=took), at
            request.logged = True
            if event == "api_request":
                request.usage = usage_of(attrs)
            else:
                request.failed, request.status = True, number(attrs.get("status_code"))
        elif (
            event == "assistant_response"
            and not attrs.get(SIDE_KEY)  # a side request's text (a title) is no answer
            and (answer := text(attrs.get("response")))
        ):
            turn.request(request_id, at).text = answer
        elif event in ("tool_decision", "tool_result"):
            _read_tool_record(turn, record, floor)
        floor = at


def _read_tool_record(turn: Turn, record: SpanRecord, floor: datetime) -> None:
    """A call at its decision, else `duration_ms` before its result (not before the
    record before it: `floor`), and its result or rejection."""
    attrs, at = record.attributes, record.start_at
    decision = record.name.endswith("decision")
    took = number(attrs.get("duration_ms"))
    called = at if decision else max(at - timedelta(milliseconds=took or 0), floor)
    call_id = str(attrs.get("tool_use_id") or f"call-{record.span_id}")
    call = turn.call(call_id, str(attrs.get("tool_name") or attrs.get("name") or "tool"), called)
    call.logged = True
    given = attrs.get("tool_input") or attrs.get("tool_parameters")
    if given and (attrs.get("tool_input") or not call.arguments):  # the model's input wins
        call.arguments = arguments_object(given)
    if decision:
        if str(attrs.get("decision", "")).lower() == "reject":
            call.result_at, call.error = at, "tool_rejected"
        return
    call.result_at = at
    if str(attrs.get("success", "")).lower() == "true":
        call.error = ""
    else:  # the error category only: `error` (the message) is never kept
        call.error = failure_code_of(attrs.get("error_type"), "tool_error")


def _owner(calls: Sequence[Call], requests: Sequence[Request]) -> dict[str, list[Call]]:
    """The calls each request made: the request running at the call's time (Claude Code
    starts a tool as soon as its tool use has streamed, and may answer it, e.g. reject it,
    before the response ends), else the last one ended before it (calls before any
    request: none). A request that started before the one before it ended (their times
    overlap: records dated as they were sent, not as they ran) is not taken as running."""
    made: dict[str, list[Call]] = {}
    done = [r for r in requests if not r.failed]
    after = [datetime.min.replace(tzinfo=r.end.tzinfo) for r in done[:1]]
    after += [previous.end for previous in done[:-1]]
    for call in sorted(calls, key=lambda c: c.at):
        running = [
            r for r, start in zip(done, after, strict=True)
            if start <= r.start <= call.at <= r.end
        ]  # fmt: skip
        before = [r for r in done if r.end <= call.at]
        owner = running[-1] if running else (before[-1] if before else None)
        if owner is not None:
            made.setdefault(owner.key, []).append(call)
    return made


def drafts(spans: Sequence[SpanRecord], records: Sequence[SpanRecord]) -> list[Draft]:
    """The events of Claude Code's `records` (log events, in order) and `spans` (its own
    spans of the same trace), each fact once (see the module docstring)."""
    if not spans and not records:
        return []
    turn = Turn()
    _read_logs(turn, records)
    cc_spans.read_spans(turn, spans, logged=bool(records))
    author = next(
        (str(r.attributes["resource.service.name"])[:255] for r in (*records, *spans)
         if r.attributes.get("resource.service.name")), "claude-code"
    )  # fmt: skip
    found: list[Draft] = []
    if turn.prompt:
        found.append(Draft("prompt", turn.prompt[0], "user", USER, text=turn.prompt[1]))
    requests = sorted(turn.requests.values(), key=lambda r: (r.end, r.key))
    made = _owner(list(turn.calls.values()), requests)
    owned = {call.id for calls in made.values() for call in calls}
    for request in requests:
        calls = made.get(request.key, [])
        if request.failed or not (request.text or calls or request.usage):
            continue
        at = min([request.end, *(c.at for c in calls)])
        found.append(Draft(f"{request.key}:response", at, "assistant", author, text=request.text,
                           tool_calls=[c.as_call() for c in calls], usage=request.usage,
                           finish_reason="tool_calls" if calls else "stop"))  # fmt: skip
    for call in turn.calls.values():
        if call.id not in owned:
            alone = [call.as_call()]
            found.append(Draft(f"{call.id}:call", call.at, "assistant", author,
                               tool_calls=alone, finish_reason="tool_calls"))  # fmt: skip
        if call.result_at is not None:
            found.append(Draft(f"{call.id}:result", call.result_at, "tool", author,
                               tool_response=call.as_response()))  # fmt: skip
    return sorted(found, key=lambda d: d.at)


def fill_place(where: Place, spans: Sequence[SpanRecord], records: Sequence[SpanRecord]) -> None:
    """The model a Claude Code turn names (its latest request's, without Claude Code's
    ``[1m]`` context marker), and whether its spans carry content (`mapping.place`
    counts their GenAI events as content)."""
    ours = [s for s in spans if cc_spans.is_claude_span(s)]
    models = [r for r in records if r.name in (CLAUDE + "api_request", CLAUDE + "api_error")]
    for item in sorted([*models, *ours], key=lambda r: r.end_at, reverse=True):
        if model := cc_spans.model_name(item.attributes.get("model")):
            where.model = model[:255]
            break
    if ours:  # its spans' GenAI events (``gen_ai.request.attempt``) carry no content
        where.content_captured = cc_spans.content_captured(ours) or any(
            has_content(s.attributes) for s in spans if not cc_spans.is_claude_span(s)
        )


def outcome(spans: Sequence[SpanRecord], records: Sequence[SpanRecord]) -> Outcome | None:
    """A Claude Code turn's outcome: running until its interaction span arrives (when its
    records name a trace); completed (as of that span's end, else of the latest record)
    or failed at stage provider when its last model request failed (code
    ``http_<status_code>``, else ``api_error``; the error message is never read)."""
    root = cc_spans.interaction(spans)
    if root is None and (spans or not records or any(r.kind == LOG for r in records)):
        return None
    turn = Turn()
    claude = [r for r in records if r.name.startswith(CLAUDE)]
    _read_logs(turn, claude)
    cc_spans.read_spans(turn, spans, logged=bool(claude))
    finished = root.end_at if root is not None else max(r.start_at for r in records)
    requests = sorted(turn.requests.values(), key=lambda r: (r.end, r.key))
    if requests and requests[-1].failed:
        status = requests[-1].status
        code = failure_code_of(f"http_{int(status)}" if status else "api_error")
        return Outcome("failed", "agent_error", code, "provider", finished)
    return Outcome("completed", "", "", "", finished)
