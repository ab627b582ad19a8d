"""A real framework's own GenAI instrumentation: Pydantic AI (its `TestModel`, offline)
instrumented with `InstrumentationSettings`, its spans sent by the SDK's OTLP/HTTP
protobuf exporter (BatchSpanProcessor, as users set it up) to a live server.

Checked: two runs of one conversation land as one session (``gen_ai.conversation.id``)
with two completed turns (``gen_ai.agent.call.id``), each holding only its own messages
(the second run's history is not stored again): the instructions its model was given,
the user's prompt, the tool call with Pydantic AI's call id, its result paired by that
id, the final answer with usage and model; a run whose tool raises is a failed turn
with the exception's class as failure code and stage ``tool``, and the exception's
message is nowhere in the database.
"""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.test import TestModel

from sessions_app import models
from sessions_app.api.keys import create_key
from tests.live.helpers import DaphneServer
from tests.otlp.rows import EventRow, event_rows
from tests.test_redaction_shapes import database_text

SECRET = "the-tool-exception-text-pq73"


def _agent(settings: InstrumentationSettings, *, failing: bool = False) -> Agent[None, str]:
    agent = Agent(TestModel(), instructions="Answer in one line.", name="weather")
    agent.instrument = settings

    @agent.tool_plain
    def get_weather(city: str) -> str:
        if failing:
            raise ConnectionError(SECRET)
        return f"sunny in {city}"

    return agent


def _events(turn: models.Turn) -> list[EventRow]:
    return event_rows(turn_id=turn.id)


@pytest.mark.django_db(transaction=True)
def test_pydantic_ai_instrumentation_lands_as_a_session() -> None:
    key = create_key("pydantic-ai").key
    with DaphneServer() as server:
        exporter = OTLPSpanExporter(
            endpoint=f"{server.url}/v1/traces", headers={"Authorization": f"Bearer {key}"}
        )
        tracer_provider = TracerProvider(resource=Resource.create({"service.name": "pai-app"}))
        tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
        settings = InstrumentationSettings(tracer_provider=tracer_provider)
        agent = _agent(settings)
        first = agent.run_sync("Weather in Paris?", conversation_id="pai-conv")
        agent.run_sync("And in Rome?", message_history=first.all_messages())
        with pytest.raises(ConnectionError):
            _agent(settings, failing=True).run_sync("Weather?", conversation_id="pai-fail")
        tracer_provider.shutdown()  # flushes the batch processor to the server

    session = models.Session.objects.get(pk="pai-conv")
    assert session.app_name == "pai-app"
    turns = list(models.Turn.objects.filter(session=session).order_by("started_at"))
    assert [(t.status, t.id.startswith("pai-conv/")) for t in turns] == [("completed", True)] * 2
    call = "pyd_ai_tool_call_id__get_weather"
    answer = '{"get_weather":"sunny in a"}'
    assert _events(turns[0]) == [
        ("system", "Answer in one line.", [], ""),
        ("user", "Weather in Paris?", [], ""),
        ("assistant", "", [call], ""),
        ("tool", "", [], call),
        ("assistant", answer, [], ""),
    ]
    # Its history (the first run) is not stored again, nor the same system prompt.
    assert _events(turns[1]) == [
        ("user", "And in Rome?", [], ""),
        ("assistant", answer, [], ""),  # TestModel calls the tools only once
    ]
    result = models.Event.objects.filter(turn_id=turns[0].id, role="tool").get()
    assert (result.tool_response or {})["result"] == "sunny in a"
    final = models.Event.objects.filter(turn_id=turns[0].id, text=answer).get()
    assert (final.usage or {})["details"]["model"] == "test"
    assert (final.usage or {})["prompt_tokens"] > 0
    assert session.protocol_issue_count == 0

    failed = models.Turn.objects.get(session_id="pai-fail")
    assert (failed.status, failed.reason, failed.failure_code, failed.failure_stage) == (
        "failed",
        "agent_error",
        "connection_error",
        "tool",
    )
    assert SECRET not in database_text()
