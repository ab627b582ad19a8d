"""A real producer: the LangSmith SDK (``langsmith`` 0.15.1) exporting as OpenTelemetry
(``LANGSMITH_OTEL_ENABLED=true``, ``LANGSMITH_OTEL_ONLY=true``) around a real LangGraph
``create_react_agent`` run offline (a fake chat model, one real ``@tool get_weather``),
captured once in ``tests/otlp/fixtures/langsmith_0.15.1_langgraph_spans.json`` (how:
``tests/otlp/fixtures/README.md``). Session ``lsm-s1``: two runs of one thread
(``metadata={"thread_id": ...}``, sent as ``langsmith.metadata.thread_id``); session
``lsm-fail``: one run whose tool raises ``ConnectionError(SECRET)``.

LangSmith sends LangChain's serialized messages in ``gen_ai.prompt`` / ``gen_ai.completion``
(every span's run inputs and outputs); `otlp.langsmith` reads the model and tool spans'
into the GenAI attributes, so each turn's events are its prompt, the model's calls and
answer and the tools' results, each once.
"""

from __future__ import annotations

from sessions_app import models
from sessions_app.otlp.models import OtlpSpan
from tests.otlp.captured import land_fixture, session_turns
from tests.otlp.conftest import OtlpPoster
from tests.otlp.rows import event_rows
from tests.otlp.weather_runs import tokens_of
from tests.test_redaction_shapes import database_text

FIXTURE = "langsmith_0.15.1_langgraph_spans.json"
SECRET = "the-langsmith-tool-exception-text-qv73"
SYSTEM = "Answer weather questions in one line."


def _run(question: str, city: str) -> list[tuple[str, str, list[str], str]]:
    """The events of one run through the tool: the prompt, the model's call, the tool's
    result, the answer."""
    call = f"call_{city.lower()}"
    return [
        ("user", question, [], ""),
        ("assistant", "", [call], ""),
        ("tool", "", [], call),
        ("assistant", f'The weather: {{"city": "{city}", "sky": "sunny"}}', [], ""),
    ]


def _calls_and_results(turn: models.Turn) -> list[tuple[str, list[str], str]]:
    events = models.Event.objects.filter(turn_id=turn.id).order_by("id")
    return [
        (
            e.role,
            [c["id"] for c in e.tool_calls or []],
            (e.tool_response or {}).get("tool_call_id", ""),
        )
        for e in events
        if e.tool_calls or e.role == "tool"
    ]


def test_langsmith_thread_is_one_session_with_a_turn_per_run(poster: OtlpPoster) -> None:
    land_fixture(poster, FIXTURE)
    session = models.Session.objects.get(pk="lsm-s1")
    assert (session.app_name, session.model) == ("lsm-weather", "fake-chat-1")
    turns = session_turns("lsm-s1")
    assert [t.status for t in turns] == ["completed", "completed"]
    assert [_calls_and_results(t) for t in turns] == [
        [("assistant", [call], ""), ("tool", [], call)] for call in ("call_paris", "call_rome")
    ]
    # Each model call's usage once (not again from the chain spans around it).
    assert (session.tokens_input, session.tokens_output) == (20 + 40 + 20 + 40, 7 * 4)
    used = models.Event.objects.filter(session=session, usage__isnull=False).order_by("id")
    assert [tokens_of(e) for e in used] == [(20, 7), (40, 7)] * 2
    assert models.Session.objects.filter(pk__startswith="otlp-").count() == 0


def test_langsmith_failing_tool_fails_the_turn_at_the_tool(poster: OtlpPoster) -> None:
    land_fixture(poster, FIXTURE)
    (turn,) = session_turns("lsm-fail")
    assert (turn.status, turn.failure_stage, turn.failure_message) == ("failed", "tool", "")
    assert _calls_and_results(turn) == [
        ("assistant", ["call_atlantis"], ""),
        ("tool", [], "call_atlantis"),
    ]
    assert SECRET not in database_text()


def test_langsmith_messages_land_once_each_in_order(poster: OtlpPoster) -> None:
    land_fixture(poster, FIXTURE)
    session = models.Session.objects.get(pk="lsm-s1")
    assert session.title == "Weather in Paris?"
    first, second = session_turns("lsm-s1")
    # The system prompt once a session (every model call sends it: test_system_once).
    assert event_rows(turn_id=first.id) == [
        ("system", SYSTEM, [], ""),
        *_run("Weather in Paris?", "Paris"),
    ]
    assert event_rows(turn_id=second.id) == _run("And in Rome?", "Rome")
    calls = models.Event.objects.filter(session=session, role="assistant").exclude(tool_calls=[])
    assert [e.tool_calls for e in calls.order_by("id")] == [
        [{"id": f"call_{c}", "name": "get_weather", "arguments": {"city": c.title()}}]
        for c in ("paris", "rome")
    ]
    results = models.Event.objects.filter(session=session, role="tool").order_by("id")
    assert [e.tool_response for e in results] == [
        {
            "tool_call_id": f"call_{c.lower()}",
            "name": "get_weather",
            "result": f'{{"city": "{c}", "sky": "sunny"}}',
        }
        for c in ("Paris", "Rome")
    ]
    # The runs' inputs and outputs as sent are not kept (the graph state, on every chain
    # span): what was read of them is, as GenAI attributes.
    kept = [s.attributes for s in OtlpSpan.objects.filter(session_id="lsm-s1")]
    assert not [a for a in kept if "gen_ai.prompt" in a or "gen_ai.completion" in a]
    assert sum("gen_ai.input.messages" in a for a in kept) == 4


def test_langsmith_failing_turn_keeps_its_messages_and_the_error_class(
    poster: OtlpPoster,
) -> None:
    land_fixture(poster, FIXTURE)
    assert models.Session.objects.get(pk="lsm-fail").title == "Weather in Atlantis?"
    (turn,) = session_turns("lsm-fail")
    # LangSmith records every error as an ``Exception`` whose message starts with the
    # error's repr: its class name is the code, nothing else of the message is kept.
    assert (turn.failure_code, turn.failure_stage) == ("connection_error", "tool")
    assert event_rows(turn_id=turn.id) == [
        ("system", SYSTEM, [], ""),
        ("user", "Weather in Atlantis?", [], ""),
        ("assistant", "", ["call_atlantis"], ""),
        ("tool", "", [], "call_atlantis"),
    ]
    (result,) = models.Event.objects.filter(turn_id=turn.id, role="tool")
    assert result.tool_response == {
        "tool_call_id": "call_atlantis",
        "name": "get_weather",
        "error": "ConnectionError",
    }
    assert SECRET not in database_text()
