"""What OpenInference spans say beyond their messages (`messages` reads those): the
GenAI operation of a span kind, and a TOOL span's call id, arguments and result.

OpenInference (e.g. ``openinference-instrumentation-langchain``) names no GenAI
operation: its ``openinference.span.kind`` says what a span is (``LLM`` a model call,
``TOOL`` a tool run; ``CHAIN`` and ``AGENT`` the runs around them), and a TOOL span
carries ``tool.name``, its input as ``input.value`` and its output as ``output.value``
(LangChain's: the ``ToolMessage`` as JSON, ``{"type": "tool", "data": {"content",
"tool_call_id", ...}}``, when the tool was run with the model's tool call). With its
``TraceConfig`` hiding inputs or outputs, those values read `HIDDEN`.

The OpenAI Agents SDK's instrumentation (``openinference-instrumentation-openai-agents``)
ends its root AGENT span (the SDK's trace) with status OK even when a tool's exception
ended the run: `tool_error_ending_run` finds that tool span. A tool's exception that the
SDK catches is given to the model as the tool's output: by default (``openai-agents``
before 0.2x) its message after fixed words (`ERROR_OUTPUTS`), in the failed TOOL span's
``output.value`` and in the next LLM span's input; `without_error_details` drops it
before the span is kept (exception messages are never stored).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar

from sessions_app.ingest.normalise import json_or_none

__all__ = ["HIDDEN", "KIND_KEY", "carries_content", "operation_of", "tool_call_id",
           "tool_error_ending_run", "tool_input", "tool_output",
           "without_error_details"]  # fmt: skip

KIND_KEY = "openinference.span.kind"
#: The GenAI operation of each OpenInference span kind the mapping reads.
OPERATIONS = {"LLM": "chat", "TOOL": "execute_tool"}
#: OpenInference's placeholder for a value its TraceConfig hides.
HIDDEN = "__REDACTED__"
INPUT, OUTPUT = "input.value", "output.value"
ERROR_STATUS = 2  # OTLP's STATUS_CODE_ERROR
#: The fixed words of the Agents SDK's default failure outputs (`default_tool_error_function`),
#: each followed by the exception's message.
ERROR_OUTPUTS = (
    "An error occurred while running the tool. Please try again.",
    "An error occurred while parsing tool arguments. Please try again with valid JSON.",
)
INPUT_MESSAGES = "llm.input_messages."


class TimedSpan(Protocol):
    """What `tool_error_ending_run` reads of a span (`mapping.SpanLike` has it)."""

    span_id: str
    start_at: datetime
    end_at: datetime
    status_code: int
    attributes: dict[str, Any]


Span = TypeVar("Span", bound=TimedSpan)


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


def tool_error_ending_run(spans: Sequence[Span]) -> Span | None:
    """The first failed OpenInference TOOL span of a trace when no LLM span starts after
    it ends (the run ended on the tool's error: the Agents SDK re-raises it with
    ``failure_error_function=None``), else None (no failed tool, or its error was given
    to the model, as the SDK does by default, and the run went on)."""
    failed = [s for s in spans if s.status_code == ERROR_STATUS and _kind(s) == "TOOL"]
    if not failed:
        return None
    first = min(failed, key=lambda s: (s.end_at, s.span_id))
    if any(_kind(s) == "LLM" and s.start_at >= first.end_at for s in spans):
        return None
    return first


def _kind(span: TimedSpan) -> Any:
    return span.attributes.get(KIND_KEY)


def without_error_details(attributes: dict[str, Any], status_code: int) -> dict[str, Any]:
    """`attributes` without what may hold an exception's message (module docstring): a
    failed TOOL span's ``output.value`` (the mapping stores its error's type instead);
    of an LLM span's input, each message text starting with `ERROR_OUTPUTS` words cut to
    them, and ``input.value`` when it holds such words. The same dict when nothing is
    dropped (most spans: they are not OpenInference's)."""
    kind = attributes.get(KIND_KEY)
    if kind == "TOOL" and status_code == ERROR_STATUS and OUTPUT in attributes:
        return {k: v for k, v in attributes.items() if k != OUTPUT}
    if kind != "LLM":
        return attributes
    kept: dict[str, Any] = {}
    for key, value in attributes.items():
        if key == INPUT and _holds_error_output(value):
            continue
        kept[key] = _fixed_words(value) if key.startswith(INPUT_MESSAGES) else value
    return kept if kept != attributes else attributes


def _holds_error_output(value: Any) -> bool:
    return isinstance(value, str) and any(words in value for words in ERROR_OUTPUTS)


def _fixed_words(value: Any) -> Any:
    """`value` cut to the `ERROR_OUTPUTS` words it starts with, else `value`."""
    if isinstance(value, str):
        for words in ERROR_OUTPUTS:
            if value.startswith(words):
                return words
    return value
