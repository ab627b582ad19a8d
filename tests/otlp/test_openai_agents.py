"""The OpenAI Agents SDK (``openai-agents`` 0.13.6, on ``openai`` 2.44.0) traced by
OpenInference's ``openinference-instrumentation-openai-agents`` 2.6.0, run offline (a
fake Responses model that calls a real ``@function_tool``, then answers), its spans sent
by the SDK's OTLP/HTTP protobuf exporter (BatchSpanProcessor) to a live server. (It also
passes with ``openai-agents`` 0.24.0 on ``openai`` 3.57.0, which need ``websockets<17``.)

The instrumentation replaces the Agents SDK's trace processors by its own (nothing is
sent to OpenAI) and sends an AGENT root span (the workflow), an AGENT span per agent, an
LLM span per model call (the ``response`` span the SDK's Responses model opens:
``llm.input_messages.N`` with the agent's instructions as the system message,
``llm.output_messages.N`` with the tool calls' ``call_id``, ``llm.token_count.*``,
``llm.model_name``) and a TOOL span per function tool run (``tool.name``, ``input.value``
the arguments, ``output.value`` the result; no call id). ``RunConfig(group_id=...)`` is
not sent; ``using_session(...)`` sets ``session.id`` on every span.

Checked: two runs of one session land as one session with two completed turns, each
holding only its own messages: the system prompt, the user's prompt, the tool call with
the model's call id, the tool's result paired to it (no protocol issue), the final
answer, with usage and model on each model call's event. A tool that raises is, by the
SDK's default, caught and its error given to the model: the run completes, so the turn is
completed, its call answered by an error result; with ``failure_error_function=None`` the
run raises and the turn fails with stage ``tool``. The exception's message (which the SDK
puts in the status description and in the text it gives the model) is nowhere in the
database nor on the session pages (which show the model, the tokens and the failure's
stage). With ``RunConfig(trace_include_sensitive_data=False)`` the turn still has the tool
call and its result (not captured) and says content was not captured; the SDK's model
then puts no response on its span, so no usage or model reaches the receiver.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import agents
import pytest
from agents import (
    Agent,
    ModelResponse,
    RunConfig,
    Runner,
    Tool,
    TResponseInputItem,
    Usage,
    function_tool,
)
from agents.exceptions import UserError
from agents.models.interface import Model, ModelTracing
from agents.tracing import response_span
from django.test import Client
from django.urls import reverse
from openai.types.responses import (
    Response,
    ResponseFunctionToolCall,
    ResponseOutputItem,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
from openinference.instrumentation import using_session
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from sessions_app import models
from sessions_app.api.keys import create_key
from sessions_app.otlp.landing import STATE_KEY
from tests.live.helpers import DaphneServer
from tests.otlp.weather_runs import MODEL, SYSTEM, assert_two_weather_runs, turn_rows
from tests.test_redaction_shapes import database_text

SECRET = "the-tool-exception-text-oa52"


def calling(city: str, call_id: str) -> ResponseFunctionToolCall:
    """The model's call of ``get_weather(city)`` as `call_id`."""
    return ResponseFunctionToolCall(
        type="function_call",
        id=f"fc_{call_id}",
        call_id=call_id,
        name="get_weather",
        arguments=json.dumps({"city": city}),
        status="completed",
    )


def saying(text: str) -> ResponseOutputMessage:
    """The model's final answer `text`."""
    return ResponseOutputMessage(
        type="message",
        id="msg_1",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


class ScriptedModel(Model):
    """A Responses model answering with its `replies` in turn ((output item, prompt
    tokens, completion tokens)), tracing each call as the SDK's `OpenAIResponsesModel`
    does: a ``response`` span holding the `Response` and the input it was given."""

    def __init__(self, replies: list[tuple[ResponseOutputItem, int, int]]) -> None:
        self.replies = iter(replies)

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: Any,
        tools: list[Tool],
        output_schema: Any,
        handoffs: list[Any],
        tracing: ModelTracing,
        **kwargs: Any,
    ) -> ModelResponse:
        item, prompt, completion = next(self.replies)
        usage = ResponseUsage(
            input_tokens=prompt,
            output_tokens=completion,
            total_tokens=prompt + completion,
            # cache_write_tokens: required from openai 2.45 (extra before)
            input_tokens_details=InputTokensDetails.model_validate(
                {"cached_tokens": 0, "cache_write_tokens": 0}
            ),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        )
        response = Response(
            id=f"resp_{prompt}",
            created_at=0,
            model=MODEL,
            object="response",
            output=[item],
            instructions=system_instructions,
            parallel_tool_calls=True,
            tool_choice="auto",
            tools=[],
            usage=usage,
        )
        with response_span(disabled=tracing.is_disabled()) as span:
            if tracing.include_data():
                span.span_data.response = response
                span.span_data.input = input
        return ModelResponse(
            output=[item],
            usage=Usage(
                requests=1,
                input_tokens=prompt,
                output_tokens=completion,
                total_tokens=prompt + completion,
            ),
            response_id=response.id,
        )

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def weather_agent(
    replies: list[tuple[ResponseOutputItem, int, int]],
    *,
    failing: bool = False,
    raising: bool = False,
) -> Agent[Any]:
    """An agent with a real function tool ``get_weather(city)`` and a `ScriptedModel`;
    `failing`: the tool raises `SECRET` (which the SDK gives the model as the tool's
    output), `raising`: the SDK re-raises it (``failure_error_function=None``)."""

    def get_weather(city: str) -> str:
        """The weather in a city."""
        if failing:
            raise ConnectionError(SECRET)
        return f"sunny in {city}"

    tool = (
        function_tool(get_weather, failure_error_function=None)
        if raising
        else function_tool(get_weather)
    )
    return Agent(name="weather", instructions=SYSTEM, model=ScriptedModel(replies), tools=[tool])


def _traced(server: DaphneServer, key: str) -> Callable[[], None]:
    """Instrument the Agents SDK with a provider exporting to `server` (its processor
    replaces the SDK's, which would export to OpenAI); returns the undo (flushes the
    spans to the server, then uninstruments)."""
    exporter = OTLPSpanExporter(
        endpoint=f"{server.url}/v1/traces", headers={"Authorization": f"Bearer {key}"}
    )
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": "oa-app"}))
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    agents.set_trace_processors([])  # no exporter to OpenAI, whatever the instrumentor does
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider)

    def done() -> None:
        try:
            tracer_provider.shutdown()  # flushes the batch processor to the server
        finally:
            instrumentor.uninstrument()
            agents.set_trace_processors([])

    return done


def _run(
    agent: Agent[Any],
    session_id: str,
    given: str | list[TResponseInputItem],
    config: RunConfig | None = None,
) -> Any:
    with using_session(session_id):
        return asyncio.run(Runner.run(agent, given, run_config=config))


@pytest.mark.django_db(transaction=True)
def test_openai_agents_instrumentation_lands_as_a_session(operator_client: Client) -> None:
    key = create_key("openai-agents").key
    with DaphneServer() as server:
        done = _traced(server, key)
        try:
            first = _run(
                weather_agent([
                    (calling("Paris", "call_paris"), 12, 5),
                    (saying("It is sunny in Paris."), 30, 7),
                ]),
                "oa-conv",
                "Weather in Paris?",
            )  # fmt: skip
            followup = [*first.to_input_list(), {"role": "user", "content": "And in Rome?"}]
            _run(weather_agent([(saying("Rome is sunny too."), 41, 6)]), "oa-conv", followup)
            caught = weather_agent(
                [(calling("Oslo", "call_oslo"), 9, 4), (saying("I could not tell."), 20, 3)],
                failing=True,
            )
            _run(caught, "oa-caught", "Weather in Oslo?")
            raising = weather_agent(
                [(calling("Bern", "call_bern"), 9, 4)], failing=True, raising=True
            )
            with pytest.raises(UserError):  # the SDK wraps what the tool raised
                _run(raising, "oa-fail", "Weather in Bern?")
            hidden = weather_agent(
                [(calling("Lima", "call_lima"), 8, 3), (saying("Sunny."), 20, 2)]
            )
            _run(
                hidden,
                "oa-hidden",
                "Weather in Lima?",
                RunConfig(trace_include_sensitive_data=False),
            )
        finally:
            done()

    assert_two_weather_runs("oa-conv", "oa-app")

    caught_turn = models.Turn.objects.get(session_id="oa-caught")
    assert caught_turn.status == "completed"  # the SDK gave the tool's error to the model
    assert turn_rows(caught_turn) == [
        ("system", SYSTEM, [], ""),
        ("user", "Weather in Oslo?", [], ""),
        ("assistant", "", ["call_oslo"], ""),
        ("tool", "", [], "call_oslo"),
        ("assistant", "I could not tell.", [], ""),
    ]
    error = models.Event.objects.get(turn_id=caught_turn.id, role="tool")
    assert error.tool_response == {  # the spans name no exception class
        "tool_call_id": "call_oslo",
        "name": "get_weather",
        "error": "error",
    }
    assert models.Session.objects.get(pk="oa-caught").protocol_issue_count == 0

    failed = models.Turn.objects.get(session_id="oa-fail")
    assert (failed.status, failed.reason, failed.failure_code, failed.failure_stage) == (
        "failed",
        "agent_error",
        "agent_error",  # no exception class in the spans (only in a status description)
        "tool",
    )
    assert turn_rows(failed) == [
        ("system", SYSTEM, [], ""),
        ("user", "Weather in Bern?", [], ""),
        ("assistant", "", ["call_bern"], ""),
        ("tool", "", [], "call_bern"),  # the tool span's error answers the model's call
    ]
    assert models.Session.objects.get(pk="oa-fail").protocol_issue_count == 0
    assert SECRET not in database_text()
    pages = {
        session_id: operator_client.get(reverse("sessions:detail", args=[session_id]))
        for session_id in ("oa-conv", "oa-caught", "oa-fail")
    }
    assert {session_id: page.status_code for session_id, page in pages.items()} == dict.fromkeys(
        pages, 200
    )
    text = {session_id: page.content.decode() for session_id, page in pages.items()}
    assert MODEL in text["oa-conv"] and "83 in (0 cached) · 18 out" in text["oa-conv"]
    assert 'class="badge stage-tool label"' in text["oa-fail"]
    assert not [session_id for session_id, page in text.items() if SECRET in page]

    hidden_session = models.Session.objects.get(pk="oa-hidden")
    assert (hidden_session.state[STATE_KEY], hidden_session.title) == (
        {"content_captured": False},
        "",
    )
    (turn,) = models.Turn.objects.filter(session=hidden_session)
    assert turn.status == "completed"
    assert turn.status_note.endswith("message content was not captured")
    events = list(models.Event.objects.filter(turn_id=turn.id).order_by("id"))
    span_call = events[0].tool_calls[0]["id"]  # the model's call id went with the response
    assert span_call.startswith("span-")
    # Without sensitive data the SDK's Responses model does not put the response on its
    # span: the LLM spans carry neither usage nor model, so none is stored.
    assert [(e.role, e.tool_calls, e.tool_response, e.usage) for e in events] == [
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
    ]
