"""Log records of agents, made with the OpenTelemetry SDK's logs API, for the receiver's
``/v1/logs`` tests.

- `genai_turn`: a turn as the OpenAI instrumentation (``openai-v2``, content capture on)
  records it: spans for the agent and its two model calls without message content, and
  the messages as the earlier conventions' per-message log events emitted inside the
  model spans (``gen_ai.system.message``, ``gen_ai.user.message``,
  ``gen_ai.assistant.message`` with its tool calls, ``gen_ai.tool.message`` with the
  call id, ``gen_ai.choice``), named by the record's ``event_name``;
- `claude_prompt`: one Claude Code prompt as its log events (no traces): the prompt,
  an API request with tokens and cost, a tool result that succeeded and one that failed
  with `SECRET_ERROR` (the raw error message, which must never be stored).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from google.protobuf import json_format
from opentelemetry import trace
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    LogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import Tracer

SECRET_ERROR = "the-tool-error-text-zq91"
SYSTEM = "You answer about the weather."
QUESTION = "What is the weather in Lyon?"
ANSWER = "It is raining in Lyon."


def memory_logs() -> InMemoryLogRecordExporter:
    """An exporter keeping the records in memory (the SDK's class is not typed)."""
    return InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]


def log_provider(exporter: LogRecordExporter, app: str) -> LoggerProvider:
    """A logger provider for `app` sending each record to `exporter` at once."""
    provider = LoggerProvider(resource=Resource.create({"service.name": app}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    return provider


def _emit(logger: Any, name: str, body: Any) -> None:
    logger.emit(LogRecord(event_name=name, body=body, attributes={"gen_ai.system": "openai"}))


def genai_turn(tracer: Tracer, logger: Any, conversation: str, content_on_spans: bool) -> None:
    """The openai-v2 turn (see the module docstring); `content_on_spans`: the model
    spans carry the messages too (``SPAN_AND_EVENT``), which must not double them."""
    call = {"id": "call_w", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'}}  # fmt: skip
    with tracer.start_as_current_span("invoke_agent weather") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("gen_ai.conversation.id", conversation)
        with tracer.start_as_current_span("chat gpt-4o") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.request.model", "gpt-4o")
            _emit(logger, "gen_ai.system.message", {"content": SYSTEM})
            _emit(logger, "gen_ai.user.message", {"content": QUESTION})
            _emit(logger, "gen_ai.choice",
                  {"index": 0, "finish_reason": "tool_calls",
                   "message": {"role": "assistant", "tool_calls": [call]}})  # fmt: skip
            if content_on_spans:
                chat.set_attribute(
                    "gen_ai.input.messages",
                    json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
                    ),
                )
                chat.set_attribute("gen_ai.output.messages", json.dumps(
                    [{"role": "assistant", "parts": [{"type": "tool_call", "id": "call_w",
                      "name": "get_weather", "arguments": {"city": "Lyon"}}]}]))  # fmt: skip
        with tracer.start_as_current_span("chat gpt-4o") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.usage.input_tokens", 30)
            chat.set_attribute("gen_ai.usage.output_tokens", 7)
            _emit(logger, "gen_ai.system.message", {"content": SYSTEM})
            _emit(logger, "gen_ai.user.message", {"content": QUESTION})
            _emit(logger, "gen_ai.assistant.message", {"tool_calls": [call]})
            _emit(logger, "gen_ai.tool.message", {"content": "rain", "id": "call_w"})
            _emit(logger, "gen_ai.choice",
                  {"index": 0, "finish_reason": "stop",
                   "message": {"role": "assistant", "content": ANSWER}})  # fmt: skip


#: The events `genai_turn` lands as: (role, text, call ids, answered call id).
GENAI_EVENTS = [
    ("system", SYSTEM, [], ""),
    ("user", QUESTION, [], ""),
    ("assistant", "", ["call_w"], ""),
    ("tool", "", [], "call_w"),
    ("assistant", ANSWER, [], ""),
]


def _claude(logger: Any, prompt_id: str, event: str, sequence: int, **attributes: Any) -> None:
    common: dict[str, Any] = {
        "session.id": "cc-session", "prompt.id": prompt_id, "user.id": "dev-1",
        "event.name": event, "event.sequence": sequence,
        "event.timestamp": "2026-12-01T10:00:00.000Z",
    }  # fmt: skip
    logger.emit(LogRecord(body=f"claude_code.{event}", attributes={**common, **attributes}))


def claude_prompt(logger: Any, prompt_id: str = "prompt-1", ids: str = "") -> None:
    """The Claude Code prompt (see the module docstring), as Claude Code names its
    records: the body ``claude_code.<event>``, the attribute ``event.name`` without it;
    `ids` ends its request and tool call ids."""
    _claude(logger, prompt_id, "user_prompt", 1, prompt="List the files", prompt_length=14)
    _claude(logger, prompt_id, "api_request", 2, model="claude-sonnet-5", input_tokens=120,
            output_tokens=40, cache_read_tokens=100, cache_creation_tokens=0,
            cost_usd=0.0123, duration_ms=900, request_id=f"req_1{ids}")  # fmt: skip
    _claude(logger, prompt_id, "tool_result", 3, tool_name="Bash", tool_use_id=f"toolu_ok{ids}",
            success="true", duration_ms=12, decision_type="accept",
            tool_input=json.dumps({"command": "ls"}))  # fmt: skip
    _claude(logger, prompt_id, "tool_result", 4, tool_name="Read", tool_use_id=f"toolu_bad{ids}",
            success="false", duration_ms=3, error_type="Error:ENOENT",
            error=SECRET_ERROR)  # fmt: skip
    _claude(logger, prompt_id, "api_request", 5, model="claude-sonnet-5", input_tokens=200,
            output_tokens=10, cost_usd=0.002, duration_ms=400,
            request_id=f"req_2{ids}")  # fmt: skip


def protobuf_logs(records: Sequence[ReadableLogRecord]) -> bytes:
    """An OTLP protobuf logs body, as the exporter encodes it."""
    return encode_logs(records).SerializeToString()


def json_logs(records: Sequence[ReadableLogRecord]) -> bytes:
    """An OTLP JSON logs body: camelCase, enum integers, hex trace and span ids."""
    document = json_format.MessageToDict(encode_logs(records), use_integers_for_enums=True)
    for resource in document.get("resourceLogs", []):
        for scope in resource.get("scopeLogs", []):
            for record in scope.get("logRecords", []):
                for key in ("traceId", "spanId"):
                    if record.get(key):
                        record[key] = base64.b64decode(record[key]).hex()
    return json.dumps(document).encode()


def current_tracer(provider: Any) -> Tracer:
    """A tracer of `provider` (log records emitted in its spans carry their context)."""
    return trace.get_tracer("tests.otlp.logs", tracer_provider=provider)
