"""A real producer: Google ADK 2.13.0's own spans, captured from a real ``LlmAgent`` run
offline (a fake ``BaseLlm``, one ``get_weather`` tool) and replayed from
``tests/otlp/fixtures/adk_2.13.0_*spans.json`` (how they were made:
``tests/otlp/fixtures/README.md``).

Each fixture holds two turns of session ``<p>-s1`` ("Weather in Paris?", "And in Rome?":
user message, the model's function call, the tool's response, the model's answer) and one
turn of session ``<p>-fail`` whose tool raises ``ConnectionError(SECRET)``:

- ``adk_2.13.0_spans.json`` (``adk-``): ADK's default telemetry schema (v2, GenAI-semconv
  aligned: ``invoke_workflow`` > ``invoke_agent`` > ``generate_content`` /
  ``execute_tool``) with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``
  (``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.system_instructions``,
  ``gen_ai.tool.call.arguments`` / ``result``);
- ``adk_2.13.0_schema1_spans.json`` (``adk1-``): the legacy schema
  (``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``: ``invocation`` > ``invoke_agent`` >
  ``call_llm`` (> ``generate_content``) / ``execute_tool``, content in
  ``gcp.vertex.agent.llm_request`` / ``llm_response`` / ``tool_call_args`` /
  ``tool_response``, on by default);
- ``adk_2.13.0_nocontent_spans.json`` (``adknc-``): the default schema with no content
  variable set (ADK 2.x's default: no message content on spans).

Each test asserts what an expert expects of the run: each call once under ADK's own id
and answered by its result (or its error), the system prompt, the tool's arguments and
result in the legacy schema, every model call's usage (with content off too), and the
failing tool's stage.
"""

from __future__ import annotations

import json
from typing import Any

from sessions_app import models
from tests.otlp.captured import fixture_spans, land_fixture, session_turns
from tests.otlp.conftest import OtlpPoster
from tests.otlp.rows import EventRow, event_rows
from tests.test_redaction_shapes import database_text

SCHEMA2 = "adk_2.13.0_spans.json"
SCHEMA1 = "adk_2.13.0_schema1_spans.json"
NO_CONTENT = "adk_2.13.0_nocontent_spans.json"
SECRET = "the-adk-tool-exception-text-zk41"
SYSTEM = (
    "Answer weather questions in one line.\n\nYou are an agent. Your internal name is "
    '"weather_agent". The description about you is "Tells the weather.".'
)
PARIS = 'The weather: {"city": "Paris", "sky": "sunny"}'
ROME = 'The weather: {"city": "Rome", "sky": "sunny"}'


def _invocations(fixture: str) -> list[str]:
    """ADK's invocation ids (``gcp.vertex.agent.invocation_id``), in run order."""
    found = [s["attrs"].get("gcp.vertex.agent.invocation_id") for s in fixture_spans(fixture)]
    return list(dict.fromkeys(i for i in found if i))


def _adk_call_ids(fixture: str) -> list[str]:
    """The call ids ADK gave its tool calls (``gen_ai.tool.call.id`` of ``execute_tool``)."""
    spans = fixture_spans(fixture)
    ids = [s["attrs"]["gen_ai.tool.call.id"] for s in spans if s["name"].startswith("execute_")]
    assert [i.startswith("adk-") for i in ids] == [True, True, False]  # the failed: no id
    return ids[:2]


def _rows(turn: models.Turn) -> list[EventRow]:
    return event_rows(turn_id=turn.id)


def _event(turn: models.Turn, **lookup: Any) -> models.Event:
    return models.Event.objects.filter(turn_id=turn.id, **lookup).get()


def _calling(turn: models.Turn, call_id: str) -> models.Event:
    """The one event of `turn` calling `call_id`."""
    events = models.Event.objects.filter(turn_id=turn.id, role="assistant")
    found = [e for e in events if call_id in [c["id"] for c in e.tool_calls]]
    assert len(found) == 1, [e.tool_calls for e in events]
    return found[0]


def _answering(turn: models.Turn, call_id: str) -> models.Event:
    """The one tool result of `turn` answering `call_id`."""
    events = models.Event.objects.filter(turn_id=turn.id, role="tool")
    found = [e for e in events if (e.tool_response or {}).get("tool_call_id") == call_id]
    assert len(found) == 1, [e.tool_response for e in events]
    return found[0]


def _usage(event: models.Event) -> tuple[int, int, str]:
    usage = event.usage or {}
    return usage["prompt_tokens"], usage["completion_tokens"], usage["details"]["model"]


# --- schema v2 (ADK's default), content on spans -----------------------------------------


def test_adk_default_schema_lands_sessions_turns_messages_and_failure(
    poster: OtlpPoster,
) -> None:
    land_fixture(poster, SCHEMA2)
    first, second, failing = _invocations(SCHEMA2)
    paris, rome = _adk_call_ids(SCHEMA2)

    session = models.Session.objects.get(pk="adk-s1")  # gen_ai.conversation.id
    assert (session.app_name, session.title, session.model) == (
        "adk-weather",
        "Weather in Paris?",
        "fake-llm-1",
    )
    assert session.state["otlp"] == {"content_captured": True}
    assert (session.tokens_input, session.tokens_output) == (10 + 30 + 50 + 70, 4 * 7)
    turns = session_turns("adk-s1")  # one per invocation
    assert [(t.id, t.status) for t in turns] == [
        (f"adk-s1/{first}", "completed"),
        (f"adk-s1/{second}", "completed"),
    ]
    for turn, city, call_id, answer, tokens in (
        (turns[0], "Paris", paris, PARIS, (10, 30)),
        (turns[1], "Rome", rome, ROME, (50, 70)),
    ):
        rows = _rows(turn)
        # The second turn's history (the first turn, resent to the model) is not stored again.
        texts = [(role, text) for role, text, calls, answered in rows if text]
        question = "Weather in Paris?" if city == "Paris" else "And in Rome?"
        system = [("system", SYSTEM)] if city == "Paris" else []  # stored once a session
        assert texts == [*system, ("user", question), ("assistant", answer)]
        # The tool ran under ADK's call id, with its arguments, and its result answers it.
        call = _calling(turn, call_id)
        assert call.tool_calls[0]["name"] == "get_weather"
        assert call.tool_calls[0]["arguments"] == {"city": city}
        result = _answering(turn, call_id)
        assert "sunny" in json.dumps(result.tool_response)
        final = _event(turn, text=answer)
        assert rows.index(("user", question, [], "")) < rows.index(("assistant", "", [call_id], ""))
        assert rows.index(("tool", "", [], call_id)) < rows.index(("assistant", answer, [], ""))
        assert final.author == "weather_agent"  # gen_ai.agent.name
        assert _usage(final) == (tokens[1], 7, "fake-llm-1")
        events = models.Event.objects.filter(turn_id=turn.id).order_by("id")
        first_call = next(e for e in events if e.usage)
        assert _usage(first_call) == (tokens[0], 7, "fake-llm-1")

    failed = session_turns("adk-fail")
    assert [(t.id, t.status, t.reason, t.failure_code, t.failure_stage) for t in failed] == [
        (f"adk-fail/{failing}", "failed", "agent_error", "connection_error", "tool")
    ]
    assert failed[0].failure_message == ""
    rows = _rows(failed[0])
    assert rows[:2] == [("system", SYSTEM, [], ""), ("user", "Weather in Atlantis?", [], "")]
    errors = [e.tool_response for e in models.Event.objects.filter(turn_id=failed[0].id)]
    assert {"name": "get_weather", "error": "ConnectionError"}.items() <= next(
        r for r in errors if r
    ).items()
    # The exception's message (exception events, status descriptions) is stored nowhere.
    assert SECRET not in database_text()


def test_adk_default_schema_each_call_lands_once_under_adks_id(poster: OtlpPoster) -> None:
    land_fixture(poster, SCHEMA2)
    paris, rome = _adk_call_ids(SCHEMA2)
    turns = session_turns("adk-s1")
    assert _rows(turns[0]) == [
        ("system", SYSTEM, [], ""),
        ("user", "Weather in Paris?", [], ""),
        ("assistant", "", [paris], ""),
        ("tool", "", [], paris),
        ("assistant", PARIS, [], ""),
    ]
    assert _rows(turns[1]) == [  # the same system prompt is not stored again
        ("user", "And in Rome?", [], ""),
        ("assistant", "", [rome], ""),
        ("tool", "", [], rome),
        ("assistant", ROME, [], ""),
    ]
    session = models.Session.objects.get(pk="adk-s1")
    assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)
    assert not session.cannot_resume


def test_adk_failed_tool_call_is_answered_by_its_error(poster: OtlpPoster) -> None:
    land_fixture(poster, SCHEMA2)
    (failed,) = session_turns("adk-fail")
    rows = _rows(failed)
    calls = [calls for _, _, calls, _ in rows if calls]
    assert len(calls) == 1 and len(calls[0]) == 1, rows
    assert "<not specified>" not in calls[0]
    error = _answering(failed, calls[0][0])
    assert (error.tool_response or {})["error"] == "ConnectionError"
    assert models.Session.objects.get(pk="adk-fail").protocol_issue_count == 0


# --- the legacy schema (ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1) ---------------------------


def test_adk_legacy_schema_lands_sessions_turns_messages_and_failure(
    poster: OtlpPoster,
) -> None:
    land_fixture(poster, SCHEMA1)
    first, second, failing = _invocations(SCHEMA1)
    paris, rome = _adk_call_ids(SCHEMA1)
    session = models.Session.objects.get(pk="adk1-s1")  # gcp.vertex.agent.session_id
    assert (session.title, session.model) == ("Weather in Paris?", "fake-llm-1")
    turns = session_turns("adk1-s1")
    assert [(t.id, t.status) for t in turns] == [
        (f"adk1-s1/{first}", "completed"),
        (f"adk1-s1/{second}", "completed"),
    ]
    for turn, question, call_id, answer, tokens in (
        (turns[0], "Weather in Paris?", paris, PARIS, 30),
        (turns[1], "And in Rome?", rome, ROME, 70),
    ):
        rows = _rows(turn)
        texts = [(role, text) for role, text, _, _ in rows if text and role != "system"]
        assert texts == [("user", question), ("assistant", answer)]
        assert ("assistant", "", [call_id], "") in rows  # the execute_tool span's call
        _answering(turn, call_id)
        assert _usage(_event(turn, text=answer)) == (tokens, 7, "fake-llm-1")
    (failed,) = session_turns("adk1-fail")
    assert (failed.id, failed.status, failed.failure_code) == (
        f"adk1-fail/{failing}",
        "failed",
        "connection_error",
    )
    assert SECRET not in database_text()


def test_adk_legacy_schema_system_prompt(poster: OtlpPoster) -> None:
    land_fixture(poster, SCHEMA1)
    first, second = session_turns("adk1-s1")
    assert _rows(first)[0] == ("system", SYSTEM, [], "")
    assert "system" not in [row[0] for row in _rows(second)]  # the same: stored once


def test_adk_legacy_schema_tool_arguments_and_result(poster: OtlpPoster) -> None:
    land_fixture(poster, SCHEMA1)
    paris, _ = _adk_call_ids(SCHEMA1)
    turn = session_turns("adk1-s1")[0]
    call = _calling(turn, paris)
    assert call.tool_calls[0]["arguments"] == {"city": "Paris"}
    result = _answering(turn, paris)  # the attribute as received, as gen_ai.tool.call.result's
    assert (result.tool_response or {})["result"] == '{"city": "Paris", "sky": "sunny"}'


def test_adk_legacy_schema_no_orphan_results(poster: OtlpPoster) -> None:
    land_fixture(poster, SCHEMA1)
    paris, rome = _adk_call_ids(SCHEMA1)
    for turn, call_id in zip(session_turns("adk1-s1"), (paris, rome), strict=True):
        assert [answered for role, _, _, answered in _rows(turn) if role == "tool"] == [call_id]
    assert models.Session.objects.get(pk="adk1-s1").orphan_result_count == 0


def test_adk_legacy_schema_counts_every_model_calls_usage(poster: OtlpPoster) -> None:
    land_fixture(poster, SCHEMA1)
    session = models.Session.objects.get(pk="adk1-s1")
    assert (session.tokens_input, session.tokens_output) == (10 + 30 + 50 + 70, 4 * 7)


def test_adk_legacy_schema_tool_failure_stage(poster: OtlpPoster) -> None:
    land_fixture(poster, SCHEMA1)
    (failed,) = session_turns("adk1-fail")
    assert (failed.failure_code, failed.failure_stage) == ("connection_error", "tool")


# --- schema v2 without content (ADK 2.x's default settings) ------------------------------


def test_adk_without_content_lands_calls_results_and_failure(poster: OtlpPoster) -> None:
    land_fixture(poster, NO_CONTENT)
    first, second, failing = _invocations(NO_CONTENT)
    paris, rome = _adk_call_ids(NO_CONTENT)
    session = models.Session.objects.get(pk="adknc-s1")
    assert session.state["otlp"] == {"content_captured": False}
    assert session.model == "fake-llm-1"
    turns = session_turns("adknc-s1")
    assert [t.id for t in turns] == [f"adknc-s1/{first}", f"adknc-s1/{second}"]
    for turn, call_id in ((turns[0], paris), (turns[1], rome)):
        assert "message content was not captured" in turn.status_note
        assert ("assistant", "", [call_id], "") in _rows(turn)
        result = _answering(turn, call_id)
        assert (result.tool_response or {})["result"] == {"content_captured": False}
    (failed,) = session_turns("adknc-fail")
    assert (failed.id, failed.status, failed.failure_code, failed.failure_stage) == (
        f"adknc-fail/{failing}",
        "failed",
        "connection_error",
        "tool",
    )
    assert SECRET not in database_text()


def test_adk_without_content_keeps_usage(poster: OtlpPoster) -> None:
    land_fixture(poster, NO_CONTENT)
    session = models.Session.objects.get(pk="adknc-s1")
    assert (session.tokens_input, session.tokens_output) == (10 + 30 + 50 + 70, 4 * 7)
    for turn in session_turns("adknc-s1"):
        usages = [e.usage for e in models.Event.objects.filter(turn_id=turn.id) if e.usage]
        assert [u["details"]["model"] for u in usages] == ["fake-llm-1"] * 2
