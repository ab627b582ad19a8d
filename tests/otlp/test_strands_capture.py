"""A real producer: Strands Agents 1.62.0's own spans, captured from a real ``strands.Agent``
run offline (a fake ``Model``, one real ``@tool`` ``get_weather``) and replayed from
``tests/otlp/fixtures/strands_1.62.0_*spans.json`` (how they were made:
``tests/otlp/fixtures/README.md``).

Each fixture holds, for its prefix ``<p>``: session ``<p>-s1`` with the two weather runs
of `weather_runs` ("Weather in Paris?" through the tool, "And in Rome?" without it; the
system prompt "Answer in one line."), session ``<p>-fail`` whose tool raises
``ConnectionError(SECRET)`` (Strands gives the model an error result and the run goes
on) and session ``<p>-down`` whose model raises ``TimeoutError(MODEL_SECRET)`` (the run
fails). Strands sends an ``invoke_agent`` span per run, an ``execute_event_loop_cycle``
span per cycle, a ``chat`` span per model call and an ``execute_tool`` span per tool:

- ``strands_1.62.0_spans.json`` (``st-``): its default, the earlier conventions' message
  events (``gen_ai.user.message``, ``gen_ai.choice``, ...: Strands' content blocks);
- ``..._latest_spans.json`` (``stl-``):
  ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` (operation-details events);
- ``..._latest_attributes_spans.json`` (``stla-``): the same with
  ``gen_ai_span_attributes_only`` (the messages as span attributes);
- ``..._nocontent_spans.json`` (``stnc-``) and ``..._latest_nocontent_spans.json``
  (``stlnc-``): Strands' redaction of every message attribute
  (``gen_ai_unredacted_attributes=``, its values ``[REDACTED]``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sessions_app import models
from tests.otlp.captured import FIXTURES, fixture_spans, land_fixture, session_turns
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

APP = "strands-weather"
SECRET = "the-strands-tool-exception-text-q7"
MODEL_SECRET = "the-strands-model-exception-text-m3"
WITH_CONTENT = {
    "strands_1.62.0_spans.json": "st",
    "strands_1.62.0_latest_spans.json": "stl",
    "strands_1.62.0_latest_attributes_spans.json": "stla",
}
WITHOUT_CONTENT = {
    "strands_1.62.0_nocontent_spans.json": "stnc",
    "strands_1.62.0_latest_nocontent_spans.json": "stlnc",
}


def _turn_ids(fixture: str, session_id: str) -> list[str]:
    """The turns of `session_id` as expected: one per run (its ``invoke_agent`` root's
    trace; Strands names no turn), in run order."""
    return [
        f"{session_id}/{span['traceId']}"
        for span in fixture_spans(fixture)
        if not span.get("parentSpanId") and span["attrs"].get("session.id") == session_id
    ]


# --- with content: the default events, the latest conventions' events or attributes --------


@pytest.mark.parametrize("fixture", WITH_CONTENT)
def test_strands_runs_land_as_the_two_weather_turns(poster: OtlpPoster, fixture: str) -> None:
    land_fixture(poster, fixture)
    prefix = WITH_CONTENT[fixture]
    session_id = f"{prefix}-s1"  # trace_attributes={"session.id": ...}
    # Each run its own turn; the user prompt, the system prompt, the call paired with its
    # result by Strands' call id, the answers, each model call's usage and model; the
    # second run's history (sent again to the model) is not stored again.
    assert_two_weather_runs(session_id, APP)
    assert [t.id for t in session_turns(session_id)] == _turn_ids(fixture, session_id)
    session = models.Session.objects.get(pk=session_id)
    assert session.state["otlp"] == {"content_captured": True}
    # The chat spans' usage only: not the agent span's, summed over the agent's life.
    assert (session.tokens_input, session.tokens_output) == (12 + 30 + 41, 5 + 7 + 6)
    assert (session.orphan_result_count, session.cannot_resume) == (0, False)


@pytest.mark.parametrize("fixture", WITH_CONTENT)
def test_strands_failing_tool_is_answered_by_its_error_and_the_run_goes_on(
    poster: OtlpPoster, fixture: str
) -> None:
    land_fixture(poster, fixture)
    session_id = f"{WITH_CONTENT[fixture]}-fail"
    (turn,) = session_turns(session_id)
    assert turn.id == _turn_ids(fixture, session_id)[0]
    # Strands catches the tool's exception and gives the model an error result: the run,
    # and its turn, complete with the model's answer.
    assert outcome(turn) == ("completed", "", "", "", "")
    assert turn_rows(turn) == [
        ("system", SYSTEM, [], ""),
        ("user", "Weather in Atlantis?", [], ""),
        ("assistant", "", ["call_atlantis"], ""),
        ("tool", "", [], "call_atlantis"),
        ("assistant", "The weather service failed.", [], ""),
    ]
    call = models.Event.objects.get(turn_id=turn.id, role="assistant", text="")
    assert call.tool_calls == [
        {"id": "call_atlantis", "name": "get_weather", "arguments": {"city": "Atlantis"}}
    ]
    assert tool_result(turn) == {  # the exception's class, never its message
        "tool_call_id": "call_atlantis",
        "name": "get_weather",
        "error": "ConnectionError",
    }
    assert session_usages(session_id) == [(12, 5), (30, 7)]
    assert models.Session.objects.get(pk=session_id).protocol_issue_count == 0
    assert SECRET not in database_text()


@pytest.mark.parametrize("fixture", WITH_CONTENT)
def test_strands_failing_model_fails_the_turn_at_the_provider(
    poster: OtlpPoster, fixture: str
) -> None:
    land_fixture(poster, fixture)
    session_id = f"{WITH_CONTENT[fixture]}-down"
    (turn,) = session_turns(session_id)
    assert turn.id == _turn_ids(fixture, session_id)[0]
    assert outcome(turn) == ("failed", "agent_error", "timeout_error", "provider", "")
    assert turn_rows(turn) == [("system", SYSTEM, [], ""), ("user", "Is the model down?", [], "")]
    assert session_usages(session_id) == []
    assert MODEL_SECRET not in database_text()


def test_strands_kept_spans_hold_no_error_text(poster: OtlpPoster) -> None:
    for fixture in (*WITH_CONTENT, *WITHOUT_CONTENT):
        land_fixture(poster, fixture)
    text = database_text()
    # Strands' error result text ("Error: ConnectionError - <message>"), its exception
    # events and status descriptions: none kept, nor its redaction placeholder.
    assert (SECRET in text, MODEL_SECRET in text, "Error: " in text) == (False, False, False)
    assert "[REDACTED]" not in text


# --- without content (Strands' redaction) -----------------------------------------------


@pytest.mark.parametrize("fixture", WITHOUT_CONTENT)
def test_strands_without_content_lands_calls_results_usage_and_failures(
    poster: OtlpPoster, fixture: str
) -> None:
    land_fixture(poster, fixture)
    prefix = WITHOUT_CONTENT[fixture]
    session = models.Session.objects.get(pk=f"{prefix}-s1")
    assert (session.app_name, session.title, session.model) == (APP, "", MODEL)
    assert session.state["otlp"] == {"content_captured": False}
    turns = session_turns(session.id)
    assert [t.id for t in turns] == _turn_ids(fixture, session.id)
    for turn in turns:
        assert turn.status == "completed"
        assert "message content was not captured" in turn.status_note
    # The tool span's call and result (not captured), each model call's usage alone.
    assert turn_rows(turns[0]) == [
        ("assistant", "", [], ""),
        ("assistant", "", ["call_paris"], ""),
        ("tool", "", [], "call_paris"),
        ("assistant", "", [], ""),
    ]
    assert tool_result(turns[0]) == {
        "tool_call_id": "call_paris",
        "name": "get_weather",
        "result": {"content_captured": False},
    }
    assert turn_rows(turns[1]) == [("assistant", "", [], "")]
    assert session_usages(session.id) == [(12, 5), (30, 7), (41, 6)]
    assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)

    (failing,) = session_turns(f"{prefix}-fail")
    assert outcome(failing) == ("completed", "", "", "", "")
    assert tool_result(failing) == {
        "tool_call_id": "call_atlantis",
        "name": "get_weather",
        "error": "ConnectionError",
    }
    (down,) = session_turns(f"{prefix}-down")
    assert outcome(down) == ("failed", "agent_error", "timeout_error", "provider", "")
    text = database_text()
    assert (SECRET in text, MODEL_SECRET in text, "[REDACTED]" in text) == (False, False, False)


@pytest.mark.parametrize(
    "fixture", ["strands_1.62.0_spans.json", "strands_1.62.0_latest_spans.json"]
)
def test_strands_spans_sent_one_by_one_root_last_land_the_same(
    poster: OtlpPoster, fixture: str
) -> None:
    document = json.loads((FIXTURES / fixture).read_text())
    (resource,) = document["resourceSpans"]
    (scope,) = resource["scopeSpans"]
    roots = {s["traceId"]: s for s in scope["spans"] if not s.get("parentSpanId")}

    # Each span in a request of its own, the traces in run order, each trace's spans
    # latest-starting first: its root comes last.
    def order(span: dict[str, Any]) -> tuple[int, int]:
        root = roots[span["traceId"]]
        return int(root["startTimeUnixNano"]), -int(span["startTimeUnixNano"])

    for span in sorted(scope["spans"], key=order):
        one = {"resourceSpans": [{**resource, "scopeSpans": [{**scope, "spans": [span]}]}]}
        response = poster.post(json.dumps(one).encode(), "application/json")
        assert response.status_code == 200, response.content
    prefix = WITH_CONTENT[fixture]
    assert_two_weather_runs(f"{prefix}-s1", APP)
    session = models.Session.objects.get(pk=f"{prefix}-s1")
    assert (session.tokens_input, session.tokens_output) == (12 + 30 + 41, 5 + 7 + 6)
    (failing,) = session_turns(f"{prefix}-fail")
    assert outcome(failing) == ("completed", "", "", "", "")
    assert (tool_result(failing) or {}).get("error") == "ConnectionError"
    (down,) = session_turns(f"{prefix}-down")
    assert outcome(down) == ("failed", "agent_error", "timeout_error", "provider", "")
    assert SECRET not in database_text()
