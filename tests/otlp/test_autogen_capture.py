"""A real producer: Microsoft AutoGen 0.7.5's own spans (``autogen-core``: ``create_agent``,
``invoke_agent``, ``execute_tool``, and in a team its agent runtime's messaging spans)
with the ``chat`` spans of ``opentelemetry-instrumentation-openai-v2`` 2.4b0 around the
OpenAI client AutoGen uses, captured from a real ``AssistantAgent`` run offline against a
fake OpenAI server and replayed from ``tests/otlp/fixtures/autogen_0.7.5_*spans.json``
(how they were made: ``tests/otlp/fixtures/README.md``).

Each fixture holds four runs of an agent with the tool ``get_weather`` and the system
message "Answer in one line.": two runs of one conversation ("Weather in Paris?", then
"And in Rome?": the model's call, the tool's result, the model's answer), a run whose
tool raises ``ConnectionError(SECRET)`` (AutoGen hands the exception's text to the
model as the tool's result; the model answers), and a run whose model call fails (the
fake server answers 500 with `MODEL_SECRET`: the run raises):

- ``autogen_0.7.5_spans.json``: ``AssistantAgent.run`` (each run a trace whose root is
  ``invoke_agent``; AutoGen names no conversation, so each run is a session of its own),
  content on spans (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``);
- ``autogen_0.7.5_nocontent_spans.json``: the same without content;
- ``autogen_0.7.5_team_spans.json``: the agent in a ``RoundRobinGroupChat`` (its
  ``SingleThreadedAgentRuntime`` starts a trace for most messages it delivers: the run's
  trace has the runtime's ``publish`` span as its root, which ends before the run);
- ``autogen_0.7.5_conversation_spans.json``: the team's runs each inside a span of the
  application naming the conversation (``gen_ai.conversation.id`` ``agc-s1``,
  ``agc-fail``, ``agc-broken``): the runtime's spans are children of it, one trace a run;
- ``autogen_0.7.5_events_spans.json`` with ``autogen_0.7.5_events_logs.json``:
  ``AssistantAgent.run`` with ``...CAPTURE_MESSAGE_CONTENT=EVENT_ONLY``: the spans
  without content, the messages in the instrumentation's log records
  (``gen_ai.client.inference.operation.details``), exported apart.

Every fixture also holds the ``create_agent`` traces of the agents made.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessions_app import models
from sessions_app.otlp.models import OtlpSpan
from tests.otlp.captured import session_turns
from tests.otlp.conftest import OtlpPoster
from tests.otlp.rows import EventRow, event_rows
from tests.test_redaction_shapes import database_text

FIXTURES = Path(__file__).parent / "fixtures"
AGENT = "autogen_0.7.5_spans.json"
NO_CONTENT = "autogen_0.7.5_nocontent_spans.json"
TEAM = "autogen_0.7.5_team_spans.json"
CONVERSATION = "autogen_0.7.5_conversation_spans.json"
EVENT_SPANS = "autogen_0.7.5_events_spans.json"
EVENT_LOGS = "autogen_0.7.5_events_logs.json"
SECRET = "the-autogen-tool-exception-text-k2"
MODEL_SECRET = "the-autogen-model-exception-text-k3"
SYSTEM = "Answer in one line."
MODEL = "gpt-4o-2024-08-06"  # the fake server's response model
PARIS, ROME, ATLANTIS = "call_paris_1", "call_rome_3", "call_atlantis_5"  # the fake's ids


def _document(fixture: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((FIXTURES / fixture).read_text())
    return document


def _spans(fixture: str) -> list[dict[str, Any]]:
    """The fixture's spans by start time, each with its attributes as ``attrs``."""
    spans = [
        {
            **span,
            "attrs": {
                a["key"]: next(iter(a["value"].values())) for a in span.get("attributes", [])
            },
        }
        for resource in _document(fixture)["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    ]
    return sorted(spans, key=lambda s: int(s["startTimeUnixNano"]))


def _runs(fixture: str) -> list[dict[str, Any]]:
    """The ``invoke_agent`` spans, in run order: Paris, Rome, Atlantis, Mars."""
    runs = [s for s in _spans(fixture) if s["name"] == "invoke_agent weather_agent"]
    assert len(runs) == 4
    return runs


def _run_sessions(fixture: str) -> list[str]:
    """The session of each run: its trace's own (AutoGen names no conversation)."""
    return [f"otlp-{run['traceId']}" for run in _runs(fixture)]


def _land(poster: OtlpPoster, document: dict[str, Any], path: str = "/v1/traces") -> None:
    response = poster.post(json.dumps(document).encode(), "application/json", path=path)
    assert response.status_code == 200, response.content
    assert json.loads(response.content) == {}  # no partial success: every span kept


def _land_fixture(poster: OtlpPoster, fixture: str) -> None:
    _land(poster, _document(fixture))


def _subset(fixture: str, keep: Any) -> dict[str, Any]:
    """The fixture's document with only the spans `keep(span)` is true of."""
    document = _document(fixture)
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            scope["spans"] = [span for span in scope["spans"] if keep(span)]
    return document


def _rows(turn: models.Turn) -> list[EventRow]:
    return event_rows(turn_id=turn.id)


def _event(turn: models.Turn, **lookup: Any) -> models.Event:
    return models.Event.objects.filter(turn_id=turn.id, **lookup).get()


def _usages(turn: models.Turn) -> list[tuple[int, int, str]]:
    events = models.Event.objects.filter(turn_id=turn.id).order_by("id")
    return [
        (e.usage["prompt_tokens"], e.usage["completion_tokens"], e.usage["details"]["model"])
        for e in events
        if e.usage
    ]


def _expected(question: str, call_id: str, answer: str, system: bool = True) -> list[EventRow]:
    return [
        *([("system", SYSTEM, [], "")] if system else []),
        ("user", question, [], ""),
        ("assistant", "", [call_id], ""),
        ("tool", "", [], call_id),
        ("assistant", answer, [], ""),
    ]


def _assert_conversation_runs(paris: models.Turn, rome: models.Turn, shared: bool = False) -> None:
    """The two runs of the conversation, with content: every event, the tool's
    arguments and result, each model call's usage; `shared`: both runs are turns of one
    session, so the second does not store the same system prompt again."""
    for turn, city, call_id, tokens in ((paris, "Paris", PARIS, (20, 40)),
                                        (rome, "Rome", ROME, (60, 80))):  # fmt: skip
        question = "Weather in Paris?" if city == "Paris" else "And in Rome?"
        assert turn.status == "completed"
        assert "not captured" not in turn.status_note
        # The second run's history (the first run, sent again to the model) is not stored.
        system = city == "Paris" or not shared
        assert _rows(turn) == _expected(question, call_id, f"It is sunny in {city}.", system)
        call = _event(turn, role="assistant", finish_reason="tool_calls")
        assert call.tool_calls == [{"id": call_id, "name": "get_weather",
                                    "arguments": {"city": city}}]  # fmt: skip
        # AutoGen's tool span carries no result: the model's input gives it.
        result = _event(turn, role="tool").tool_response
        assert result == {"tool_call_id": call_id, "name": "get_weather",
                          "result": json.dumps({"city": city, "sky": "sunny"})}  # fmt: skip
        assert _usages(turn) == [(tokens[0], 7, MODEL), (tokens[1], 7, MODEL)]


def _assert_tool_failure(turn: models.Turn) -> None:
    """The run whose tool raised: the call answered by the error, the model's answer,
    the turn completed (AutoGen gave the model the error)."""
    assert (turn.status, turn.failure_code) == ("completed", "")
    assert _rows(turn) == _expected(
        "Weather in Atlantis?", ATLANTIS, "I could not get the weather in Atlantis."
    )
    result = _event(turn, role="tool").tool_response
    assert result == {"tool_call_id": ATLANTIS, "name": "get_weather", "error": "ConnectionError"}


def _assert_model_failure(turn: models.Turn) -> None:
    """The run whose model call failed: a failed turn at the provider, the code from
    the exception's class."""
    outcome = (turn.status, turn.reason, turn.failure_code, turn.failure_stage)
    assert outcome == ("failed", "agent_error", "openai.internal_server_error", "provider")
    assert turn.failure_message == ""
    assert _rows(turn) == [("system", SYSTEM, [], ""), ("user", "Weather on Mars?", [], "")]


def _assert_no_secret() -> None:
    text = database_text()
    assert SECRET not in text and MODEL_SECRET not in text


# --- AssistantAgent.run, content on spans ------------------------------------------------


def test_autogen_agent_runs_land_a_session_and_turn_each(poster: OtlpPoster) -> None:
    _land_fixture(poster, AGENT)
    paris_id, rome_id, atlantis_id, mars_id = _run_sessions(AGENT)
    # One session per run (AutoGen sends no conversation id); the create_agent traces
    # make none.
    assert set(models.Session.objects.values_list("id", flat=True)) == {
        paris_id, rome_id, atlantis_id, mars_id
    }  # fmt: skip
    for session_id, title, tokens in ((paris_id, "Weather in Paris?", (60, 14)),
                                      (rome_id, "And in Rome?", (140, 14))):  # fmt: skip
        session = models.Session.objects.get(pk=session_id)
        assert (session.app_name, session.title, session.model) == ("autogen-weather", title, MODEL)
        assert (session.tokens_input, session.tokens_output) == tokens
        assert session.state["otlp"] == {"content_captured": True}
        assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)
        assert not session.cannot_resume
    (paris,), (rome,) = session_turns(paris_id), session_turns(rome_id)
    runs = _runs(AGENT)
    assert (paris.id, rome.id) == (
        f"{paris_id}/{runs[0]['traceId']}",
        f"{rome_id}/{runs[1]['traceId']}",
    )
    _assert_conversation_runs(paris, rome)


def test_autogen_failing_tool_is_answered_by_its_error_and_its_text_is_not_kept(
    poster: OtlpPoster,
) -> None:
    _land_fixture(poster, AGENT)
    _, _, atlantis_id, _ = _run_sessions(AGENT)
    (turn,) = session_turns(atlantis_id)
    _assert_tool_failure(turn)
    session = models.Session.objects.get(pk=atlantis_id)
    assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)
    # The exception's text reached the model as the tool's result (the next chat span's
    # gen_ai.input.messages): it is kept as the tool span's error class instead.
    spans = OtlpSpan.objects.filter(trace_id=_runs(AGENT)[2]["traceId"], name="chat gpt-4o")
    spans = spans.order_by("start_at")  # the second model call reads the result
    inputs = [json.loads(s.attributes["gen_ai.input.messages"]) for s in spans]
    answered = [p for m in inputs[-1] for p in m["parts"] if p["type"] == "tool_call_response"]
    assert answered == [
        {"type": "tool_call_response", "id": ATLANTIS, "response": {"error": "ConnectionError"}}
    ]
    _assert_no_secret()


def test_autogen_model_failure_fails_the_turn_at_the_provider(poster: OtlpPoster) -> None:
    _land_fixture(poster, AGENT)
    *_, mars_id = _run_sessions(AGENT)
    (turn,) = session_turns(mars_id)
    _assert_model_failure(turn)
    _assert_no_secret()


def test_autogen_agent_creation_traces_are_kept_without_a_session(poster: OtlpPoster) -> None:
    _land_fixture(poster, AGENT)
    created = [s for s in _spans(AGENT) if s["name"] == "create_agent weather_agent"]
    assert len(created) == 3 and all(not s.get("parentSpanId") for s in created)
    kept = OtlpSpan.objects.filter(trace_id__in=[s["traceId"] for s in created])
    assert sorted(kept.values_list("session_id", "turn_id")) == [("", "")] * 3
    assert models.Turn.objects.count() == 4  # the four runs


def test_autogen_tool_failure_text_is_replaced_when_the_tool_span_came_first(
    poster: OtlpPoster,
) -> None:
    """The tool span that failed is kept already when the model span that read its
    result arrives in a later request."""
    trace_id = _runs(AGENT)[2]["traceId"]
    _land(poster, _subset(AGENT, lambda s: s["traceId"] == trace_id and "tool" in s["name"]))
    (turn,) = session_turns(f"otlp-{trace_id}")
    assert turn.status == "running"  # no root yet
    _land(poster, _subset(AGENT, lambda s: s["traceId"] == trace_id and "tool" not in s["name"]))
    _assert_tool_failure(models.Turn.objects.get(pk=turn.id))
    _assert_no_secret()


# --- without content ---------------------------------------------------------------------


def test_autogen_without_content_lands_calls_results_usage_and_failures(
    poster: OtlpPoster,
) -> None:
    _land_fixture(poster, NO_CONTENT)
    paris_id, rome_id, atlantis_id, mars_id = _run_sessions(NO_CONTENT)
    assert models.Session.objects.count() == 4
    for session_id, call_id, tokens in ((paris_id, PARIS, (20, 40)), (rome_id, ROME, (60, 80))):
        session = models.Session.objects.get(pk=session_id)
        assert session.state["otlp"] == {"content_captured": False}
        assert (session.title, session.model) == ("", MODEL)
        (turn,) = session_turns(session_id)
        assert turn.status == "completed"
        assert "message content was not captured" in turn.status_note
        # The model's calls as usage alone, the tool's call and result from its span.
        assert _rows(turn) == [
            ("assistant", "", [], ""),
            ("assistant", "", [call_id], ""),
            ("tool", "", [], call_id),
            ("assistant", "", [], ""),
        ]
        result = _event(turn, role="tool").tool_response
        assert result == {"tool_call_id": call_id, "name": "get_weather",
                          "result": {"content_captured": False}}  # fmt: skip
        assert _usages(turn) == [(tokens[0], 7, MODEL), (tokens[1], 7, MODEL)]
    (failing,) = session_turns(atlantis_id)
    assert failing.status == "completed"
    errors = [e.tool_response for e in models.Event.objects.filter(turn_id=failing.id, role="tool")]
    assert errors == [{"tool_call_id": ATLANTIS, "name": "get_weather", "error": "ConnectionError"}]
    (broken,) = session_turns(mars_id)
    assert (broken.status, broken.failure_code, broken.failure_stage) == (
        "failed",
        "openai.internal_server_error",
        "provider",
    )
    _assert_no_secret()


# --- a team: the agent runtime's spans ---------------------------------------------------


def test_autogen_team_lands_only_the_agent_runs(poster: OtlpPoster) -> None:
    _land_fixture(poster, TEAM)
    spans = _spans(TEAM)
    runs = _runs(TEAM)
    # Each run's trace has the runtime's publish span as its root.
    roots = {s["traceId"]: s for s in spans if not s.get("parentSpanId")}
    assert [roots[run["traceId"]]["name"].split(" ", 2)[:2] for run in runs] == [
        ["autogen", "publish"]
    ] * 4
    # The runtime's other traces (messages between the team's manager and its agent)
    # and the agents' creation make no session, but are kept.
    sessions = _run_sessions(TEAM)
    assert set(models.Session.objects.values_list("id", flat=True)) == set(sessions)
    assert len({s["traceId"] for s in spans}) > 30
    assert OtlpSpan.objects.count() == len(spans)
    assert OtlpSpan.objects.filter(session_id="").count() == len(
        [s for s in spans if s["traceId"] not in {run["traceId"] for run in runs}]
    )
    (paris,), (rome,), (atlantis,), (mars,) = (session_turns(s) for s in sessions)
    _assert_conversation_runs(paris, rome)
    _assert_tool_failure(atlantis)
    _assert_model_failure(mars)  # under an OK publish root: the run's span failed
    _assert_no_secret()


def test_autogen_team_turn_is_the_agent_run_not_the_runtime_root(poster: OtlpPoster) -> None:
    _land_fixture(poster, TEAM)
    spans = _spans(TEAM)
    for run, session_id in zip(_runs(TEAM), _run_sessions(TEAM), strict=True):
        root = next(
            s for s in spans if s["traceId"] == run["traceId"] and not s.get("parentSpanId")
        )
        (turn,) = session_turns(session_id)
        assert turn.finished_at is not None  # the run's end, not its root's
        assert int(turn.finished_at.timestamp() * 1e6) == int(run["endTimeUnixNano"]) // 1000
        assert int(root["endTimeUnixNano"]) > int(run["endTimeUnixNano"])
        assert root.get("status", {}).get("code", 0) == 0  # unset, also when the run failed
    *_, mars = _run_sessions(TEAM)
    assert session_turns(mars)[0].status == "failed"  # the run's span failed


def test_autogen_team_runtime_message_copies_are_not_kept(poster: OtlpPoster) -> None:
    _land_fixture(poster, TEAM)
    runtime = [s for s in _spans(TEAM) if "message" in s["attrs"]]
    assert runtime and all(s["name"].startswith("autogen ") for s in runtime)
    assert any(SECRET in s["attrs"]["message"] for s in runtime)  # as AutoGen sent them
    kept = OtlpSpan.objects.filter(span_id__in=[s["spanId"] for s in runtime])
    assert kept.count() == len(runtime)
    assert not [s.span_id for s in kept if "message" in s.attributes]
    assert all("messaging.destination" in s.attributes for s in kept)
    _assert_no_secret()


def test_autogen_team_run_lands_when_its_runtime_spans_came_first(poster: OtlpPoster) -> None:
    """The runtime's spans of a run's trace may arrive before the run's (its ``create``
    spans end while the agent runs): kept without a session, they take the run's session
    and turn when the run's spans come."""
    trace_id = _runs(TEAM)[0]["traceId"]
    runtime = {s["spanId"] for s in _spans(TEAM) if s["name"].startswith("autogen ")}
    _land(poster, _subset(TEAM, lambda s: s["traceId"] == trace_id and s["spanId"] in runtime))
    assert not models.Session.objects.exists()
    assert set(OtlpSpan.objects.values_list("session_id", "turn_id")) == {("", "")}
    _land(poster, _subset(TEAM, lambda s: s["traceId"] == trace_id and s["spanId"] not in runtime))
    (paris,) = session_turns(f"otlp-{trace_id}")
    assert paris.status == "completed"
    assert _rows(paris) == _expected("Weather in Paris?", PARIS, "It is sunny in Paris.")
    assert set(OtlpSpan.objects.values_list("session_id", "turn_id")) == {
        (paris.session_id, paris.id)
    }


# --- a team, each run in the application's span naming the conversation -----------------


def test_autogen_runs_in_a_conversation_span_share_its_session(poster: OtlpPoster) -> None:
    _land_fixture(poster, CONVERSATION)
    runs = _runs(CONVERSATION)
    assert set(models.Session.objects.values_list("id", flat=True)) == {
        "agc-s1", "agc-fail", "agc-broken"
    }  # fmt: skip
    session = models.Session.objects.get(pk="agc-s1")
    assert (session.title, session.model) == ("Weather in Paris?", MODEL)
    assert (session.tokens_input, session.tokens_output) == (20 + 40 + 60 + 80, 4 * 7)
    paris, rome = session_turns("agc-s1")  # one turn per run (per trace)
    assert (paris.id, rome.id) == (f"agc-s1/{runs[0]['traceId']}", f"agc-s1/{runs[1]['traceId']}")
    _assert_conversation_runs(paris, rome, shared=True)
    (atlantis,) = session_turns("agc-fail")
    _assert_tool_failure(atlantis)
    (mars,) = session_turns("agc-broken")
    _assert_model_failure(mars)
    for session_id in ("agc-s1", "agc-fail"):
        row = models.Session.objects.get(pk=session_id)
        assert (row.protocol_issue_count, row.orphan_result_count) == (0, 0)
    _assert_no_secret()


# --- the messages in log records (EVENT_ONLY) --------------------------------------------


@pytest.mark.parametrize("logs_first", [False, True])
def test_autogen_messages_in_log_records_and_the_failed_tools_text_not_kept(
    poster: OtlpPoster, logs_first: bool
) -> None:
    """The log records of the model calls fill the spans' turns; the failed tool's text
    they hand the model is kept as its error, also when they come before the tool's span
    (the exporters of logs and spans send apart): the records kept are rewritten then."""
    logs = _document(EVENT_LOGS)
    assert SECRET in json.dumps(logs)  # as the instrumentation sent it
    if logs_first:
        _land(poster, logs, "/v1/logs")
        assert SECRET in database_text()  # no tool span yet: nothing says it failed
    _land_fixture(poster, EVENT_SPANS)
    if not logs_first:
        _land(poster, logs, "/v1/logs")
    paris_id, rome_id, atlantis_id, mars_id = _run_sessions(EVENT_SPANS)
    assert models.Session.objects.count() == 4
    (paris,), (rome,) = session_turns(paris_id), session_turns(rome_id)
    _assert_conversation_runs(paris, rome)
    (atlantis,) = session_turns(atlantis_id)
    _assert_tool_failure(atlantis)
    (mars,) = session_turns(mars_id)
    _assert_model_failure(mars)
    _assert_no_secret()
