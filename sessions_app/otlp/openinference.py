"""What OpenInference spans say beyond their messages (`messages` reads those): the
GenAI operation of a span kind, and a TOOL span's call id, arguments and result.

OpenInference (e.g. ``openinference-instrumentation-langchain``) names no GenAI
operation: its ``openinference.span.kind`` says what a span is (``LLM`` a model call,
``TOOL`` a tool run; ``CHAIN`` and ``AGENT`` the runs around them), and a TOOL span
carries ``tool.name``, its input as ``input.value`` and its output as ``output.value``
(LangChain's: the ``ToolMessage`` as JSON, ``{"type": "tool", "data": {"content",
"tool_call_id", ...}}``, when the tool was run with the model's tool call). With its
``TraceConfig`` hiding inputs or outputs, those values read `HIDDEN`.
"""

from __future__ import annotations

from typing import Any

from sessions_app.ingest.normalise import json_or_none

__all__ = ["HIDDEN", "KIND_KEY", "carries_content", "operation_of", "tool_call_id",
           "tool_input", "tool_output"]  # fmt: skip

KIND_KEY = "openinference.span.kind"
#: The GenAI operation of each OpenInference span kind the mapping reads.
OPERATIONS = {"LLM": "chat", "TOOL": "execute_tool"}
#: OpenInference's placeholder for a value its TraceConfig hides.
HIDDEN = "__REDACTED__"
INPUT, OUTPUT = "input.value", "output.value"


def operation_of(attributes: dict[str, Any]) -> str:
    """The GenAI operation of an OpenInference span ("" when it is not one the mapping
    reads, or not an OpenInference span)."""
    kind = attributes.get(KIND_KEY)
    return OPERATIONS.get(kind, "") if isinstance(kind, str) else ""


def _tool_message(attributes: dict[str, Any]) -> dict[str, Any] | None:
    """The data of the LangChain ``ToolMessage`` a TOOL span's output holds, if any."""
    output = attributes.get(OUTPUT)
    decoded = json_or_none(output) if isinstance(output, str) and output[:1] == "{" else None
    if not isinstance(decoded, dict) or decoded.get("type") != "tool":
        return None
    data = decoded.get("data")
    return data if isinstance(data, dict) else None


def tool_call_id(attributes: dict[str, Any]) -> str:
    """The model's call id a TOOL span ran ("" when it does not say): ``tool.id``
    (OpenInference's name for it), else its ``ToolMessage``'s ``tool_call_id``."""
    found = attributes.get("tool.id")
    if not found and (message := _tool_message(attributes)) is not None:
        found = message.get("tool_call_id")
    return str(found) if isinstance(found, str | int) and found != "" else ""


def tool_input(attributes: dict[str, Any]) -> Any:
    """A TOOL span's arguments as sent, its ``input.value`` (LangChain's: the arguments
    as JSON, or the value alone of a tool of one argument); None when absent or hidden."""
    value = attributes.get(INPUT)
    return None if value == HIDDEN else value


def tool_output(attributes: dict[str, Any]) -> Any:
    """A TOOL span's result: its ``ToolMessage``'s content, else ``output.value`` (JSON
    decoded); None when absent or hidden."""
    value = attributes.get(OUTPUT)
    if value is None or value == HIDDEN:
        return None
    if (message := _tool_message(attributes)) is not None and "content" in message:
        return message["content"]
    decoded = json_or_none(value) if isinstance(value, str) else value
    return decoded if decoded is not None else value


def carries_content(attributes: dict[str, Any]) -> bool:
    """True when `attributes` are an OpenInference span's whose input or output value
    was sent (not hidden)."""
    if KIND_KEY not in attributes:
        return False
    return any(attributes.get(key) not in (None, "", HIDDEN) for key in (INPUT, OUTPUT))
