"""Codex CLI's log events (``codex.*``) into sessions, turns and events.

OpenAI's Codex CLI exports log records without trace context (its ``[otel]`` exporter in
``config.toml``), each naming its conversation (``conversation.id``), none its turn. So:

- `kept` says which records are kept and with which attributes: the user's prompt
  (``codex.user_prompt``), each model request (``codex.api_request``), the streamed
  response's usage or failure (``codex.sse_event`` of ``response.completed`` with token
  counts, or one that failed: ``response.failed``, or any with an ``error.message``; the
  other streamed events, one per delta, are not kept), and the tool calls
  (``codex.tool_decision``, ``codex.tool_result``). A record's ``error.message`` is never
  kept (`FAILED_KEY` says it had one), nor a failed tool's ``output`` (the error message
  Codex gave the model), nor a shell command's output when it exited with another code
  than 0 (its exit code is kept instead);
- `keyed` puts each record in a turn: the turn of the conversation's latest prompt (its
  time, UTC to the millisecond), the prompt's own records included; records sent before
  any prompt of their request (a turn cut across two exports) are left for `placed`,
  which puts them, as the request is stored, in the conversation's latest prompt turn
  stored before them (whichever server process stored it), else the minute they were
  sent in;
- `drafts` makes the events: the prompt (unless Codex sent ``[REDACTED]``:
  ``log_user_prompt`` is off), the usage of each model call (tokens, cached and reasoning
  tokens, model, the request's duration), each tool call (at its decision, with the
  arguments its result carries) and its result, once (the command's output;
  ``tool_rejected`` when the decision denied it; a failed tool ``tool_error``; a command
  that exited with code n ``exit_code_<n>``);
- `outcome`: completed as of the latest record, or failed at stage provider when the
  last model request failed (``http_<status>``, else ``api_error``: its stream failed).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from agentops.runtime.session import failure_code_of
from sessions_app.otlp import log_mapping
from sessions_app.otlp.authors import USER
from sessions_app.otlp.decode import SpanRecord
from sessions_app.otlp.mapping import Draft, Outcome
from sessions_app.otlp.messages import arguments_object

__all__ = [
    "CODEX",
    "EXIT_KEY",
    "FAILED_KEY",
    "TURN_KEY",
    "drafts",
    "has_content",
    "kept",
    "keyed",
    "outcome",
    "placed",
]

CODEX = "codex."
#: Attribute of a kept Codex record: the key of its turn (`keyed`).
TURN_KEY = "otlp.log.turn"
#: Attribute of a kept ``codex.tool_result``: the exit code its shell command reported.
EXIT_KEY = "otlp.codex.exit_code"
#: Attribute of a kept Codex record that came with an ``error.message`` (not kept).
FAILED_KEY = "otlp.codex.failed"
#: Codex's placeholder for a prompt it was told not to export.
REDACTED = "[REDACTED]"
_EXIT = re.compile(r"^Process exited with code (-?\d+)$", re.MULTILINE)
_FAILED_STREAM = ("response.failed", "response.incomplete", "error")
#: A ``codex.tool_decision`` that did not let the tool run.
_REFUSED = ("denied", "abort", "timed_out")
#: A prompt turn's key (`_turn_key`): the prompt's time, UTC to the millisecond.
_PROMPT_TURN = re.compile(r"^\d{8}T\d{6}\.\d{3}Z$")


def _event(name: str) -> str:
    return name.removeprefix(CODEX)


def _failed_stream(attributes: dict[str, Any]) -> bool:
    kind = str(attributes.get("event.kind") or "")
    return kind in _FAILED_STREAM or bool(attributes.get(FAILED_KEY))


def kept(name: str, attributes: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any] | None:
    """The attributes to keep of a Codex record named `name` (`attributes`: those the
    receiver keeps of any record; `raw`: all it sent), or None when it is not kept (see
    the module docstring)."""
    event = _event(name)
    found = {k: v for k, v in attributes.items() if k != "auth.error"}
    if raw.get("error.message"):
        found[FAILED_KEY] = True
    if event == "sse_event":
        if "input_token_count" not in found and not _failed_stream(found):
            return None
    elif event not in ("user_prompt", "api_request", "tool_decision", "tool_result"):
        return None
    if event == "tool_result":
        output = found.get("output")
        exited = _EXIT.search(output) if isinstance(output, str) else None
        if exited:
            found[EXIT_KEY] = int(exited.group(1))
        if str(found.get("success", "")).lower() != "true" or found.get(EXIT_KEY, 0) != 0:
            found.pop("output", None)  # an error's text, never kept
    return found


def _turn_key(at: datetime) -> str:
    return at.strftime("%Y%m%dT%H%M%S.%f")[:-3] + "Z"


def keyed(
    records: Sequence[SpanRecord], trace_of: Callable[[str, dict[str, Any], datetime], str]
) -> list[SpanRecord]:
    """`records` with each Codex record without trace context given its turn (under
    `TURN_KEY`; see the module docstring) and the trace id `trace_of(app, attributes,
    time)` derives from it."""
    latest: dict[tuple[str, str], str] = {}
    keyed_records: list[SpanRecord] = []
    for record in records:
        attrs = record.attributes
        conversation = str(attrs.get("conversation.id") or "")
        if (
            record.kind != log_mapping.UNTRACED
            or not record.name.startswith(CODEX)
            or not (conversation)
        ):
            keyed_records.append(record)
            continue
        app = str(attrs.get("resource.service.name") or "otlp")
        where = (app, conversation)
        if record.name == CODEX + "user_prompt":
            latest[where] = _turn_key(record.start_at)
        turn = latest.get(where)
        if not turn:  # before the request's first prompt of its conversation: `placed`
            keyed_records.append(record)
            continue
        attrs = {**attrs, TURN_KEY: turn}
        trace_id = trace_of(app, attrs, record.start_at)
        keyed_records.append(replace(record, trace_id=trace_id, attributes=attrs))
    return keyed_records


def _unplaced(record: SpanRecord) -> bool:
    return (
        record.kind == log_mapping.UNTRACED
        and record.name.startswith(CODEX)
        and TURN_KEY not in record.attributes
        and bool(record.attributes.get("conversation.id"))
    )


def placed(
    records: Sequence[SpanRecord],
    latest_turn: Callable[[str, datetime], Sequence[str]],
    trace_of: Callable[[str, dict[str, Any], datetime], str],
) -> list[SpanRecord]:
    """`records` with each Codex record `keyed` left without a turn (it came before any
    prompt of its conversation in its request) put in the conversation's latest prompt
    turn stored before it: `latest_turn(conversation, at)` gives the keys of the
    conversation's stored turns that started at or before `at`, latest first (one call
    per conversation, at its earliest such record). The others, and all of them when no
    prompt turn is stored, are returned as they are."""
    earliest: dict[str, datetime] = {}
    for record in records:
        if _unplaced(record):
            conversation = str(record.attributes["conversation.id"])
            earliest[conversation] = min(earliest.get(conversation, record.start_at),
                                         record.start_at)  # fmt: skip
    if not earliest:
        return list(records)
    turns = {
        conversation: next((k for k in latest_turn(conversation, at) if _PROMPT_TURN.match(k)), "")
        for conversation, at in earliest.items()
    }
    found: list[SpanRecord] = []
    for record in records:
        turn = turns.get(str(record.attributes.get("conversation.id"))) if _unplaced(record) else ""
        if not turn:
            found.append(record)
            continue
        attrs = {**record.attributes, TURN_KEY: turn}
        app = str(attrs.get("resource.service.name") or "otlp")
        found.append(
            replace(record, trace_id=trace_of(app, attrs, record.start_at), attributes=attrs)
        )
    return found


def _text(value: Any) -> str:
    return value if isinstance(value, str) and value != REDACTED else ""


def has_content(attributes: dict[str, Any]) -> bool:
    """Whether a Codex record carries message content: the prompt's text (Codex sends
    tools' arguments and output whatever ``log_user_prompt`` says)."""
    return bool(_text(attributes.get("prompt")))


def _number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _usage(attrs: dict[str, Any], request: dict[str, Any] | None) -> dict[str, Any]:
    """A streamed response's token counts (``codex.sse_event``) as an event's usage."""
    prompt = _number(attrs.get("input_token_count")) or 0
    completion = _number(attrs.get("output_token_count")) or 0
    details: dict[str, Any] = {}
    if isinstance(attrs.get("model"), str):
        details["model"] = attrs["model"]
    for name, key in (("cached_input_tokens", "cached_token_count"),
                      ("cache_creation_input_tokens", "cache_write_token_count"),
                      ("reasoning_output_tokens", "reasoning_token_count")):  # fmt: skip
        found = _number(attrs.get(key))
        if found is not None:
            details[name] = found
    took = _number((request or {}).get("duration_ms"))
    if took is not None:
        details["duration_ms"] = took
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion, "details": details}  # fmt: skip


def _result(attrs: dict[str, Any]) -> dict[str, Any]:
    """A ``codex.tool_result``'s answer: its output, else its error's code."""
    if str(attrs.get("success", "")).lower() != "true":
        return {"error": "tool_error"}
    code = attrs.get(EXIT_KEY, 0)
    if code != 0:
        return {"error": failure_code_of(f"exit_code_{code}", "tool_error")}
    output = attrs.get("output")
    return {"result": output if isinstance(output, str) else {"content_captured": False}}


def drafts(records: Sequence[SpanRecord]) -> list[Draft]:
    """The events of a turn's Codex records, in their order (docs/otlp.md)."""
    results = {
        str(r.attributes["call_id"]): r.attributes
        for r in records
        if r.name == CODEX + "tool_result" and r.attributes.get("call_id")
    }
    decided: set[str] = set()
    refused: set[str] = set()
    answered: set[str] = set()
    request: dict[str, Any] | None = None
    found: list[Draft] = []
    floor = records[0].start_at if records else datetime.min
    for record in records:
        attrs, event, key, at = (
            record.attributes,
            _event(record.name),
            record.span_id,
            record.start_at,
        )
        author = str(attrs.get("resource.service.name") or "codex")[:255]
        call_id = str(attrs.get("call_id") or f"call-{key}")
        name = str(attrs.get("tool_name") or "tool")
        if event == "user_prompt" and (text := _text(attrs.get("prompt"))):
            found.append(Draft(f"{key}:prompt", at, "user", USER, text=text))
        elif event == "api_request":
            request = attrs
        elif event == "sse_event" and "input_token_count" in attrs:
            usage = _usage(attrs, request)
            found.append(Draft(f"{key}:usage", at, "assistant", author, usage=usage))
        elif event in ("tool_decision", "tool_result") and call_id not in decided:
            decided.add(call_id)
            took = _number(attrs.get("duration_ms")) if event == "tool_result" else None
            called = max(at - timedelta(milliseconds=took or 0), floor)
            arguments = arguments_object((results.get(call_id) or {}).get("arguments"))
            call = {"id": call_id, "name": name, "arguments": arguments}
            found.append(Draft(f"{key}:call", called, "assistant", author,
                               tool_calls=[call], finish_reason="tool_calls"))  # fmt: skip
        if event == "tool_decision" and str(attrs.get("decision", "")).lower() in _REFUSED:
            refused.add(call_id)
        answers = event == "tool_result" or (call_id in refused and call_id not in results)
        if answers and call_id not in answered:  # one result a call
            answered.add(call_id)
            response = {"tool_call_id": call_id, "name": name}
            response.update({"error": "tool_rejected"} if call_id in refused else _result(attrs))
            found.append(Draft(f"{key}:result", at, "tool", author, tool_response=response))
        floor = at
    return found


def outcome(records: Sequence[SpanRecord]) -> Outcome:
    """A turn of Codex records without trace context: completed as of its latest record,
    failed (stage provider) when its last model request failed: an HTTP status of 400 or
    more (``http_<status>``), else an error without one (no answer) or a failed stream
    (``api_error``)."""
    last = max(r.start_at for r in records)
    requests = [
        r
        for r in records
        if r.name == CODEX + "api_request"
        or (r.name == CODEX + "sse_event" and _failed_stream(r.attributes))
    ]
    if requests:
        final = requests[-1].attributes
        status = _number(final.get("http.response.status_code"))
        if status is not None and status >= 400:
            return Outcome("failed", "agent_error", failure_code_of(f"http_{status}"),
                           "provider", last)  # fmt: skip
        if _event(requests[-1].name) == "sse_event" or final.get(FAILED_KEY):
            return Outcome("failed", "agent_error", "api_error", "provider", last)
    return Outcome("completed", "", "", "", last)
