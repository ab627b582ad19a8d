"""Microsoft Semantic Kernel's (Python) own telemetry made plain before it is kept.

With ``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS=true`` (tested: 1.45.0)
Semantic Kernel sends, per agent invocation, an ``invoke_agent <agent>`` root (no
conversation or thread id: each invocation is a trace of its own), an
``AutoFunctionInvocationLoop`` span, a ``chat <model>`` span per model call of its
connectors (``gen_ai.system`` the provider, model, usage, finish reason) and an
``execute_tool <plugin>-<function>`` span per function call (``gen_ai.tool.call.id``; a
function that raised: status ERROR, ``error.type``, exception events). With
``..._SENSITIVE=true`` too, a tool span carries ``gen_ai.tool.call.arguments`` /
``result``, the agent span ``gen_ai.input.messages`` / ``output.messages`` (the JSON of
Semantic Kernel's own ``ChatMessageContent.to_dict()``: ``{"role", "content", "name"}``,
not GenAI parts), and each model call's messages are Python log records (sent as OTLP
log records when the application attaches OpenTelemetry's ``LoggingHandler``, as Semantic
Kernel's telemetry samples do): ``gen_ai.system.message``, ``gen_ai.user.message``,
``gen_ai.assistant.message``, ``gen_ai.tool.message`` (the request's whole history) and
``gen_ai.choice``, named by the ``event.name`` attribute, their body the JSON *text* of
the message's ``to_dict()`` (a choice's: ``{"message": {...}, "finish_reason"}``).

`semantic_kernel_attributes` changes:

- a log record's message event, whose ``content`` is that JSON text, becomes the
  message's fields (``role``, ``content``, ``tool_calls``, ``tool_call_id``; a choice's
  ``message`` and ``finish_reason``), as the earlier GenAI conventions' events are read;
- the text Semantic Kernel gives the model for a function that raised (``An error
  occurred while invoking the function <name>: <the exception's message>``) becomes
  `ERROR_RESULT`: the message is never kept (the tool span says the call failed);
- the agent span's messages, Semantic Kernel's own shape, only repeat what its model
  calls sent and answered (its input is ``[]`` when the agent is given its messages by
  keyword): they are dropped, the turn's events come from the model and tool spans.
"""

from __future__ import annotations

import json
from typing import Any

from sessions_app.ingest.normalise import json_or_none
from sessions_app.otlp.messages import EVENTS_KEY, LEGACY_EVENTS
from sessions_app.otlp.strands import ERROR_RESULT  # what an error result is kept as

__all__ = ["ERROR_TEXT", "semantic_kernel_attributes"]

#: The start of the text Semantic Kernel gives the model for a function that raised.
ERROR_TEXT = "An error occurred while invoking the function "
AGENT_MESSAGES = ("gen_ai.input.messages", "gen_ai.output.messages")
#: Semantic Kernel's agent spans carry the agent's id (a UUID it makes).
AGENT_ID = "gen_ai.agent.id"
MESSAGE_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name")


def semantic_kernel_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """`attributes` as the mapping reads them (module docstring); the same dict for a
    span or record that is not Semantic Kernel's."""
    if attributes.get("gen_ai.operation.name") == "invoke_agent":
        return _agent_span(attributes)
    events = attributes.get(EVENTS_KEY)
    if not isinstance(events, list) or not any(_sk_event(e) for e in events):
        return attributes
    return {**attributes, EVENTS_KEY: [_event(e) if _sk_event(e) else e for e in events]}


def _agent_span(attributes: dict[str, Any]) -> dict[str, Any]:
    if AGENT_ID not in attributes:  # Semantic Kernel names its agent by id and name
        return attributes
    if not all(_sk_messages(attributes.get(key)) for key in AGENT_MESSAGES if key in attributes):
        return attributes
    if not any(key in attributes for key in AGENT_MESSAGES):
        return attributes
    return {k: v for k, v in attributes.items() if k not in AGENT_MESSAGES}


def _sk_messages(value: Any) -> bool:
    """True for Semantic Kernel's agent messages: a JSON list of ``{"role", "content"}``
    objects without GenAI ``parts`` (an empty list too)."""
    decoded = json_or_none(value)
    return isinstance(decoded, list) and all(
        isinstance(item, dict) and "role" in item and "parts" not in item for item in decoded
    )


def _body(event: Any) -> dict[str, Any] | None:
    """The message object an event's ``content`` holds as JSON text, else None."""
    if not isinstance(event, dict) or not isinstance(event.get("attributes"), dict):
        return None
    content = event["attributes"].get("content")
    if not isinstance(content, str) or not content.startswith("{"):
        return None
    decoded = json_or_none(content)
    return decoded if isinstance(decoded, dict) else None


def _sk_event(event: Any) -> bool:
    """True for a message event whose content is the JSON text of Semantic Kernel's
    message (a choice's: of ``{"message": {"role", ...}}``)."""
    body = _body(event)
    if body is None:
        return False
    if event.get("name") == "gen_ai.choice":
        return isinstance(body.get("message"), dict) and "role" in body["message"]
    return event.get("name") in LEGACY_EVENTS and isinstance(body.get("role"), str)


def _event(event: dict[str, Any]) -> dict[str, Any]:
    body = _body(event) or {}
    fields = {k: v for k, v in event["attributes"].items() if k != "content"}
    if event.get("name") == "gen_ai.choice":
        fields["message"] = json.dumps(_message(body["message"]), ensure_ascii=False)
        if "finish_reason" in body:
            fields["finish_reason"] = str(body["finish_reason"])
    else:
        fields.update(_message(body))
    return {**event, "attributes": fields}


def _message(body: dict[str, Any]) -> dict[str, Any]:
    """A message's fields, a function's error text as `ERROR_RESULT`."""
    message = {k: body[k] for k in MESSAGE_FIELDS if k in body}
    content = message.get("content")
    if (
        message.get("role") == "tool"
        and isinstance(content, str)
        and content.startswith(ERROR_TEXT)
    ):
        message["content"] = dict(ERROR_RESULT)
    return message
