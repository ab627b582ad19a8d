"""Langfuse SDK spans made plain before they are kept: what the mapping reads of them.

The Langfuse Python SDK (v3, ``langfuse``; its tracer ``langfuse-sdk``) sends one span per
observation, each naming its ``langfuse.observation.type`` (``span``, ``generation``,
``agent``, ``tool``, ``chain``, ...), with the observation's ``langfuse.observation.input``
and ``output`` as JSON (or plain text), and for a generation
``langfuse.observation.model.name`` and ``langfuse.observation.usage_details`` (JSON:
``input`` / ``output``, or the OpenAI drop-in's ``prompt_tokens`` / ``completion_tokens``).
A generation's input is what the app gave it: the OpenAI drop-in's is
``{"messages": [...], "tools": [...]}``, the Chat Completions messages; its output the
assistant's message (``content``, ``tool_calls``). A tool's input is its arguments (the
``@observe()`` decorator's ``{"args": [], "kwargs": {...}}``), its output the result. An
observation that failed has ``langfuse.observation.level`` ``ERROR`` and
``langfuse.observation.status_message``, the exception's message (and the span's status
ERROR). The session and user are ``session.id`` / ``user.id`` (``langfuse.session.id`` /
``langfuse.user.id`` in other releases).

`langfuse_attributes` turns a generation into a GenAI model span
(``gen_ai.operation.name`` ``chat``, ``gen_ai.input.messages`` / ``output.messages`` in
GenAI parts, ``gen_ai.request.model``, ``gen_ai.usage.*``) and a tool observation into an
``execute_tool`` span (``gen_ai.tool.name``, ``gen_ai.tool.call.arguments`` / ``result``;
no call id: the mapping pairs it with the model's call, `tool_pairs`), the converted
values dropped. The level and status message are never kept, nor a failed tool's output.
"""

from __future__ import annotations

import json
from typing import Any

from sessions_app.ingest.normalise import json_or_none

__all__ = ["TYPE", "langfuse_attributes"]

TYPE = "langfuse.observation.type"
INPUT, OUTPUT = "langfuse.observation.input", "langfuse.observation.output"
MODEL, USAGE = "langfuse.observation.model.name", "langfuse.observation.usage_details"
#: What may hold an error's message (the level is dropped with it).
ERROR_KEYS = ("langfuse.observation.status_message", "langfuse.observation.level")
USER = "langfuse.user.id"
RESULT = "gen_ai.tool.call.result"
ERROR_STATUS = 2  # OTLP's STATUS_CODE_ERROR
#: Usage detail names, first found wins: Langfuse's own, the OpenAI drop-in's, others.
TOKENS = {
    "gen_ai.usage.input_tokens": ("input", "prompt_tokens", "input_tokens"),
    "gen_ai.usage.output_tokens": ("output", "completion_tokens", "output_tokens"),
    "gen_ai.usage.cache_read.input_tokens": (
        "input_cached_tokens",
        "cache_read_input_tokens",
        "input_cache_read",
    ),
}
NESTED_CACHED = ("prompt_tokens_details", "input_tokens_details")


def langfuse_attributes(attributes: dict[str, Any], status_code: int) -> dict[str, Any]:
    """`attributes` as the mapping reads them (module docstring); the same dict for a
    span that is not Langfuse's."""
    kind = attributes.get(TYPE)
    if kind is None and USER not in attributes:
        return attributes
    kept = {k: v for k, v in attributes.items() if k not in ERROR_KEYS}
    if isinstance(attributes.get(USER), str):
        kept.setdefault("user.id", attributes[USER])
    if kind == "generation":
        _generation(kept)
    elif kind == "tool":
        _tool(kept, status_code)
    return kept


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _decoded(value: Any) -> Any:
    """A Langfuse value as sent: JSON decoded, a text that is not JSON as itself."""
    decoded = json_or_none(value)
    return value if decoded is None else decoded


def _generation(kept: dict[str, Any]) -> None:
    kept.setdefault("gen_ai.operation.name", "chat")
    if isinstance(kept.get(MODEL), str):
        kept.setdefault("gen_ai.request.model", kept[MODEL])
    usage = _decoded(kept.get(USAGE))
    if isinstance(usage, dict):
        for key, names in TOKENS.items():
            found = next((usage[n] for n in names if isinstance(usage.get(n), int)), None)
            for nested in NESTED_CACHED if found is None and "cache" in key else ():
                details = usage.get(nested)
                if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
                    found = details["cached_tokens"]
            if found is not None:
                kept.setdefault(key, found)
    for key, target, read in (
        (INPUT, "gen_ai.input.messages", _input_messages),
        (OUTPUT, "gen_ai.output.messages", _output_messages),
    ):
        if key in kept and (messages := read(_decoded(kept[key]))):
            kept.setdefault(target, _json(messages))
            del kept[key]


def _tool(kept: dict[str, Any], status_code: int) -> None:
    kept.setdefault("gen_ai.operation.name", "execute_tool")
    if INPUT in kept:
        arguments = _decoded(kept.pop(INPUT))
        if isinstance(arguments, dict) and arguments.keys() == {"args", "kwargs"}:
            if not arguments["args"] and isinstance(arguments["kwargs"], dict):
                arguments = arguments["kwargs"]  # @observe()'s: the keyword arguments
        kept.setdefault("gen_ai.tool.call.arguments", _json(arguments))
    result = kept.pop(OUTPUT, None)
    if status_code != ERROR_STATUS and result is not None:  # the mapping answers an error
        decoded = _decoded(result)  # an object or list as itself, else the text as sent
        kept.setdefault(RESULT, decoded if isinstance(decoded, dict | list) else result)


def _input_messages(value: Any) -> list[dict[str, Any]]:
    """GenAI messages of a generation's input: a list of Chat Completions messages, the
    OpenAI drop-in's ``{"messages": [...]}``, or a prompt's text (a user message)."""
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, str):
        return [{"role": "user", "parts": [{"type": "text", "content": value}]}]
    return _messages(value) if isinstance(value, list) else []


def _output_messages(value: Any) -> list[dict[str, Any]]:
    """GenAI messages of a generation's output: the assistant's message, a list of
    messages, a completion's ``choices``, or a text."""
    if isinstance(value, dict) and isinstance(value.get("choices"), list):
        value = [c.get("message") for c in value["choices"] if isinstance(c, dict)]
    if isinstance(value, str):
        value = {"role": "assistant", "content": value}
    if isinstance(value, dict) and ("content" in value or "tool_calls" in value):
        value = [{"role": "assistant", **value}]
    return _messages(value) if isinstance(value, list) else []


def _messages(items: list[Any]) -> list[dict[str, Any]]:
    """Chat Completions messages as GenAI messages (parts); a tool message's result named
    after the call it answers. [] when an item is not a message (not what was read)."""
    names: dict[str, str] = {}
    messages: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("role"), str):
            return []
        parts: list[dict[str, Any]] = []
        content = item.get("content")
        if item["role"] == "tool":
            call_id = str(item.get("tool_call_id") or "")
            name = str(item.get("name") or names.get(call_id, ""))
            response = _text(content) if isinstance(content, list) else content
            parts.append({"type": "tool_call_response", "id": call_id, "name": name,
                          "response": response})  # fmt: skip
        elif text := (content if isinstance(content, str) else _text(content)):
            parts.append({"type": "text", "content": text})
        for call in item.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                call_id, name = str(call.get("id") or ""), str(function.get("name") or "")
                names[call_id] = name
                parts.append({"type": "tool_call", "id": call_id, "name": name,
                              "arguments": function.get("arguments")})  # fmt: skip
        role = "system" if item["role"] == "developer" else item["role"]  # OpenAI's newer name
        messages.append({"role": role, "parts": parts})
    return messages


def _text(content: Any) -> str:
    """The text parts of a message's content (``[{"type": "text", "text"}]``) joined."""
    if not isinstance(content, list):
        return ""
    texts = [p.get("text") for p in content if isinstance(p, dict)]
    return "\n".join(t for t in texts if isinstance(t, str))
