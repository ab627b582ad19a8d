"""A real OpenInference instrumentation: `openinference-instrumentation-langchain`
around a LangChain agent loop run offline (a fake chat model that calls a real ``@tool``,
then answers), its spans sent by the SDK's OTLP/HTTP protobuf exporter
(BatchSpanProcessor) to a live server.

OpenInference sends a CHAIN root span (the traced run), one LLM span per model call
(``llm.input_messages.N`` / ``llm.output_messages.N``, ``llm.token_count.*``,
``llm.model_name``) and one TOOL span per tool run (``tool.name``, ``input.value``,
``output.value``: the ``ToolMessage`` as JSON, with its ``tool_call_id``), each with the
``session.id`` that ``using_session`` set.

Checked: two runs of one session land as one session (``session.id``) with two
completed turns (one per trace), each holding only its own messages: the user's prompt,
the tool call with the model's call id, the tool's result paired by that id (stored once,
its content only), the final answer, with usage and model on each model call's event;
the system prompt its model was given opens each turn; the session's model is the fake
model's. A run whose tool raises is a failed turn with
the exception's class as failure code and stage ``tool``, its call answered by the tool
span's error (no dangling call); a run whose model raises is a failed turn of stage
``provider``; neither exception's message is anywhere in the database or on the session
pages (which show the model, the tokens and the failures' stages). With inputs and
outputs hidden (OpenInference's ``TraceConfig``), the turn still has the tool call and
its result (not captured) and each model call's usage, and the session says content was
not captured.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import BaseTool, tool
from openinference.instrumentation import TraceConfig, using_session
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from sessions_app import models
from sessions_app.api.keys import create_key
from sessions_app.otlp.landing import STATE_KEY
from tests.live.helpers import DaphneServer
from tests.otlp.weather_runs import MODEL, SYSTEM, assert_two_weather_runs, tokens_of, turn_rows
from tests.test_redaction_shapes import database_text

SECRET = "the-tool-exception-text-oi41"


class RateLimitError(Exception):
    """What a provider's client raises when the model refuses a request."""


class WeatherModel(GenericFakeChatModel):
    """LangChain's fake chat model (answers with its `messages` in turn), with a model
    name and tools bound as a real chat model's are (here: ignored)."""

    model_name: str = MODEL

    def bind_tools(self, tools: Any, **kwargs: Any) -> WeatherModel:
        return self


class RefusingModel(WeatherModel):
    """A chat model whose provider refuses every request (`RateLimitError`, `SECRET`)."""

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        raise RateLimitError(SECRET)


def weather_tool(*, failing: bool = False) -> BaseTool:
    """A real LangChain tool, ``get_weather(city)``; `failing`: it raises `SECRET`."""

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        if failing:
            raise ConnectionError(SECRET)
        return f"sunny in {city}"

    return get_weather


def tool_call(city: str, call_id: str, prompt: int, completion: int) -> AIMessage:
    """The model's answer calling ``get_weather(city)`` as `call_id`, with its usage."""
    return AIMessage(
        content="",
        tool_calls=[{"name": "get_weather", "args": {"city": city}, "id": call_id}],
        usage_metadata={
            "input_tokens": prompt,
            "output_tokens": completion,
            "total_tokens": prompt + completion,
        },
    )


def answer(text: str, prompt: int, completion: int) -> AIMessage:
    """The model's final answer `text`, with its usage."""
    return AIMessage(
        content=text,
        usage_metadata={
            "input_tokens": prompt,
            "output_tokens": completion,
            "total_tokens": prompt + completion,
        },
    )


def agent(
    replies: Iterator[AIMessage], weather: BaseTool, model_class: type[WeatherModel] = WeatherModel
) -> Runnable[Any, Any]:
    """A tool-calling agent loop as one traced run (OpenInference's CHAIN root): call
    the model, run the tools it asks for, append their `ToolMessage`s, call it again
    until it answers; returns the conversation."""
    model = model_class(messages=replies).bind_tools([weather])

    def run(messages: list[BaseMessage]) -> list[BaseMessage]:
        messages = list(messages)
        while True:
            reply = model.invoke(messages)
            messages.append(reply)
            if not isinstance(reply, AIMessage) or not reply.tool_calls:
                return messages
            for call in reply.tool_calls:  # a ToolCall in, a ToolMessage (its id) out
                messages.append(weather.invoke(call))

    return RunnableLambda(run).with_config(run_name="weather")


def _traced(
    server: DaphneServer, key: str, config: TraceConfig | None = None
) -> Callable[[], None]:
    """Instrument LangChain with a provider exporting to `server`; returns the undo
    (flushes the spans to the server, then uninstruments)."""
    exporter = OTLPSpanExporter(
        endpoint=f"{server.url}/v1/traces", headers={"Authorization": f"Bearer {key}"}
    )
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": "oi-app"}))
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, config=config or TraceConfig())

    def done() -> None:
        try:
            tracer_provider.shutdown()  # flushes the batch processor to the server
        finally:
            instrumentor.uninstrument()

    return done


@pytest.mark.django_db(transaction=True)
def test_openinference_langchain_instrumentation_lands_as_a_session(
    operator_client: Client,
) -> None:
    key = create_key("openinference").key
    with DaphneServer() as server:
        done = _traced(server, key)
        try:
            with using_session("oi-conv"):
                replies = iter([
                    tool_call("Paris", "call_paris", 12, 5),
                    answer("It is sunny in Paris.", 30, 7),
                    answer("Rome is sunny too.", 41, 6),
                ])  # fmt: skip
                run = agent(replies, weather_tool())
                first = run.invoke([SystemMessage(SYSTEM), HumanMessage("Weather in Paris?")])
                run.invoke([*first, HumanMessage("And in Rome?")])
            with using_session("oi-fail"), pytest.raises(ConnectionError):
                failing = agent(
                    iter([tool_call("Oslo", "call_oslo", 9, 4)]), weather_tool(failing=True)
                )
                failing.invoke([HumanMessage("Weather in Oslo?")])
            with using_session("oi-refused"), pytest.raises(RateLimitError):
                refusing = agent(iter([]), weather_tool(), RefusingModel)
                refusing.invoke([HumanMessage("Weather in Bern?")])
        finally:
            done()
        done = _traced(server, key, TraceConfig(hide_inputs=True, hide_outputs=True))
        try:
            with using_session("oi-hidden"):
                replies = iter([tool_call("Lima", "call_lima", 8, 3), answer("Sunny.", 20, 2)])
                agent(replies, weather_tool()).invoke([HumanMessage("Weather in Lima?")])
        finally:
            done()

    assert_two_weather_runs("oi-conv", "oi-app")

    failed = models.Turn.objects.get(session_id="oi-fail")
    assert (failed.status, failed.reason, failed.failure_code, failed.failure_stage) == (
        "failed",
        "agent_error",
        "connection_error",
        "tool",
    )
    assert turn_rows(failed) == [
        ("user", "Weather in Oslo?", [], ""),
        ("assistant", "", ["call_oslo"], ""),
        ("tool", "", [], "call_oslo"),  # the tool span's error answers the model's call
    ]
    error = models.Event.objects.get(turn_id=failed.id, role="tool")
    assert error.tool_response == {
        "tool_call_id": "call_oslo",
        "name": "get_weather",
        "error": "ConnectionError",
    }
    assert models.Session.objects.get(pk="oi-fail").protocol_issue_count == 0
    refused = models.Turn.objects.get(session_id="oi-refused")
    assert (refused.status, refused.failure_code, refused.failure_stage) == (
        "failed",
        f"{__name__}.rate_limit_error",  # the SDK records the class's qualified name
        "provider",
    )
    assert turn_rows(refused) == [("user", "Weather in Bern?", [], "")]
    assert SECRET not in database_text()
    pages = {
        session_id: operator_client.get(reverse("sessions:detail", args=[session_id]))
        for session_id in ("oi-conv", "oi-fail", "oi-refused", "oi-hidden")
    }
    assert {session_id: page.status_code for session_id, page in pages.items()} == dict.fromkeys(
        pages, 200
    )
    text = {session_id: page.content.decode() for session_id, page in pages.items()}
    assert MODEL in text["oi-conv"] and "83 in (0 cached) · 18 out" in text["oi-conv"]
    assert 'class="badge stage-tool label"' in text["oi-fail"]
    assert 'class="badge stage-provider label"' in text["oi-refused"]
    assert "message content was not captured" in text["oi-hidden"]
    assert not [session_id for session_id, page in text.items() if SECRET in page]

    hidden = models.Session.objects.get(pk="oi-hidden")
    assert (hidden.state[STATE_KEY], hidden.title) == ({"content_captured": False}, "")
    (turn,) = models.Turn.objects.filter(session=hidden)
    assert turn.status == "completed"
    assert turn.status_note.endswith("message content was not captured")
    events = list(models.Event.objects.filter(turn_id=turn.id).order_by("id"))
    span_call = events[1].tool_calls[0]["id"]  # the tool's output (and its id) is hidden
    assert span_call.startswith("span-")
    assert [(e.role, e.tool_calls, e.tool_response, tokens_of(e)) for e in events] == [
        ("assistant", [], None, (8, 3)),  # a model call's usage alone
        ("assistant", [{"id": span_call, "name": "get_weather", "arguments": {}}], None, None),
        (
            "tool",
            [],
            {
                "tool_call_id": span_call,
                "name": "get_weather",
                "result": {"content_captured": False},
            },
            None,
        ),
        ("assistant", [], None, (20, 2)),
    ]
