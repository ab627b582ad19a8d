"""A real producer: the Langfuse Python SDK 3.15.0's own spans, captured from an agent loop
written with the SDK (a fake OpenAI Chat Completions server on localhost, one
``get_weather`` tool) and replayed from ``tests/otlp/fixtures/langfuse_3.15.0_*spans.json``
(how they were made: ``tests/otlp/fixtures/README.md``), as Langfuse's exporter sends
them: OTLP/HTTP protobuf to ``/api/public/otel/v1/traces`` with HTTP Basic auth (the
public key as the user, the dashboard's key as the secret).

Each fixture holds, for its prefix ``<p>``: session ``<p>-s1`` with the two weather runs
of `weather_runs` ("Weather in Paris?" through the tool, "And in Rome?" without it; the
system prompt "Answer in one line."), session ``<p>-fail`` whose tool raises
``ConnectionError(SECRET)`` and whose run raises with it, and session ``<p>-down`` whose
model server answers 500 (its body's message `MODEL_SECRET`: the client raises, and the
run with it):

- ``langfuse_3.15.0_spans.json`` (``lf-``): ``@observe(as_type="agent")`` and
  ``@observe(as_type="tool")`` functions, the model called through the OpenAI drop-in
  (``from langfuse.openai import openai``: one ``generation`` per call, its input the
  request's messages and tools, its output the assistant's message, its usage the
  response's), the session and user named with ``propagate_attributes``; the failed
  observations have level ``ERROR`` and the exception's message as status message (no
  exception event);
- ``langfuse_3.15.0_manual_spans.json`` (``lfm-``): ``start_as_current_observation``
  (an ``agent``, a ``tool``) and ``start_as_current_generation`` around a plain OpenAI
  client, the input, output, model and ``usage_details`` (``input`` / ``output``) set
  by hand, the session and user with ``update_current_trace`` (on the root alone); the
  failed spans have OpenTelemetry's exception event and status ERROR;
- ``langfuse_3.15.0_nocontent_spans.json`` (``lfnc-``): the first style with the client
  made with ``mask=`` a function returning None: no input, output or metadata is sent (the
  generations' model and usage are).
"""

from __future__ import annotations

import base64
import json

import pytest

from sessions_app import models
from sessions_app.otlp.decode import decode_request
from sessions_app.otlp.langfuse import langfuse_attributes
from sessions_app.otlp.models import OtlpSpan
from tests.otlp.captured import FIXTURES, fixture_spans, session_turns
from tests.otlp.conftest import OtlpPoster
from tests.otlp.weather_runs import (
    MODEL,
    SYSTEM,
    assert_two_weather_runs,
    outcome,
    tokens_of,
    turn_rows,
)
from tests.test_redaction_shapes import database_text

APP = "langfuse-weather"
SECRET = "the-langfuse-tool-exception-text-w8"
MODEL_SECRET = "the-langfuse-model-error-text-m5"
#: Each fixture's session prefix and the failure codes of its failed tool and model: the
#: exception's class where the spans name it (OpenTelemetry's exception event), else
#: `agent_error`.
RUNS = {
    "langfuse_3.15.0_spans.json": ("lf", "agent_error", "agent_error"),
    "langfuse_3.15.0_manual_spans.json": (
        "lfm",
        "connection_error",
        "openai.internal_server_error",
    ),
}
NO_CONTENT = "langfuse_3.15.0_nocontent_spans.json"


def _turn_ids(fixture: str, session_id: str) -> list[str]:
    """The turns of `session_id` as expected: one per run (its root observation's trace;
    Langfuse names no turn), in run order."""
    spans = fixture_spans(fixture)
    roots = [s for s in spans if not s.get("parentSpanId")]
    assert {s["attrs"]["langfuse.observation.type"] for s in roots} == {"agent"}
    return [f"{session_id}/{s['traceId']}" for s in roots if s["attrs"]["session.id"] == session_id]


def _land(poster: OtlpPoster, fixture: str) -> None:
    """The fixture posted as Langfuse's exporter posts it: protobuf, HTTP Basic auth."""
    body = decode_request((FIXTURES / fixture).read_bytes(), "application/json")
    basic = base64.b64encode(f"pk-lf-local:{poster.key}".encode()).decode()
    response = poster.post(
        body.SerializeToString(),
        path="/api/public/otel/v1/traces",
        Authorization=f"Basic {basic}",
    )
    assert response.status_code == 200, response.content
    assert response.content == b""  # an empty ExportTraceServiceResponse: every span kept


@pytest.mark.parametrize("fixture", RUNS)
def test_langfuse_runs_land_as_the_two_weather_turns(poster: OtlpPoster, fixture: str) -> None:
    _land(poster, fixture)
    session_id = f"{RUNS[fixture][0]}-s1"
    # Each run its own turn; the user prompt, the system prompt, the model's call paired
    # with the tool observation (which names no call id) and its result, the answers,
    # each generation's usage and model; the second run's history is not stored again.
    assert_two_weather_runs(session_id, APP)
    assert [t.id for t in session_turns(session_id)] == _turn_ids(fixture, session_id)
    session = models.Session.objects.get(pk=session_id)
    assert session.user_id == "user-7"
    assert session.state["otlp"] == {"content_captured": True}
    assert (session.tokens_input, session.tokens_output) == (12 + 30 + 41, 5 + 7 + 6)
    assert (session.orphan_result_count, session.cannot_resume) == (0, False)
    # The tool's call and its result are stored once each (the tool observation's and
    # the messages' are one call).
    tools = models.Event.objects.filter(session=session, role="tool")
    assert [(e.tool_response or {}).get("tool_call_id") for e in tools] == ["call_paris"]


@pytest.mark.parametrize("fixture", RUNS)
def test_langfuse_failing_tool_fails_the_turn_at_the_tool(poster: OtlpPoster, fixture: str) -> None:
    _land(poster, fixture)
    prefix, code, _ = RUNS[fixture]
    session_id = f"{prefix}-fail"
    (turn,) = session_turns(session_id)
    assert turn.id == _turn_ids(fixture, session_id)[0]
    assert outcome(turn) == ("failed", "agent_error", code, "tool", "")
    assert turn_rows(turn) == [
        ("system", SYSTEM, [], ""),
        ("user", "Weather in Atlantis?", [], ""),
        ("assistant", "", ["call_atlantis"], ""),
        ("tool", "", [], "call_atlantis"),
    ]
    call = models.Event.objects.get(turn_id=turn.id, role="assistant", text="")
    assert call.tool_calls == [
        {"id": "call_atlantis", "name": "get_weather", "arguments": {"city": "Atlantis"}}
    ]
    assert call.usage is not None and tokens_of(call) == (12, 5)
    assert call.usage["details"]["model"] == MODEL
    error = "ConnectionError" if code == "connection_error" else "error"
    assert models.Event.objects.get(turn_id=turn.id, role="tool").tool_response == {
        "tool_call_id": "call_atlantis",
        "name": "get_weather",
        "error": error,  # the exception's class where the spans name it, never its message
    }
    assert models.Session.objects.get(pk=session_id).protocol_issue_count == 0
    assert SECRET not in database_text()


@pytest.mark.parametrize("fixture", RUNS)
def test_langfuse_failing_model_fails_the_turn_at_the_provider(
    poster: OtlpPoster, fixture: str
) -> None:
    _land(poster, fixture)
    prefix, _, code = RUNS[fixture]
    session_id = f"{prefix}-down"
    (turn,) = session_turns(session_id)
    assert turn.id == _turn_ids(fixture, session_id)[0]
    # The generation failed (level ERROR, the server's message as its status message):
    # stage provider, the client's exception class where the span names it.
    assert outcome(turn) == ("failed", "agent_error", code, "provider", "")
    assert turn_rows(turn) == [("system", SYSTEM, [], ""), ("user", "Is the model down?", [], "")]
    assert models.Event.objects.filter(session_id=session_id, usage__isnull=False).count() == 0
    assert MODEL_SECRET not in database_text()


def test_langfuse_kept_spans_hold_no_error_text_level_or_whole_history(
    poster: OtlpPoster,
) -> None:
    for fixture in RUNS:
        _land(poster, fixture)
    # The status message (the exception's message), the level, the exception events and
    # status descriptions: none kept.
    text = database_text()
    assert (SECRET in text, MODEL_SECRET in text, "Error code" in text) == (False, False, False)
    kept = [span.attributes for span in OtlpSpan.objects.all()]
    assert len(kept) == 2 * 11
    assert not any(k.startswith("langfuse.observation.level") for a in kept for k in a)
    assert not any(k.startswith("langfuse.observation.status_message") for a in kept for k in a)
    # A generation's input (the whole conversation, with the drop-in's tool definitions)
    # is kept as GenAI messages after the last assistant message only.
    generations = [a for a in kept if a["langfuse.observation.type"] == "generation"]
    assert len(generations) == 2 * 5
    for attributes in generations:
        assert "langfuse.observation.input" not in attributes
        inputs = json.loads(attributes["gen_ai.input.messages"])
        assert [m["role"] for m in inputs if m["role"] == "assistant"] == []


# --- without content (a mask dropping every input and output) ----------------------------


def test_langfuse_without_content_lands_calls_results_usage_and_failure(
    poster: OtlpPoster,
) -> None:
    _land(poster, NO_CONTENT)
    session = models.Session.objects.get(pk="lfnc-s1")
    assert (session.app_name, session.user_id, session.title, session.model) == (
        APP,
        "user-7",
        "",
        MODEL,
    )
    assert session.state["otlp"] == {"content_captured": False}
    turns = session_turns(session.id)
    assert [t.id for t in turns] == _turn_ids(NO_CONTENT, session.id)
    for turn in turns:
        assert turn.status == "completed"
        assert "message content was not captured" in turn.status_note
    # The tool observation's call (no call id: its span's) and its result (not
    # captured), each generation's usage alone.
    tool_span = next(
        s for s in fixture_spans(NO_CONTENT) if s["attrs"]["langfuse.observation.type"] == "tool"
    )
    call_id = f"span-{tool_span['spanId']}"
    events = models.Event.objects.filter(turn_id=turns[0].id, usage__isnull=True)
    call, result = events.order_by("id")
    assert call.tool_calls == [{"id": call_id, "name": "get_weather", "arguments": {}}]
    assert result.tool_response == {
        "tool_call_id": call_id,
        "name": "get_weather",
        "result": {"content_captured": False},
    }
    assert turn_rows(turns[0]) == [
        ("assistant", "", [], ""),
        ("assistant", "", [call_id], ""),
        ("tool", "", [], call_id),
        ("assistant", "", [], ""),
    ]
    assert turn_rows(turns[1]) == [("assistant", "", [], "")]
    used = models.Event.objects.filter(session=session, usage__isnull=False).order_by("id")
    assert [tokens_of(e) for e in used] == [(12, 5), (30, 7), (41, 6)]
    assert {(e.usage or {})["details"]["model"] for e in used} == {MODEL}
    assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)
    (failed,) = session_turns("lfnc-fail")
    assert outcome(failed) == ("failed", "agent_error", "agent_error", "tool", "")
    error = models.Event.objects.get(turn_id=failed.id, role="tool").tool_response or {}
    assert (error["name"], error["error"]) == ("get_weather", "error")
    (down,) = session_turns("lfnc-down")
    assert outcome(down) == ("failed", "agent_error", "agent_error", "provider", "")
    text = database_text()
    assert (SECRET in text, MODEL_SECRET in text) == (False, False)


# --- shapes the runs do not hold -------------------------------------------------------


def test_langfuse_attributes_leave_other_spans_alone() -> None:
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[]"}
    assert langfuse_attributes(attributes, 0) is attributes


def test_langfuse_attributes_read_other_inputs_outputs_and_usage_names() -> None:
    answer = {"role": "assistant", "content": [{"type": "text", "text": "Sunny."}]}
    usage = {"input_tokens": 3, "output_tokens": 2, "prompt_tokens_details": {"cached_tokens": 1}}
    kept = langfuse_attributes(
        {
            "langfuse.observation.type": "generation",
            "langfuse.observation.input": "What is the weather?",  # a prompt's text
            "langfuse.observation.output": json.dumps({"choices": [{"message": answer}]}),
            "langfuse.observation.usage_details": json.dumps(usage),
            "langfuse.user.id": "u-1",  # other releases' name for the user
            "langfuse.observation.level": "WARNING",
        },
        1,
    )
    assert json.loads(kept["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "What is the weather?"}]}
    ]
    assert json.loads(kept["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}]}
    ]
    assert (
        kept["gen_ai.usage.input_tokens"],
        kept["gen_ai.usage.output_tokens"],
        kept["gen_ai.usage.cache_read.input_tokens"],
    ) == (3, 2, 1)
    assert (kept["user.id"], "langfuse.observation.level" in kept) == ("u-1", False)


def test_langfuse_generation_input_developer_message_is_the_system_prompt() -> None:
    messages = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
    ]
    kept = langfuse_attributes(
        {
            "langfuse.observation.type": "generation",
            "langfuse.observation.input": json.dumps({"messages": messages, "tools": []}),
        },
        1,
    )
    assert json.loads(kept["gen_ai.input.messages"]) == [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Weather?"}]},
    ]
    assert "langfuse.observation.input" not in kept


def test_langfuse_generation_input_that_is_no_messages_is_kept_as_sent() -> None:
    attributes = {
        "langfuse.observation.type": "generation",
        "langfuse.observation.input": json.dumps({"question": "Paris?"}),
    }
    kept = langfuse_attributes(attributes, 1)
    assert "gen_ai.input.messages" not in kept
    assert kept["langfuse.observation.input"] == attributes["langfuse.observation.input"]


def test_langfuse_failed_tool_output_is_not_kept() -> None:
    kept = langfuse_attributes(
        {
            "langfuse.observation.type": "tool",
            "langfuse.observation.input": json.dumps({"args": ["Paris"], "kwargs": {}}),
            "langfuse.observation.output": "failed: " + SECRET,
            "langfuse.observation.status_message": SECRET,
        },
        2,
    )
    assert kept == {
        "langfuse.observation.type": "tool",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.call.arguments": json.dumps({"args": ["Paris"], "kwargs": {}}),
    }
