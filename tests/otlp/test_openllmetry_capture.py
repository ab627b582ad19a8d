"""A real producer: OpenLLMetry (``opentelemetry-instrumentation-langchain`` 0.62.4, with
``traceloop-sdk`` 0.62.4's ``Traceloop.init`` or alone) around a real LangGraph
``create_react_agent`` run offline (a fake chat model, one real ``@tool``
``get_weather``), captured once and replayed from
``tests/otlp/fixtures/openllmetry_langchain_0.62.4_*spans.json`` (how they were made:
``tests/otlp/fixtures/README.md``).

Each fixture holds, for its prefix ``<p>``: session ``<p>-s1`` with the two weather runs
of `weather_runs`; session ``<p>-fail`` whose tool raises ``ConnectionError(SECRET)``
(the graph raises); session ``<p>-caught``, the same tool under
``ToolNode(handle_tool_errors=True)``, which hands the model a ``ToolMessage`` whose text
holds the exception's message, and the run completes. OpenLLMetry sends an
``invoke_agent LangGraph`` root, a ``LangGraph.workflow`` span, ``execute_task`` spans
for the graph's nodes, a ``WeatherModel.chat`` span per model call and an
``execute_tool get_weather`` span per tool run:

- ``..._spans.json`` (``ollm-``): ``Traceloop.init``, the session named by
  ``Traceloop.set_association_properties({"session_id": ...})``
  (``traceloop.association.properties.session_id``), no LangGraph thread;
- ``..._nocontent_spans.json`` (``ollmnc-``): the same with ``TRACELOOP_TRACE_CONTENT=false``;
- ``..._langgraph_thread_spans.json`` (``ollmlg-``): the instrumentor alone, a LangGraph
  checkpointer, the session as the run's ``thread_id`` (``gen_ai.conversation.id``).
"""

from __future__ import annotations

from typing import Any

import pytest

from sessions_app import models
from sessions_app.otlp.models import OtlpSpan
from tests.otlp.captured import fixture_spans, land_fixture, session_turns
from tests.otlp.conftest import OtlpPoster
from tests.otlp.weather_runs import (
    MODEL,
    SYSTEM,
    assert_two_weather_runs,
    outcome,
    session_usages,
    tool_result,
    turn_rows,
)
from tests.test_redaction_shapes import database_text

APP = "ollm-weather"
SECRET = "the-openllmetry-tool-exception-text-w5"
VERSION = "0.62.4"
WITH_CONTENT = {
    f"openllmetry_langchain_{VERSION}_spans.json": "ollm",
    f"openllmetry_langchain_{VERSION}_langgraph_thread_spans.json": "ollmlg",
}
WITHOUT_CONTENT = f"openllmetry_langchain_{VERSION}_nocontent_spans.json"
CALL = {"id": "call_atlantis", "name": "get_weather", "arguments": {"city": "Atlantis"}}
ERROR = {"tool_call_id": "call_atlantis", "name": "get_weather", "error": "ConnectionError"}


def _turn_ids(fixture: str, session_id: str) -> list[str]:
    """The turns of `session_id` as expected: one per run (its ``invoke_agent`` root's
    trace; OpenLLMetry names no turn), in run order."""
    traces = {
        s["traceId"]
        for s in fixture_spans(fixture)
        if session_id
        in (s["attrs"].get("traceloop.association.properties.session_id"),
            s["attrs"].get("traceloop.association.properties.thread_id"),
            s["attrs"].get("gen_ai.conversation.id"))
    }  # fmt: skip
    roots = [s for s in fixture_spans(fixture) if not s.get("parentSpanId")]
    return [f"{session_id}/{s['traceId']}" for s in roots if s["traceId"] in traces]


@pytest.mark.parametrize("fixture", WITH_CONTENT)
def test_openllmetry_runs_land_as_the_two_weather_turns(poster: OtlpPoster, fixture: str) -> None:
    land_fixture(poster, fixture)
    session_id = f"{WITH_CONTENT[fixture]}-s1"
    # One session (the association property, or LangGraph's thread id), a turn per run:
    # the prompt, the system prompt once, the call paired with its result (the
    # ToolMessage's content, not OpenLLMetry's callback wrapper) by the model's call id,
    # the answers, each model call's usage with the model LangChain names (OpenLLMetry
    # sends "unknown" for it).
    assert_two_weather_runs(session_id, APP)
    assert [t.id for t in session_turns(session_id)] == _turn_ids(fixture, session_id)
    session = models.Session.objects.get(pk=session_id)
    assert session.state["otlp"] == {"content_captured": True}
    assert (session.tokens_input, session.tokens_output) == (12 + 30 + 41, 5 + 7 + 6)
    assert (session.orphan_result_count, session.cannot_resume) == (0, False)
    assert models.Session.objects.filter(pk__startswith="otlp-").count() == 0


@pytest.mark.parametrize("fixture", WITH_CONTENT)
def test_openllmetry_failing_tool_fails_the_turn_at_the_tool(
    poster: OtlpPoster, fixture: str
) -> None:
    land_fixture(poster, fixture)
    session_id = f"{WITH_CONTENT[fixture]}-fail"
    (turn,) = session_turns(session_id)
    assert turn.id == _turn_ids(fixture, session_id)[0]
    assert outcome(turn) == ("failed", "agent_error", "connection_error", "tool", "")
    assert turn_rows(turn) == [
        ("system", SYSTEM, [], ""),
        ("user", "Weather in Atlantis?", [], ""),
        ("assistant", "", ["call_atlantis"], ""),
        ("tool", "", [], "call_atlantis"),
    ]
    assert models.Event.objects.get(turn_id=turn.id, role="assistant").tool_calls == [CALL]
    assert tool_result(turn) == ERROR  # the exception's class, never its message
    assert session_usages(session_id) == [(9, 4)]
    assert models.Session.objects.get(pk=session_id).protocol_issue_count == 0
    assert SECRET not in database_text()


@pytest.mark.parametrize("fixture", WITH_CONTENT)
def test_openllmetry_caught_tool_error_is_answered_by_its_class(
    poster: OtlpPoster, fixture: str
) -> None:
    land_fixture(poster, fixture)
    session_id = f"{WITH_CONTENT[fixture]}-caught"
    (turn,) = session_turns(session_id)
    # ToolNode gave the model the exception's message as the tool's result and the run
    # went on: the turn completes, the call answered by the error's class; the message
    # (in the next model call's input, the tools node's output) is kept nowhere.
    assert outcome(turn) == ("completed", "", "", "", "")
    assert turn_rows(turn) == [
        ("system", SYSTEM, [], ""),
        ("user", "Weather in Atlantis?", [], ""),
        ("assistant", "", ["call_atlantis"], ""),
        ("tool", "", [], "call_atlantis"),
        ("assistant", "The weather service failed.", [], ""),
    ]
    assert tool_result(turn) == ERROR
    assert session_usages(session_id) == [(9, 4), (20, 5)]
    assert SECRET not in database_text()


def test_openllmetry_without_content_lands_calls_results_usage_and_failures(
    poster: OtlpPoster,
) -> None:
    land_fixture(poster, WITHOUT_CONTENT)
    session = models.Session.objects.get(pk="ollmnc-s1")
    assert (session.app_name, session.title, session.model) == (APP, "", MODEL)
    assert session.state["otlp"] == {"content_captured": False}
    turns = session_turns(session.id)
    assert [t.id for t in turns] == _turn_ids(WITHOUT_CONTENT, session.id)
    for turn in turns:
        assert turn.status == "completed"
        assert "message content was not captured" in turn.status_note
    # The tool span's call and result (not captured; it names no call id), each model
    # call's usage alone.
    rows = turn_rows(turns[0])
    (call_id,) = rows[1][2]
    assert rows == [
        ("assistant", "", [], ""),
        ("assistant", "", [call_id], ""),
        ("tool", "", [], call_id),
        ("assistant", "", [], ""),
    ]
    assert tool_result(turns[0]) == {
        "tool_call_id": call_id,
        "name": "get_weather",
        "result": {"content_captured": False},
    }
    assert turn_rows(turns[1]) == [("assistant", "", [], "")]
    assert session_usages(session.id) == [(12, 5), (30, 7), (41, 6)]
    assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)

    (failing,) = session_turns("ollmnc-fail")
    assert outcome(failing) == ("failed", "agent_error", "connection_error", "tool", "")
    assert (tool_result(failing) or {}).get("error") == "ConnectionError"
    (caught,) = session_turns("ollmnc-caught")
    assert outcome(caught) == ("completed", "", "", "", "")
    assert (tool_result(caught) or {}).get("error") == "ConnectionError"
    assert SECRET not in database_text()


def test_openllmetry_kept_spans_hold_no_entity_copies(poster: OtlpPoster) -> None:
    for fixture in (*WITH_CONTENT, WITHOUT_CONTENT):
        land_fixture(poster, fixture)
    kept = [span.attributes for span in OtlpSpan.objects.all()]
    assert len(kept) == sum(len(fixture_spans(f)) for f in (*WITH_CONTENT, WITHOUT_CONTENT))
    # The graph state every workflow and task span repeats, and the tool callback's
    # wrappers: not kept (the model and tool spans carry what is read).
    copies = {"traceloop.entity.input", "traceloop.entity.output", "gen_ai.task.output"}
    assert [a for a in kept if not copies.isdisjoint(a)] == []
    assert "unknown" not in {a.get("gen_ai.request.model") for a in kept}


# --- OpenLLMetry 0.47.5: flattened prompts and completions, `<tool>.tool` spans -------------

OLD = "openllmetry_langchain_0.47.5_langgraph_thread_spans.json"  # ollm47-
OLD_WITHOUT_CONTENT = "openllmetry_langchain_0.47.5_nocontent_spans.json"  # ollm47nc-


def _old_rows(session_id: str) -> list[list[Any]]:
    return [turn_rows(t) for t in session_turns(session_id)]


def test_openllmetry_047_runs_land_with_the_tool_spans_calls(poster: OtlpPoster) -> None:
    land_fixture(poster, OLD)
    session = models.Session.objects.get(pk="ollm47-s1")  # traceloop...thread_id
    assert (session.app_name, session.model, session.title) == (APP, MODEL, "Weather in Paris?")
    assert [t.id for t in session_turns(session.id)] == _turn_ids(OLD, session.id)
    # Its completion that called the tool names no call (role "unknown", content '""'):
    # that model call is its usage alone, the call comes from the ``get_weather.tool``
    # span (the id in its callback wrapper), its result the ToolMessage's content.
    assert _old_rows(session.id) == [
        [
            ("system", SYSTEM, [], ""),
            ("user", "Weather in Paris?", [], ""),
            ("assistant", "", [], ""),
            ("assistant", "", ["call_paris"], ""),
            ("tool", "", [], "call_paris"),
            ("assistant", "It is sunny in Paris.", [], ""),
        ],
        [("user", "And in Rome?", [], ""), ("assistant", "Rome is sunny too.", [], "")],
    ]
    (first, _) = session_turns(session.id)
    (call,) = [e for e in models.Event.objects.filter(turn_id=first.id) if e.tool_calls]
    assert call.tool_calls == [
        {"id": "call_paris", "name": "get_weather", "arguments": {"city": "Paris"}}
    ]
    assert tool_result(first) == {
        "tool_call_id": "call_paris",
        "name": "get_weather",
        "result": "sunny in Paris",
    }
    assert session_usages(session.id) == [(12, 5), (30, 7), (41, 6)]
    assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)

    (failing,) = session_turns("ollm47-fail")
    assert outcome(failing) == ("failed", "agent_error", "connection_error", "tool", "")
    assert tool_result(failing) == ERROR
    (caught,) = session_turns("ollm47-caught")
    assert outcome(caught) == ("completed", "", "", "", "")
    assert tool_result(caught) == ERROR  # not the error text its next model call was given
    assert turn_rows(caught)[-1] == ("assistant", "The weather service failed.", [], "")
    assert SECRET not in database_text()


def test_openllmetry_047_without_content_lands_calls_and_usage(poster: OtlpPoster) -> None:
    land_fixture(poster, OLD_WITHOUT_CONTENT)
    session = models.Session.objects.get(pk="ollm47nc-s1")
    assert session.state["otlp"] == {"content_captured": False}
    first, second = session_turns(session.id)
    tools = [s for s in fixture_spans(OLD_WITHOUT_CONTENT) if s["name"] == "get_weather.tool"]
    call_id = f"span-{tools[0]['spanId']}"  # the first run's: it names no call id
    assert turn_rows(first) == [
        ("assistant", "", [], ""),
        ("assistant", "", [call_id], ""),
        ("tool", "", [], call_id),
        ("assistant", "", [], ""),
    ]
    assert turn_rows(second) == [("assistant", "", [], "")]
    assert session_usages(session.id) == [(12, 5), (30, 7), (41, 6)]
    (failing,) = session_turns("ollm47nc-fail")
    assert outcome(failing) == ("failed", "agent_error", "connection_error", "tool", "")
