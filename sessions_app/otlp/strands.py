"""Strands Agents' spans made plain before they are kept: what the mapping reads of them.

Strands (``strands-agents``, its tracer ``strands.telemetry.tracer``; every span names
``gen_ai.system``, or with the latest conventions ``gen_ai.provider.name``,
``strands-agents``) sends per run an ``invoke_agent <name>`` span, an
``execute_event_loop_cycle`` span per cycle, under it a ``chat`` span per model call and
an ``execute_tool <tool>`` span per tool run. Its message content is in span events:

- by default the earlier conventions' events, each message's ``content`` the JSON of
  Strands' (Bedrock's) content blocks (``{"text"}``, ``{"toolUse": {toolUseId, name,
  input}}``, ``{"toolResult": {toolUseId, status, content}}``): ``gen_ai.system.message``,
  ``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message`` at a
  span's start and ``gen_ai.choice`` (``message``) at its end; on a tool span, its
  ``gen_ai.tool.message`` holds the arguments and its ``gen_ai.choice`` the result;
- with ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``, one
  ``gen_ai.client.inference.operation.details`` event for each of the system
  instructions, the input and the output messages (GenAI parts, a tool result's
  ``response`` the content blocks), and on a tool span ``gen_ai.tool.call.arguments`` /
  ``gen_ai.tool.call.result`` (the content blocks' JSON); with
  ``gen_ai_span_attributes_only`` too, the same values as span attributes.

`strands_attributes` turns a model span's messages into the GenAI attributes
(``gen_ai.system_instructions``, ``gen_ai.input.messages``, ``gen_ai.output.messages``)
and a tool span's into ``gen_ai.tool.call.arguments`` / ``result`` (a result's content
blocks as their text), and drops the events. The agent and cycle spans' messages only
repeat those of their model spans (the agent span's answer with a newline added, its usage
summed over the agent's whole life), so they are dropped: the turn's events and usage come
from the model and tool spans. What Strands' redaction
(``gen_ai_unredacted_attributes=``) replaced by `REDACTED` was not captured and is dropped.
A tool that raised gives the model an error result whose text holds the exception's
message (``Error: ConnectionError - <message>``): that text is never kept (a failed
tool's result, and every error result in a model's input, become `ERROR_RESULT`).
"""

from __future__ import annotations

import json
from typing import Any

from sessions_app.ingest.normalise import json_or_none
from sessions_app.otlp.messages import DETAILS_EVENT, EVENTS_KEY, LEGACY_EVENTS

__all__ = ["ERROR_RESULT", "REDACTED", "is_strands", "strands_attributes"]

STRANDS = "strands-agents"
#: Strands' placeholder for a value its redaction policy hides (``REDACTED_VALUE``).
REDACTED = "[REDACTED]"
#: What a tool's error result is kept as (its text holds the exception's message).
ERROR_RESULT = {"status": "error"}
SYSTEM, INPUT, OUTPUT = (
    "gen_ai.system_instructions",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
)
ARGUMENTS, RESULT = "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"
#: The start of the text Strands gives the model for a tool that raised or failed.
ERROR_TEXT = "Error: "
ERROR_STATUS = 2  # OTLP's STATUS_CODE_ERROR


def is_strands(attributes: dict[str, Any]) -> bool:
    """True for a span of Strands' tracer."""
    return (
        attributes.get("gen_ai.system") == STRANDS
        or attributes.get("gen_ai.provider.name") == STRANDS
    )


def strands_attributes(attributes: dict[str, Any], status_code: int) -> dict[str, Any]:
    """`attributes` as the mapping reads them (module docstring); the same dict for a
    span that is not Strands'."""
    if not is_strands(attributes):
        return attributes
    operation = attributes.get("gen_ai.operation.name")
    if operation == "chat":
        return _model_span(attributes)
    if operation == "execute_tool":
        return _tool_span(attributes, status_code)
    return {k: v for k, v in attributes.items() if k not in (EVENTS_KEY, SYSTEM, INPUT, OUTPUT)}


def _events(attributes: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
    events = attributes.get(EVENTS_KEY)
    return [
        (e.get("name"), e["attributes"])
        for e in (events if isinstance(events, list) else [])
        if isinstance(e, dict) and isinstance(e.get("attributes"), dict)
    ]


def _model_span(attributes: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in attributes.items() if k != EVENTS_KEY}
    found: dict[str, list[dict[str, Any]]] = {SYSTEM: [], INPUT: [], OUTPUT: []}
    for name, body in _events(attributes):
        if name == DETAILS_EVENT:  # the latest conventions: the attributes, as sent
            for key in (SYSTEM, INPUT, OUTPUT):
                if key in body:
                    kept.setdefault(key, body[key])
        elif name == "gen_ai.system.message" and (parts := _parts(body.get("content"))):
            found[SYSTEM] += parts
        elif name in LEGACY_EVENTS and (parts := _parts(body.get("content"))):
            found[INPUT].append({"role": LEGACY_EVENTS[str(name)], "parts": parts})
        elif name == "gen_ai.choice" and (parts := _parts(body.get("message"))):
            reason = str(body.get("finish_reason") or "")
            found[OUTPUT].append({"role": "assistant", "parts": parts, "finish_reason": reason})
    for key, values in found.items():
        if values and key not in kept:
            kept[key] = _json(values)
    for key in (INPUT, OUTPUT):
        if key in kept:
            kept[key] = _without_error_results(kept[key])
    return {k: v for k, v in kept.items() if v != REDACTED}


def _tool_span(attributes: dict[str, Any], status_code: int) -> dict[str, Any]:
    kept = {k: v for k, v in attributes.items() if k not in (EVENTS_KEY, INPUT, OUTPUT)}
    for name, body in _events(attributes):
        if name == "gen_ai.tool.message" and "content" in body:
            kept.setdefault(ARGUMENTS, body["content"])
        elif name == "gen_ai.choice" and "message" in body:
            kept.setdefault(RESULT, body["message"])
    if status_code == ERROR_STATUS or str(kept.get("gen_ai.tool.status")) == "error":
        kept.pop(RESULT, None)  # the mapping answers the call with the error's type
    elif RESULT in kept and kept[RESULT] != REDACTED:
        kept[RESULT] = _result(json_or_none(kept[RESULT]), kept[RESULT])
    return {k: v for k, v in kept.items() if v != REDACTED}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _result(blocks: Any, default: Any = None) -> Any:
    """A tool result's content blocks as their text (`ERROR_RESULT` when it is Strands'
    error text); `default` when they are not a list of blocks."""
    if not isinstance(blocks, list):
        return default
    texts: list[str] = []
    for block in blocks:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif isinstance(block, dict) and "json" in block:
            texts.append(_json(block["json"]))
    text = "\n".join(texts)
    return dict(ERROR_RESULT) if text.startswith(ERROR_TEXT) else text


def _parts(content: Any) -> list[dict[str, Any]]:
    """GenAI message parts of a message's content blocks (JSON); a plain text is one
    text part; [] when redacted or unreadable."""
    if not isinstance(content, str) or content == REDACTED:
        return []
    blocks = json_or_none(content)
    if not isinstance(blocks, list):
        return [{"type": "text", "content": content}] if blocks is None else []
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            parts.append({"type": "text", "content": block["text"]})
        elif isinstance(use := block.get("toolUse"), dict):
            parts.append({"type": "tool_call", "id": use.get("toolUseId"),
                          "name": use.get("name"), "arguments": use.get("input")})  # fmt: skip
        elif isinstance(result := block.get("toolResult"), dict):
            response = (
                dict(ERROR_RESULT)
                if result.get("status") == "error"
                else _result(result.get("content"))
            )
            parts.append({"type": "tool_call_response", "id": result.get("toolUseId"),
                          "response": response})  # fmt: skip
    return parts


def _without_error_results(value: Any) -> Any:
    """GenAI messages (JSON) with each tool result's content blocks as their text, and
    Strands' error text (`ERROR_TEXT`) as `ERROR_RESULT`; `value` when it is no list."""
    messages = json_or_none(value) if isinstance(value, str) else value
    if not isinstance(messages, list):
        return value
    for message in messages:
        for part in message.get("parts") or () if isinstance(message, dict) else ():
            if isinstance(part, dict) and part.get("type") == "tool_call_response":
                response = part.get("response")
                if isinstance(response, list):
                    part["response"] = _result(response, response)
                elif isinstance(response, str) and response.startswith(ERROR_TEXT):
                    part["response"] = dict(ERROR_RESULT)
    return _json(messages)
