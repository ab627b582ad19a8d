"""Message attributes of GenAI spans to plain messages (`Message`), vendor by vendor.

Read, in this order (the first present wins, docs/otlp.md):

- the OpenTelemetry GenAI conventions: ``gen_ai.input.messages``,
  ``gen_ai.output.messages`` and ``gen_ai.system_instructions``, JSON strings of messages
  with ``parts`` (``text``, ``tool_call`` {id, name, arguments}, ``tool_call_response``
  {id, response | result});
- Google ADK / Vertex: ``gcp.vertex.agent.llm_request`` / ``llm_response`` (JSON of the
  request's ``contents`` and the response's ``content``: ``text``, ``function_call``,
  ``function_response`` parts);
- OpenInference: ``llm.input_messages.N.message.role|content|tool_calls.M.tool_call...``
  and ``llm.output_messages.*`` (flattened attributes);
- OpenLLMetry (Traceloop): ``gen_ai.prompt.N.role|content|tool_call_id`` and
  ``gen_ai.completion.N.role|content|tool_calls.M.id|name|arguments`` (flattened);
- the Vercel AI SDK: ``ai.prompt.messages``, ``ai.response.text|toolCalls`` (`vercel_ai`);
- span events (`EVENTS_KEY`, kept by `decode`): the GenAI
  ``gen_ai.client.inference.operation.details`` event's message attributes, else the
  earlier conventions' per-message events (``gen_ai.system.message``,
  ``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message``,
  ``gen_ai.choice``: ``content``, ``tool_calls``, ``id``, ``message``).

Everything here is pure: values in, values out; nothing raises on odd shapes (a part it
cannot read is skipped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sessions_app.ingest.normalise import json_or_none
from sessions_app.otlp import vercel_ai
from sessions_app.otlp.openinference import carries_content

__all__ = [
    "EVENTS_KEY",
    "Call",
    "Message",
    "Result",
    "adk_content",
    "genai_role",
    "has_key_prefix",
    "input_messages",
    "output_messages",
    "system_text",
]

#: The attribute under which `decode` keeps a span's GenAI events: a list of
#: ``{"name", "attributes"}`` (span events are otherwise never kept).
EVENTS_KEY = "span.events.gen_ai"
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
#: The earlier conventions' message events, by the role they carry.
LEGACY_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


@dataclass(slots=True)
class Call:
    """A tool call: its id, tool name and arguments (an object)."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class Result:
    """A tool result: the call id it answers, the tool name, the result (any JSON)."""

    call_id: str
    name: str
    result: Any


@dataclass(slots=True)
class Message:
    """A message: role (system, user, assistant, tool), text, calls, results."""

    role: str
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    finish_reason: str = ""


_ROLES = {"model": "assistant", "ai": "assistant", "human": "user", "function": "tool"}


def arguments_object(value: Any) -> dict[str, Any]:
    """Tool arguments as an object: a JSON string decoded, a non-object kept under
    ``value``."""
    decoded = json_or_none(value) if isinstance(value, str) else value
    if isinstance(decoded, dict):
        return decoded
    if value in (None, ""):
        return {}
    return {"value": decoded if decoded is not None else value}


#: The role of each name as sent in lower case (what `_role` makes of it, looked up).
_KNOWN_ROLES = {name: _ROLES.get(name, name) for name in ("system", "user", "assistant", "tool",
                *_ROLES)}  # fmt: skip


def _role(value: Any) -> str:
    if isinstance(value, str) and (known := _KNOWN_ROLES.get(value)) is not None:
        return known
    role = str(value or "user").lower()
    role = _ROLES.get(role, role)
    return role if role in ("system", "user", "assistant", "tool") else "user"


def genai_role(item: Any) -> str | None:
    """The role of one item of a GenAI messages attribute (None: not an object, so no
    message)."""
    return _role(item.get("role")) if isinstance(item, dict) else None


def _genai_message(item: Any) -> Message | None:
    if not isinstance(item, dict):
        return None
    message = Message(_role(item.get("role")), finish_reason=str(item.get("finish_reason", "")))
    texts: list[str] = []
    for part in item.get("parts") or ():
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" or kind == "reasoning":
            if isinstance(content := part.get("content"), str):
                texts.append(content)
        elif kind == "tool_call":
            message.calls.append(
                Call(
                    str(part.get("id") or ""),
                    str(part.get("name") or ""),
                    arguments_object(part.get("arguments")),
                )
            )
        elif kind == "tool_call_response":
            result = part.get("response", part.get("result"))
            message.results.append(
                Result(str(part.get("id") or ""), str(part.get("name") or ""), result)
            )
    if isinstance(content := item.get("content"), str):  # older shape: {"role", "content"}
        texts.append(content)
    message.text = texts[0] if len(texts) == 1 else "\n".join(texts)
    return message


def _genai(value: Any, after_last_assistant: bool = False) -> list[Message]:
    decoded = json_or_none(value)
    if not isinstance(decoded, list):
        return []
    if after_last_assistant:  # the history before it is not read: found from the end
        for index in range(len(decoded) - 1, -1, -1):
            if genai_role(decoded[index]) == "assistant":
                decoded = decoded[index + 1 :]
                break
    return [message for item in decoded if (message := _genai_message(item)) is not None]


def adk_content(content: Any) -> Message | None:
    if not isinstance(content, dict):
        return None
    message = Message(role=_role(content.get("role")))
    texts: list[str] = []
    for part in content.get("parts") or []:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
        call = part.get("function_call")
        if isinstance(call, dict):
            message.calls.append(
                Call(
                    str(call.get("id") or ""),
                    str(call.get("name") or ""),
                    arguments_object(call.get("args")),
                )
            )
        response = part.get("function_response")
        if isinstance(response, dict):
            message.results.append(
                Result(
                    str(response.get("id") or ""),
                    str(response.get("name") or ""),
                    response.get("response"),
                )
            )
    message.text = "\n".join(texts)
    if message.results:
        message.role = "tool"
    return message


def has_key_prefix(attributes: dict[str, Any], *prefixes: str) -> bool:
    """True when a key of `attributes` may start with one of `prefixes` (never False
    when one does): the keys joined after NULs, searched for NUL + prefix at C speed,
    instead of a test per key in Python (most spans carry no flattened attributes)."""
    keys = "\0" + "\0".join(attributes)
    for prefix in prefixes:
        if "\0" + prefix in keys:
            return True
    return False


_OI = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
_OI_CALL = re.compile(r"^tool_calls\.(\d+)\.tool_call\.(id|function\.name|function\.arguments)$")
_OI_TEXT = re.compile(r"^contents\.(\d+)\.message_content\.text$")


def _openinference(attributes: dict[str, Any], direction: str) -> list[Message]:
    if not has_key_prefix(attributes, f"llm.{direction}_messages."):
        return []
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        match = _OI.match(key)
        if match is None or match.group(1) != direction:
            continue
        found.setdefault(int(match.group(2)), {})[match.group(3)] = value
    messages: list[Message] = []
    for index in sorted(found):
        fields = found[index]
        message = Message(role=_role(fields.get("role")))
        parts: dict[int, str] = {}  # contents.N text parts, read when content is absent
        calls: dict[int, dict[str, Any]] = {}
        for key, value in fields.items():
            if (part := _OI_TEXT.match(key)) is not None and isinstance(value, str):
                parts[int(part.group(1))] = value
            if (call := _OI_CALL.match(key)) is not None:
                calls.setdefault(int(call.group(1)), {})[call.group(2)] = value
        for _, call_fields in sorted(calls.items()):
            message.calls.append(
                Call(
                    str(call_fields.get("id") or ""),
                    str(call_fields.get("function.name") or ""),
                    arguments_object(call_fields.get("function.arguments")),
                )
            )
        content = fields.get("content")  # the whole text when sent with the parts too
        whole = isinstance(content, str) and (content != "" or not parts)
        message.text = str(content) if whole else "\n".join(parts[i] for i in sorted(parts))
        if message.role == "tool":
            message.results.append(
                Result(
                    str(fields.get("tool_call_id") or ""),
                    str(fields.get("name") or ""),
                    message.text,
                )
            )
            message.text = ""
        messages.append(message)
    return messages


_LLMETRY = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")
_LLMETRY_CALL = re.compile(r"^tool_calls\.(\d+)\.(id|name|arguments)$")


def _openllmetry(attributes: dict[str, Any], direction: str) -> list[Message]:
    if not has_key_prefix(attributes, f"gen_ai.{direction}."):
        return []
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        match = _LLMETRY.match(key)
        if match is not None and match.group(1) == direction:
            found.setdefault(int(match.group(2)), {})[match.group(3)] = value
    messages: list[Message] = []
    for index in sorted(found):
        fields = found[index]
        calls: dict[int, dict[str, Any]] = {}
        for key, value in fields.items():
            if (call := _LLMETRY_CALL.match(key)) is not None:
                calls.setdefault(int(call.group(1)), {})[call.group(2)] = value
        body = {k: v for k, v in fields.items() if not k.startswith("tool_calls.")}
        body["tool_calls"] = [calls[n] for n in sorted(calls)]
        message = _legacy_message(body, "assistant" if direction == "completion" else "user")
        if message is not None:
            messages.append(message)
    return messages


def _legacy_message(body: Any, role: str) -> Message | None:
    """A message of the earlier GenAI conventions (an event's body, or OpenLLMetry's
    fields): ``role``, ``content`` (text, or a JSON list of parts with ``text``),
    ``tool_calls`` ({id, name, arguments} or {id, function: {name, arguments}}), and for
    a tool message the ``id`` / ``tool_call_id`` it answers."""
    if not isinstance(body, dict):
        return None
    message = Message(role=_role(body.get("role") or role))
    content = body.get("content")
    parts = json_or_none(content) if isinstance(content, str) else content
    if isinstance(parts, list):
        texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
        text = "\n".join(texts)
    else:
        text = content if isinstance(content, str) else ""
    calls = json_or_none(body.get("tool_calls"))
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict):
            function = call.get("function")
            if not isinstance(function, dict):
                function = call
            message.calls.append(
                Call(
                    str(call.get("id") or ""),
                    str(function.get("name") or ""),
                    arguments_object(function.get("arguments")),
                )
            )
    answered = body.get("tool_call_id") or body.get("id")
    if message.role == "tool" and answered:
        message.results.append(Result(str(answered), str(body.get("name") or ""), content))
    else:
        message.text = text
    return message


def _events(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    events = attributes.get(EVENTS_KEY)
    return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []


def _event_messages(attributes: dict[str, Any], direction: str) -> list[Message]:
    key = f"gen_ai.{direction}.messages"
    for event in _events(attributes):
        details = event.get("attributes")
        if event.get("name") == DETAILS_EVENT and isinstance(details, dict) and key in details:
            return _genai(details[key])
    messages: list[Message] = []
    for event in _events(attributes):
        name, body = event.get("name"), event.get("attributes")
        if direction == "output" and name == "gen_ai.choice" and isinstance(body, dict):
            inner = json_or_none(body.get("message"))
            message = _legacy_message(inner if isinstance(inner, dict) else body, "assistant")
        elif direction == "input" and name in LEGACY_EVENTS and name != "gen_ai.system.message":
            message = _legacy_message(body, LEGACY_EVENTS[str(name)])
        else:
            continue
        if message is not None:
            messages.append(message)
    return messages


def input_messages(
    attributes: dict[str, Any], *, after_last_assistant: bool = False
) -> list[Message]:
    """The messages a model span was given (history included), by the first convention
    present; [] when content was not captured. `after_last_assistant`: the caller keeps
    only those after the last assistant message, so the GenAI attribute's earlier
    history may be left unread (other conventions return it all)."""
    if "gen_ai.input.messages" in attributes:
        return _genai(attributes["gen_ai.input.messages"], after_last_assistant)
    if (vercel := vercel_ai.input_messages(attributes)) is not None:  # ai.prompt.messages
        return _genai(vercel, after_last_assistant)
    request = json_or_none(attributes.get("gcp.vertex.agent.llm_request"))
    if isinstance(request, dict):
        contents = request.get("contents") or []
        return [m for c in contents if (m := adk_content(c)) is not None]
    return (
        _openinference(attributes, "input")
        or _openllmetry(attributes, "prompt")
        or _event_messages(attributes, "input")
    )


def output_messages(attributes: dict[str, Any]) -> list[Message]:
    """The messages a model span answered with; [] when content was not captured."""
    if "gen_ai.output.messages" in attributes:
        return _genai(attributes["gen_ai.output.messages"])
    if (vercel := vercel_ai.output_messages(attributes)) is not None:  # ai.response.*
        return _genai(vercel)
    response = json_or_none(attributes.get("gcp.vertex.agent.llm_response"))
    if isinstance(response, dict):
        message = adk_content(response.get("content"))
        return [message] if message is not None else []
    return (
        _openinference(attributes, "output")
        or _openllmetry(attributes, "completion")
        or _event_messages(attributes, "output")
    )


def system_text(attributes: dict[str, Any]) -> str:
    """The system instructions of a model span ("" when absent or not captured): the
    attribute, else the operation-details event's, else a ``gen_ai.system.message``
    event's content, else OpenLLMetry's system prompt."""
    value = attributes.get("gen_ai.system_instructions")
    for event in _events(attributes) if value is None else []:
        details = event.get("attributes")
        if not isinstance(details, dict):
            details = {}
        if event.get("name") == DETAILS_EVENT and "gen_ai.system_instructions" in details:
            value = details["gen_ai.system_instructions"]
        elif event.get("name") == "gen_ai.system.message" and value is None:
            found = _legacy_message(details, "system")
            return found.text if found is not None else ""
    if value is None and isinstance(
        request := json_or_none(attributes.get("gcp.vertex.agent.llm_request")), dict
    ):
        instruction = (request.get("config") or {}).get("system_instruction")
        if isinstance(instruction, str):
            return instruction
        if (message := adk_content(instruction)) is not None:
            return message.text
    if value is None:
        prompts = _openllmetry(attributes, "prompt")
        return "\n".join(m.text for m in prompts if m.role == "system")
    decoded = json_or_none(value)
    if isinstance(decoded, list):
        texts = [p.get("content") for p in decoded if isinstance(p, dict)]
        return "\n".join(t for t in texts if isinstance(t, str))
    if isinstance(decoded, str):
        return decoded
    return ""


#: Attribute names (and prefixes) that carry message content: their presence on any
#: span of a trace means its framework captured content.
CONTENT_KEYS = frozenset({
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gcp.vertex.agent.llm_request",
    "gcp.vertex.agent.llm_response",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    *vercel_ai.CONTENT_KEYS,
})  # fmt: skip
CONTENT_PREFIXES = ("llm.input_messages.", "llm.output_messages.", "gen_ai.prompt.",
                    "gen_ai.completion.", EVENTS_KEY)  # fmt: skip


def has_content(attributes: dict[str, Any]) -> bool:
    """True when `attributes` carry message content (see CONTENT_KEYS; an OpenInference
    span's input or output value too, unless hidden)."""
    if not attributes.keys().isdisjoint(CONTENT_KEYS) or carries_content(attributes):
        return True
    return has_key_prefix(attributes, *CONTENT_PREFIXES) and any(
        key.startswith(CONTENT_PREFIXES) for key in attributes
    )
