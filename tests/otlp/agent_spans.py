"""Spans of a small agent conversation, made with the OpenTelemetry SDK (GenAI
conventions), for the receiver's tests.

`conversation_spans()` returns the finished spans of three traces in the order the SDK
ended them (children before parents):

- trace "ok": a completed turn in conversation ``conv-1``: the user asks, the model calls
  ``get_weather`` (call ``call_1``), the tool answers, the model answers;
- trace "failed": a failed turn in ``conv-1``: the model calls ``lookup`` (``call_d``,
  never answered: a dangling call), then the next model call fails with
  ``error.type=openai.RateLimitError``; exception events and status descriptions carry
  `SECRET_MESSAGE`, which must never be stored;
- trace "running": two child spans of a root that has not ended (a running turn).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from google.protobuf import json_format
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode, Tracer

SECRET_MESSAGE = "the-exception-text-zq81"
STATUS_TEXT = "the-status-description-zq82"
APP = "weather-agent"


def provider(exporter: SpanExporter, app: str = APP) -> TracerProvider:
    """A tracer provider for `app` sending each ended span to `exporter` at once."""
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": app}))
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    return tracer_provider


def _messages(*items: dict[str, Any]) -> str:
    return json.dumps(list(items))


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": call_id, "name": name, "arguments": args}],
    }


@contextmanager
def _chat(tracer: Tracer, inputs: str, outputs: str | None, tokens: int = 10) -> Iterator[Any]:
    with tracer.start_as_current_span("chat gpt-4o") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.request.model", "gpt-4o")
        span.set_attribute("gen_ai.input.messages", inputs)
        span.set_attribute("gen_ai.usage.input_tokens", tokens)
        span.set_attribute("gen_ai.usage.output_tokens", 5)
        yield span
        if outputs is not None:
            span.set_attribute("gen_ai.output.messages", outputs)


def _tool(
    tracer: Tracer,
    call_id: str,
    name: str,
    args: dict[str, Any],
    result: Any,
    attributes: dict[str, Any] | None = None,
) -> None:
    with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes) as span:
        span.set_attribute("gen_ai.operation.name", "execute_tool")
        span.set_attribute("gen_ai.tool.call.id", call_id)
        span.set_attribute("gen_ai.tool.name", name)
        span.set_attribute("gen_ai.tool.call.arguments", json.dumps(args))
        span.set_attribute("gen_ai.tool.call.result", json.dumps(result))


def _agent_root(tracer: Tracer, conversation: str) -> Any:
    span = tracer.start_span("invoke_agent weather")
    span.set_attribute("gen_ai.operation.name", "invoke_agent")
    span.set_attribute("gen_ai.agent.name", "weather")
    span.set_attribute("gen_ai.conversation.id", conversation)
    span.set_attribute("user.id", "ada")
    return span


def ok_turn(tracer: Tracer, conversation: str = "conv-1") -> None:
    """The completed turn (see the module docstring)."""
    root = _agent_root(tracer, conversation)
    with trace.use_span(root, end_on_exit=True):
        question = _user("What is the weather in Paris?")
        asked = _call("call_1", "get_weather", {"city": "Paris"})
        with _chat(
            tracer, _messages(question), _messages({**asked, "finish_reason": "tool_calls"})
        ):
            pass
        _tool(tracer, "call_1", "get_weather", {"city": "Paris"}, {"sky": "sunny"})
        answered = {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "call_1", "response": {"sky": "sunny"}}],
        }
        final = {
            "role": "assistant",
            "parts": [{"type": "text", "content": "It is sunny in Paris."}],
            "finish_reason": "stop",
        }
        with _chat(tracer, _messages(question, asked, answered), _messages(final), tokens=20):
            pass


def failed_turn(tracer: Tracer, conversation: str = "conv-1") -> None:
    """The failed turn with a dangling call (see the module docstring)."""
    root = _agent_root(tracer, conversation)
    with trace.use_span(
        root, end_on_exit=True, record_exception=False, set_status_on_exception=False
    ):
        question = _user("Look up order 42")
        asked = _call("call_d", "lookup", {"order": 42})
        with _chat(tracer, _messages(question), _messages(asked)):
            pass
        with _chat(tracer, _messages(question, asked), None) as failing:
            failing.set_attribute("error.type", "openai.RateLimitError")
            failing.record_exception(RuntimeError(SECRET_MESSAGE))
            failing.set_status(Status(StatusCode.ERROR, STATUS_TEXT))
        root.set_attribute("error.type", "openai.RateLimitError")
        root.add_event(
            "exception",
            {"exception.message": SECRET_MESSAGE, "exception.stacktrace": SECRET_MESSAGE},
        )
        root.set_status(Status(StatusCode.ERROR, STATUS_TEXT))


def running_turn(tracer: Tracer, conversation: str = "conv-2") -> None:
    """Children of a root that never ends (a running turn)."""
    root = _agent_root(tracer, conversation)
    with trace.use_span(root, end_on_exit=False):
        question = _user("Count to three")
        with _chat(tracer, _messages(question), _messages(_call("call_r", "count", {"to": 3}))):
            pass
        _tool(tracer, "call_r", "count", {"to": 3}, [1, 2, 3])


class OpenTurn:
    """A turn of session `conversation` whose model asked for a tool that has not
    answered yet: its root span stays open, so the turn is running. Its spans carry the
    conversation and turn ids, as Pydantic AI sets them on every span."""

    def __init__(self, name: str, conversation: str = "shared") -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer = provider(self.exporter).get_tracer("tests.otlp.silent")
        self.root = self.tracer.start_span("invoke_agent worker")
        self.root.set_attribute("gen_ai.operation.name", "invoke_agent")
        self.ids = {"gen_ai.conversation.id": conversation, "gen_ai.agent.call.id": name}
        self.root.set_attributes(self.ids)
        self.sent = 0
        self.call_id = f"call_{name}"
        with trace.use_span(self.root, end_on_exit=False):
            self.question = _user(f"{name}: run the slow tool")
            self.asked = _call(self.call_id, "slow_tool", {"n": 1})
            with _chat(self.tracer, _messages(self.question), _messages(self.asked)) as chat:
                chat.set_attributes(self.ids)

    def tool_answers(self) -> None:
        with trace.use_span(self.root, end_on_exit=False):
            _tool(self.tracer, self.call_id, "slow_tool", {"n": 1}, "done", self.ids)

    def answers(self, text: str) -> None:
        """The model's final answer (a chat span; the root stays open)."""
        with trace.use_span(self.root, end_on_exit=False):
            final = {"role": "assistant", "parts": [{"type": "text", "content": text}]}
            answered = {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": self.call_id, "response": "done"}],
            }
            history = _messages(self.question, self.asked, answered)
            with _chat(self.tracer, history, _messages(final)) as chat:
                chat.set_attributes(self.ids)

    def take(self) -> list[ReadableSpan]:
        """The spans ended since the last `take`."""
        spans = list(self.exporter.get_finished_spans())[self.sent :]
        self.sent += len(spans)
        return spans

    def batch(self) -> bytes:
        """The spans ended since the last batch, as a protobuf body."""
        return protobuf_body(self.take())


def conversation_spans() -> list[ReadableSpan]:
    """The finished spans of the three traces, in the order they ended."""
    exporter = InMemorySpanExporter()
    tracer = provider(exporter).get_tracer("tests.otlp")
    ok_turn(tracer)
    failed_turn(tracer)
    running_turn(tracer)
    return list(exporter.get_finished_spans())


def shuffled_batches(
    spans: Sequence[ReadableSpan], seed: int, size: int = 3
) -> list[list[ReadableSpan]]:
    """`spans` shuffled with `seed` and cut into batches of `size`: parents before or
    after their children, a trace's root in any batch."""
    shuffled = list(spans)
    random.Random(seed).shuffle(shuffled)
    return [shuffled[start : start + size] for start in range(0, len(shuffled), size)]


def protobuf_body(spans: Sequence[ReadableSpan]) -> bytes:
    """An OTLP protobuf body, as the exporter encodes it."""
    return encode_spans(spans).SerializeToString()


def json_body(spans: Sequence[ReadableSpan]) -> bytes:
    """An OTLP JSON body: camelCase, enum integers, hex trace and span ids."""
    document = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource in document.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = _b64_to_hex(span[key])
    return json.dumps(document).encode()


def _b64_to_hex(value: str) -> str:
    import base64

    return base64.b64decode(value).hex()
