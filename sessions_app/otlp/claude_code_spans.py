"""What Claude Code's beta trace spans say about a turn (`claude_code` reads its logs).

With ``CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1`` and ``OTEL_TRACES_EXPORTER=otlp`` Claude
Code (checked against 2.1.197's real export) sends, per prompt, one trace of its own
spans (scope ``com.anthropic.claude_code.tracing``), each with ``session.id``:

- ``claude_code.interaction``: the prompt (the trace's root; ``user_prompt``,
  ``<REDACTED>`` unless ``OTEL_LOG_USER_PROMPTS=1``; ``interaction.duration_ms``);
- ``claude_code.llm_request``: a model request (``model``, with Claude Code's ``[1m]``
  marker of the 1M context window, which the API is not sent; ``request_id``,
  ``input_tokens``, ``output_tokens``, ``cache_read_tokens``, ``cache_creation_tokens``,
  ``ttft_ms``, ``duration_ms``, ``success``, ``status_code``, ``attempt``, ``stop_reason``;
  ``error``, the raw error message, on a failed one);
- ``claude_code.tool``: a tool call (``tool_name``, ``tool_use_id``; ``full_command`` or
  ``file_path`` with ``OTEL_LOG_TOOL_DETAILS=1``), with children
  ``claude_code.tool.blocked_on_user`` (the permission wait, its ``decision``) and
  ``claude_code.tool.execution`` (the run: ``success``, ``duration_ms``; ``error`` and an
  ERROR status with the message when it failed).

Its log events carry the same trace, so `read_spans` only fills in what the records of
the turn lack: a request or call no record named (from the spans alone: a call at its
span's start, its result at its execution's end), a request's ``ttft_ms`` and exact
times (a record is dated to the millisecond at the request's end). Never kept: the spans'
``error`` attribute (`without_error`); status descriptions are never kept by the writer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sessions_app.otlp.decode import SPAN, SpanRecord

__all__ = ["CLAUDE", "REDACTED", "Call", "Request", "Turn", "read_spans", "without_error"]

CLAUDE = "claude_code."
#: Claude Code's placeholder for content it was told not to export.
REDACTED = "<REDACTED>"
INTERACTION, LLM_REQUEST, TOOL = CLAUDE + "interaction", CLAUDE + "llm_request", CLAUDE + "tool"
#: The tool span's attributes that are its arguments when no log record gave them.
_TOOL_DETAILS = ("full_command", "file_path", "skill_name", "subagent_type")
_MARKER = re.compile(r"\[[^\]]*\]$")


def without_error(name: str, attributes: dict[str, Any]) -> dict[str, Any]:
    """A Claude Code span's or record's `attributes` without ``error`` (the raw error
    message); others' as they are."""
    if name.startswith(CLAUDE) and "error" in attributes:
        return {k: v for k, v in attributes.items() if k != "error"}
    return attributes


def is_claude_span(record: SpanRecord) -> bool:
    """Whether `record` is one of Claude Code's own spans (not a log record)."""
    return record.kind == SPAN and record.name.startswith(CLAUDE)


def text(value: Any) -> str:
    """A text attribute, "" when absent or redacted."""
    return value if isinstance(value, str) and value != REDACTED else ""


def number(value: Any) -> int | float | None:
    """A number attribute (Claude Code sends some as strings), None when not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    try:
        return float(value) if "." in str(value) else int(value)
    except (TypeError, ValueError):
        return None


def model_name(value: Any) -> str:
    """The model a request names, without Claude Code's ``[1m]`` marker ("" when none)."""
    return _MARKER.sub("", value) if isinstance(value, str) else ""


def usage_of(attrs: dict[str, Any]) -> dict[str, Any]:
    """A request's tokens (``api_request``'s, or its span's) and cost as an event's usage:
    the input counts the cache reads and writes (Anthropic's ``input_tokens`` leaves them
    out), as a Claude Code transcript's import does (docs/concepts.md, "Tokens and
    cost": cached tokens are part of the input)."""
    keys = ("input_tokens", "cache_read_tokens", "cache_creation_tokens")
    prompt = sum(int(number(attrs.get(key)) or 0) for key in keys)
    completion = int(number(attrs.get("output_tokens")) or 0)
    details: dict[str, Any] = {}
    if model := model_name(attrs.get("model")):
        details["model"] = model
    for name, key in (("cached_input_tokens", "cache_read_tokens"),
                      ("cache_creation_input_tokens", "cache_creation_tokens"),
                      ("cost_usd", "cost_usd"), ("duration_ms", "duration_ms"),
                      ("ttft_ms", "ttft_ms")):  # fmt: skip
        found = number(attrs.get(key))
        if found is not None:
            details[name] = found
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion, "details": details}  # fmt: skip


@dataclass(slots=True)
class Request:
    """A model request: its times, text, usage, and whether it failed (its HTTP status)."""

    key: str
    start: datetime
    end: datetime
    text: str = ""
    usage: dict[str, Any] | None = None
    failed: bool = False
    status: int | float | None = None
    logged: bool = False  # an api_request or api_error record named it


@dataclass(slots=True)
class Call:
    """A tool call: its time, arguments, and result (`error` None: no result yet; "": a
    success; else the failure code)."""

    id: str
    name: str
    at: datetime
    arguments: dict[str, Any] = field(default_factory=dict)
    result_at: datetime | None = None
    error: str | None = None
    logged: bool = False  # a tool_decision or tool_result record named it

    def as_call(self) -> dict[str, Any]:
        """The call as an event's tool call."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    def as_response(self) -> dict[str, Any]:
        """The result as an event's tool response (the output is never sent)."""
        response: dict[str, Any] = {"tool_call_id": self.id, "name": self.name}
        if self.error:
            response["error"] = self.error
        else:
            response["result"] = {"content_captured": False}
        return response


@dataclass(slots=True)
class Turn:
    """What a turn's records and spans say: its prompt, its requests and calls by id."""

    prompt: tuple[datetime, str] | None = None
    requests: dict[str, Request] = field(default_factory=dict)
    calls: dict[str, Call] = field(default_factory=dict)

    def request(self, key: str, at: datetime) -> Request:
        """The request `key` (new: at `at`)."""
        return self.requests.setdefault(key, Request(key, at, at))

    def call(self, call_id: str, name: str, at: datetime) -> Call:
        """The call `call_id` (new: named `name`), made at `at` or before."""
        call = self.calls.setdefault(call_id, Call(call_id, name, at))
        call.at = min(call.at, at)
        return call


def interaction(spans: Sequence[SpanRecord]) -> SpanRecord | None:
    """The trace's ``claude_code.interaction`` span (None until it arrives)."""
    return min((s for s in spans if s.name == INTERACTION), key=lambda s: s.start_at, default=None)


def content_captured(spans: Sequence[SpanRecord]) -> bool:
    """Whether Claude Code's spans carry content (a prompt's text, a tool's details)."""
    return any(
        (span.name == INTERACTION and text(span.attributes.get("user_prompt")))
        or (span.name == TOOL and any(span.attributes.get(k) for k in _TOOL_DETAILS))
        for span in spans
    )


def read_spans(turn: Turn, spans: Sequence[SpanRecord], logged: bool = False) -> None:
    """Fill `turn` with what its Claude Code spans say that its log records did not;
    `logged`: the trace has Claude Code's log records, so a request none of them names
    is not the prompt's: Claude Code sends the records of a side request (the session
    title's, ``query_source`` ``generate_session_title``) without trace context, while
    its span is in the prompt's trace; those records land on their own (a request is
    counted once)."""
    children: dict[str, dict[str, SpanRecord]] = {}
    for span in spans:
        children.setdefault(span.parent_span_id, {})[span.name] = span
    for span in sorted(spans, key=lambda s: (s.start_at, s.span_id)):
        attrs = span.attributes
        if span.name == INTERACTION and turn.prompt is None:
            if prompt := text(attrs.get("user_prompt")):
                turn.prompt = (span.start_at, prompt)
        elif span.name == LLM_REQUEST:
            _read_request(turn, span, logged)
        elif span.name == TOOL:
            _read_tool(turn, span, children.get(span.span_id, {}))


def _read_request(turn: Turn, span: SpanRecord, logged: bool) -> None:
    attrs = span.attributes
    key = str(attrs.get("request_id") or f"span-{span.span_id}")
    if logged and key not in turn.requests:
        return
    request = turn.request(key, span.end_at)
    request.start, request.end = span.start_at, span.end_at  # exact, where records round
    if not request.logged:
        request.failed = attrs.get("success") is False
        request.status = number(attrs.get("status_code"))
        if not request.failed:
            request.usage = usage_of(attrs)
    elif request.usage is not None and (ttft := number(attrs.get("ttft_ms"))) is not None:
        request.usage["details"]["ttft_ms"] = ttft


def _read_tool(turn: Turn, span: SpanRecord, children: dict[str, SpanRecord]) -> None:
    attrs = span.attributes
    call_id = str(attrs.get("tool_use_id") or f"span-{span.span_id}")
    call = turn.call(call_id, str(attrs.get("tool_name") or "tool"), span.start_at)
    if call.logged:
        return
    call.arguments = {k: attrs[k] for k in _TOOL_DETAILS if attrs.get(k)}
    run, waited = children.get(TOOL + ".execution"), children.get(TOOL + ".blocked_on_user")
    if run is not None:
        call.result_at = run.end_at
        call.error = "" if run.attributes.get("success") is not False else "tool_error"
    elif waited is not None and str(waited.attributes.get("decision")).lower() == "reject":
        call.result_at, call.error = waited.end_at, "tool_rejected"
