"""What the Vercel AI SDK's own spans say (npm ``ai``, its ``experimental_telemetry``; in
AI SDK 7 the ``LegacyOpenTelemetry`` integration of ``@ai-sdk/otel``), read as the GenAI
conventions the rest of the mapping reads (docs/otlp.md, "Vercel AI SDK").

The SDK names each span by its ``ai.operationId``: ``ai.generateText`` / ``ai.streamText``
(the whole call: the turn's root), ``ai.generateText.doGenerate`` /
``ai.streamText.doStream`` (one model call: `operation_of` says ``chat``) and
``ai.toolCall`` (one tool run: ``execute_tool``). A model call's input is
``ai.prompt.messages`` (JSON of the SDK's prompt messages: ``content`` text or parts
``text``, ``tool-call`` {toolCallId, toolName, input (``args`` before AI SDK 5)},
``tool-result`` {toolCallId, toolName, output {type, value} (``result`` before AI SDK 5)}),
its output ``ai.response.text`` and ``ai.response.toolCalls`` (JSON of {toolCallId,
toolName, input | args}); `input_messages` and `output_messages` give them as GenAI
messages (``role`` and ``parts``). A tool span carries ``ai.toolCall.id``, ``.name``,
``.args`` and ``.result`` (JSON text), given as ``gen_ai.tool.*`` by `as_genai` (and a
span's ``ai.telemetry.functionId`` as ``gen_ai.agent.name``, as AI SDK 7 names it).
Usage and model are on the model span in the GenAI names too (``gen_ai.usage.*``,
``gen_ai.request.model``, ``gen_ai.response.model``). The session and user are
``telemetry.metadata`` keys (``ai.telemetry.metadata.sessionId`` / ``userId``, as Langfuse
reads them), or in AI SDK 7 the runtime context's (``ai.settings.context.*``).

A tool that raised is handed to the model as a ``tool-result`` of output type
``error-text`` / ``error-json`` whose value is the exception's message: `kept` drops that
value before a span is stored (exception messages are never stored), and keeps of a
model span's input only what the mapping reads (the system messages and those after the
last assistant message, as `history` does for the GenAI attribute).

A tool span may start before the model call that asked for it ended: OpenTelemetry JS
dates a span's start to the whole millisecond (in every capture) and its end to the
fraction, so a tool run right after a model call may read as started up to a millisecond
before that call ended; and ``streamText`` (its tools run while the model streams) and AI
SDK 7's ``LegacyOpenTelemetry`` end a step's model span after the step's tools ran (the
``ai.toolCall`` spans are that model span's children).
Likewise the next model call may read as started before the tool span ended.
`in_call_order` moves such a tool span to the model call's end, and the next model call
to the tool's end, so the call and its result follow the model output that made the call
and come before the next model call (as the SDK ran them).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol, TypeVar

from sessions_app.ingest.normalise import json_or_none

__all__ = ["CONTENT_KEYS", "SESSION_KEYS", "USER_KEYS", "as_genai", "in_call_order",
           "input_messages", "kept", "operation_of", "output_messages"]  # fmt: skip

#: The session and user of a trace (`mapping.SESSION_KEYS`, `USER_KEYS` read them).
SESSION_KEYS = ("ai.telemetry.metadata.sessionId", "ai.settings.context.sessionId")
USER_KEYS = ("ai.telemetry.metadata.userId", "ai.settings.context.userId")
PROMPT, MESSAGES = "ai.prompt", "ai.prompt.messages"
TEXT, CALLS = "ai.response.text", "ai.response.toolCalls"
#: Attributes that carry message content (absent with ``recordInputs`` /
#: ``recordOutputs`` false).
CONTENT_KEYS = frozenset({PROMPT, MESSAGES, TEXT, CALLS, "ai.toolCall.args",
                          "ai.toolCall.result"})  # fmt: skip
#: A tool result's output types that hold an error's message.
ERROR_OUTPUTS = ("error-text", "error-json")
TOOL_ERROR = {"error": "tool_error"}
TOOL_CALL = "ai.toolCall"


class TimedSpan(Protocol):
    """What `in_call_order` reads of a span (`decode.SpanRecord` has it)."""

    span_id: str
    parent_span_id: str
    start_at: datetime
    end_at: datetime
    attributes: dict[str, Any]


Span = TypeVar("Span", bound=TimedSpan)


def operation_of(attributes: dict[str, Any]) -> str:
    """The GenAI operation of a Vercel AI SDK span: ``chat`` for a model call
    (``ai.*.doGenerate`` / ``doStream``), ``execute_tool`` for ``ai.toolCall``; "" for
    any other span (the SDK's other spans, or not the SDK's)."""
    found = attributes.get("ai.operationId")
    if not isinstance(found, str) or not found.startswith("ai."):
        return ""
    if found.endswith((".doGenerate", ".doStream")):
        return "chat"
    return "execute_tool" if found == TOOL_CALL else ""


def _asks_for(model: TimedSpan, call_id: Any) -> bool:
    calls = json_or_none(model.attributes.get(CALLS))
    found = calls if isinstance(calls, list) else []
    return any(isinstance(c, dict) and c.get("toolCallId") == call_id for c in found)


def _asking(models: list[Span], tool: TimedSpan) -> Span | None:
    """The model call that asked for `tool`'s run: its parent (``streamText``'s, AI SDK 7's
    legacy spans), else the one whose output names its call id, else (content not
    captured) the latest that started by the tool's start and finished for tool calls
    (``ai.response.finishReason``, sent without content too), else that ended by the
    tool's end."""
    call_id = tool.attributes.get("ai.toolCall.id")
    for model in models:
        if model.span_id == tool.parent_span_id or _asks_for(model, call_id):
            return model
    earlier = [m for m in models if m.start_at <= tool.start_at]
    asked = [m for m in earlier if m.attributes.get("ai.response.finishReason") == "tool-calls"]
    ended = [m for m in earlier if m.end_at <= tool.end_at]
    return max(asked or ended, key=lambda m: m.start_at, default=None)


def _moved(span: Span, start: datetime, end: datetime) -> Span:
    return replace(span, start_at=start, end_at=end)  # type: ignore[type-var]


def in_call_order(spans: Sequence[Span]) -> list[Span]:
    """`spans` by start time (then span id), as `mapping.turn_drafts` reads them, each AI
    SDK tool span read as starting no earlier than the end of the model call that asked
    for it, and the next model call as starting no earlier than the tool's end (module
    docstring); a moved span's end is never before its start."""
    ordered = sorted(spans, key=lambda s: (s.start_at, s.span_id))
    tools = [s for s in ordered if s.attributes.get("ai.operationId") == TOOL_CALL]
    if not tools:
        return ordered
    models = [s for s in ordered if operation_of(s.attributes) == "chat"]
    moved: dict[str, Span] = {}
    for tool in tools:
        if (found := _asking(models, tool)) is None:
            continue
        asking = moved.get(found.span_id, found)  # as moved after an earlier tool
        start = max(tool.start_at, asking.end_at)
        end = max(tool.end_at, start)
        if (start, end) != (tool.start_at, tool.end_at):
            moved[tool.span_id] = _moved(tool, start, end)
        following = [m for m in models if m.start_at > found.start_at]
        if following:  # the next model call, read as starting after the tool ended
            after = min(following, key=lambda m: m.start_at)
            after = moved.get(after.span_id, after)
            if after.start_at < end:
                moved[after.span_id] = _moved(after, end, max(after.end_at, end))
    if not moved:
        return ordered
    placed = [moved.get(s.span_id, s) for s in ordered]
    return sorted(placed, key=lambda s: (s.start_at, s.span_id))


def _arguments(part: dict[str, Any]) -> Any:
    return part.get("input", part.get("args"))


def _result(part: dict[str, Any]) -> Any:
    """A ``tool-result`` part's result: its output's value (`TOOL_ERROR` for an error,
    whose value is never read), or ``result`` before AI SDK 5."""
    output = part.get("output")
    if isinstance(output, dict):
        if output.get("type") in ERROR_OUTPUTS:
            return dict(TOOL_ERROR)
        if output.get("type") == "execution-denied":
            return {"error": "execution_denied"}
        return output.get("value")
    return dict(TOOL_ERROR) if part.get("isError") else part.get("result")


def _genai_part(part: Any) -> dict[str, Any] | None:
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind in ("text", "reasoning") and isinstance(part.get("text"), str):
        return {"type": kind, "content": part["text"]}
    if kind == "tool-call":
        name = part.get("toolName")
        return {"type": "tool_call", "id": part.get("toolCallId"), "name": name,
                "arguments": _arguments(part)}  # fmt: skip
    if kind == "tool-result":
        name = part.get("toolName")
        return {"type": "tool_call_response", "id": part.get("toolCallId"), "name": name,
                "response": _result(part)}  # fmt: skip
    return None  # files, images: not read


def _genai_message(message: Any) -> dict[str, Any] | None:
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, str):
        parts = [{"type": "text", "content": content}]
    else:
        items = content if isinstance(content, list) else []
        parts = [found for part in items if (found := _genai_part(part)) is not None]
    return {"role": message.get("role"), "parts": parts}


def input_messages(attributes: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A model span's ``ai.prompt.messages`` as GenAI messages (None when absent)."""
    decoded = json_or_none(attributes.get(MESSAGES))
    if not isinstance(decoded, list):
        return None
    return [found for message in decoded if (found := _genai_message(message)) is not None]


def output_messages(attributes: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A model span's ``ai.response.text`` and ``ai.response.toolCalls`` as one GenAI
    assistant message (None when neither was sent)."""
    text, calls = attributes.get(TEXT), json_or_none(attributes.get(CALLS))
    if text is None and not isinstance(calls, list):
        return None
    parts: list[dict[str, Any]] = []
    if isinstance(text, str) and text:
        parts.append({"type": "text", "content": text})
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict):
            parts.append(_genai_part({**call, "type": "tool-call"}) or {})
    return [{"role": "assistant", "parts": parts}]


def as_genai(attributes: dict[str, Any]) -> dict[str, Any]:
    """An AI SDK span's attributes with what `mapping` reads under the GenAI names too:
    its ``ai.telemetry.functionId`` as ``gen_ai.agent.name`` (the events' author), and an
    ``ai.toolCall`` span's call id, tool name, arguments and result
    (``ai.toolCall.result``, JSON text, decoded) as ``gen_ai.tool.*``; the GenAI names
    the span sends win. The same dict for any other span."""
    if "ai.operationId" not in attributes:
        return attributes
    found: dict[str, Any] = {}
    if (function_id := attributes.get("ai.telemetry.functionId")) is not None:
        found["gen_ai.agent.name"] = function_id
    if "ai.toolCall.id" in attributes:
        found["gen_ai.tool.call.id"] = attributes["ai.toolCall.id"]
        found["gen_ai.tool.name"] = attributes.get("ai.toolCall.name")
    if "ai.toolCall.args" in attributes:
        found["gen_ai.tool.call.arguments"] = attributes["ai.toolCall.args"]
    if (result := attributes.get("ai.toolCall.result")) is not None:
        decoded = json_or_none(result)
        found["gen_ai.tool.call.result"] = decoded if decoded is not None else result
    return {**found, **attributes}


def _without_errors(messages: list[Any]) -> bool:
    """Drop, in place, the value of each error result among `messages` (the SDK's prompt
    messages); True when one was dropped."""
    dropped = False
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict) or part.get("type") != "tool-result":
                continue
            output = part.get("output")
            if isinstance(output, dict) and output.get("type") in ERROR_OUTPUTS:
                part["output"] = {"type": output["type"], "value": ""}
                dropped = True
            elif part.get("isError") and part.get("result") not in (None, ""):
                part["result"] = ""
                dropped = True
    return dropped


def _read_part(messages: list[Any]) -> list[Any]:
    """Of a model span's input `messages`, the system ones and those after the last
    assistant one (all of them when there is no assistant message)."""
    roles = [m.get("role") if isinstance(m, dict) else None for m in messages]
    last = max((i for i, role in enumerate(roles) if role == "assistant"), default=-1)
    return [m for i, m in enumerate(messages) if i > last or roles[i] == "system"]


def kept(attributes: dict[str, Any]) -> dict[str, Any]:
    """`attributes` as they may be stored (module docstring): the error results' values
    dropped from ``ai.prompt.messages`` and ``ai.prompt``, and of ``ai.prompt.messages``
    only the part the mapping reads; the same dict when nothing changes (most spans)."""
    if MESSAGES not in attributes and PROMPT not in attributes:
        return attributes
    changed: dict[str, Any] = {}
    messages = json_or_none(attributes.get(MESSAGES))
    if isinstance(messages, list):
        read = _read_part(messages)
        if _without_errors(read) or len(read) != len(messages):
            changed[MESSAGES] = json.dumps(read, ensure_ascii=False, separators=(",", ":"))
    prompt = json_or_none(attributes.get(PROMPT))
    if isinstance(prompt, dict) and isinstance(prompt.get("messages"), list):
        if _without_errors(prompt["messages"]):
            changed[PROMPT] = json.dumps(prompt, ensure_ascii=False, separators=(",", ":"))
    return {**attributes, **changed} if changed else attributes
