"""A real producer: the Vercel AI SDK's own spans (npm ``ai``), captured from real
``generateText`` runs offline (the SDK's mock model, a real ``get_weather`` tool) and
replayed from ``tests/otlp/fixtures/vercel_ai_*_spans.json`` (how they were made:
``tests/otlp/fixtures/README.md``).

Each fixture holds, with ``telemetry.metadata`` (AI SDK 4 to 6) or the runtime context
(AI SDK 7) naming the session and user ``u1``:

- session ``<p>-s1``: the two weather runs of `tests.otlp.weather_runs` ("Weather in
  Paris?" through the tool, then "And in Rome?" with the first run passed as history);
- session ``<p>-fail``: "Weather in Atlantis?", whose tool raises ``Error(SECRET)``: from AI
  SDK 5 on, the SDK hands the error to the model as a ``tool-error`` (its message in the
  next model call's ``ai.prompt.messages``) and the run goes on to the model's answer; AI
  SDK 4's ``generateText`` throws (``AI_ToolExecutionError``);
- session ``<p>-down``: the model raises the SDK's ``APICallError(DOWN)`` (a provider's
  503): ``generateText`` throws.

Fixtures: ``vercel_ai_6.0.333_spans.json`` (``vercel6``), the same runs with
``recordInputs`` / ``recordOutputs`` false (``vercel_ai_6.0.333_nocontent_spans.json``,
``vercel6nc``), AI SDK 5 (``vercel_ai_5.0.277_spans.json``, ``vercel5``: usage as
``ai.usage.promptTokens``) and AI SDK 7 through ``@ai-sdk/otel``'s ``LegacyOpenTelemetry``
(``vercel_ai_7.0.173_legacy_spans.json``, ``vercel7l``: the session in
``ai.settings.context.sessionId``, each tool span a child of its model span, which ends
after it), the same runs through ``streamText`` (``vercel_ai_6.0.333_stream_spans.json``,
``vercel6s``: ``ai.streamText`` > ``ai.streamText.doStream`` > ``ai.toolCall``, the tool
run while its model call streams), AI SDK 4 (``vercel_ai_4.3.19_spans.json``,
``vercel4``: ``args`` and ``result`` for the calls' input and output).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sessions_app import models
from sessions_app.otlp import log_mapping, vercel_ai
from sessions_app.otlp.decode import JSON, SpanRecord, decode_request, spans_of
from sessions_app.otlp.models import OtlpSpan
from tests.otlp.captured import FIXTURES, fixture_spans, land_fixture, session_turns
from tests.otlp.conftest import OtlpPoster
from tests.otlp.rows import event_rows
from tests.otlp.weather_runs import MODEL, SYSTEM, assert_two_weather_runs
from tests.test_redaction_shapes import database_text

V6 = "vercel_ai_6.0.333_spans.json"
NO_CONTENT = "vercel_ai_6.0.333_nocontent_spans.json"
V5 = "vercel_ai_5.0.277_spans.json"
V7_LEGACY = "vercel_ai_7.0.173_legacy_spans.json"
V4 = "vercel_ai_4.3.19_spans.json"
STREAM = "vercel_ai_6.0.333_stream_spans.json"
#: The fixtures with content whose tool error the SDK hands to the model (AI SDK 5 on).
HANDING = [(V6, "vercel6"), (STREAM, "vercel6s"), (V5, "vercel5"), (V7_LEGACY, "vercel7l")]
WITH_CONTENT = [*HANDING, (V4, "vercel4")]
SECRET = "the-vercel-tool-exception-text-v3"
DOWN = "the-vercel-provider-error-text-v3"
APP = "vercel-weather"


def _usages(turn: models.Turn) -> list[tuple[int, int, str]]:
    events = models.Event.objects.filter(turn_id=turn.id, usage__isnull=False).order_by("id")
    return [
        (e.usage["prompt_tokens"], e.usage["completion_tokens"], e.usage["details"]["model"])
        for e in events
        if e.usage
    ]


def test_the_fixtures_are_the_sdks_own_spans() -> None:
    """What the tests below replay: the AI SDK's span names and attributes, the
    exception's message where the SDK put it (so that its absence from the database
    means something)."""
    for fixture, _ in [*WITH_CONTENT, (NO_CONTENT, "vercel6nc")]:
        spans = fixture_spans(fixture)
        names = {s["name"] for s in spans}
        call = "ai.streamText" if fixture == STREAM else "ai.generateText"
        model = f"{call}.doStream" if fixture == STREAM else f"{call}.doGenerate"
        assert names == {call, model, "ai.toolCall"}
        assert all(s["attrs"]["ai.operationId"] == s["name"] for s in spans)
        assert not any(k.startswith("gen_ai.operation") for s in spans for k in s["attrs"])
        failed = [s for s in spans if s["status"].get("code") == 2]
        assert {s["name"] for s in failed} == names  # the tool, the model call, the root
        assert all(
            SECRET in s["status"]["message"] or DOWN in s["status"]["message"] for s in failed
        )
    handed = [
        s["attrs"]["ai.prompt.messages"]
        for s in fixture_spans(V6)
        if SECRET in s["attrs"].get("ai.prompt.messages", "")
    ]
    assert len(handed) == 1 and '"type":"error-text"' in handed[0]
    nocontent = {k for s in fixture_spans(NO_CONTENT) for k in s["attrs"]}
    assert not nocontent & {"ai.prompt.messages", "ai.response.text", "ai.toolCall.args"}


@pytest.mark.parametrize(("fixture", "prefix"), WITH_CONTENT)
def test_vercel_ai_lands_the_two_weather_runs(
    poster: OtlpPoster, fixture: str, prefix: str
) -> None:
    land_fixture(poster, fixture)
    # The session the metadata names, one turn per generateText call, the system
    # prompt, the user messages only once (the second run's history is not stored
    # again), the call paired with the tool span's result, every model call's usage.
    assert_two_weather_runs(f"{prefix}-s1", APP)
    session = models.Session.objects.get(pk=f"{prefix}-s1")
    assert (session.user_id, session.tokens_input, session.tokens_output) == ("u1", 83, 18)
    assert session.state["otlp"] == {"content_captured": True}
    assert session.orphan_result_count == 0 and not session.cannot_resume
    events = models.Event.objects.filter(session=session)
    # The agent's events by ai.telemetry.functionId; the user's messages by the user.
    assert {(e.role == "user", e.author) for e in events} == {
        (True, "user"),
        (False, "weather-agent"),
    }
    turn_ids = [t.id for t in session_turns(f"{prefix}-s1")]
    roots = [s for s in fixture_spans(fixture) if not s.get("parentSpanId")][:2]
    assert turn_ids == [f"{prefix}-s1/{s['traceId']}" for s in roots]


@pytest.mark.parametrize(("fixture", "prefix"), HANDING)
def test_vercel_ai_tool_error_handed_to_the_model(
    poster: OtlpPoster, fixture: str, prefix: str
) -> None:
    land_fixture(poster, fixture)
    (turn,) = session_turns(f"{prefix}-fail")
    # The SDK gave the tool's error to the model and the run went on: a completed turn,
    # the call answered by the error (its class, from the exception event), once.
    assert (turn.status, turn.failure_code, turn.failure_stage) == ("completed", "", "")
    assert event_rows(turn_id=turn.id) == [
        ("system", SYSTEM, [], ""),
        ("user", "Weather in Atlantis?", [], ""),
        ("assistant", "", ["call_atlantis"], ""),
        ("tool", "", [], "call_atlantis"),
        ("assistant", "I could not get the weather.", [], ""),
    ]
    result = models.Event.objects.get(turn_id=turn.id, role="tool")
    assert result.tool_response == {
        "tool_call_id": "call_atlantis",
        "name": "get_weather",
        "error": "Error",
    }
    assert _usages(turn) == [(12, 5, MODEL), (30, 7, MODEL)]
    session = models.Session.objects.get(pk=f"{prefix}-fail")
    assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)
    # The exception's message (status descriptions, exception events, the error result
    # in the next model call's input) is stored nowhere.
    assert SECRET not in database_text()


def test_vercel_ai_4_tool_error_fails_the_turn_at_the_tool(poster: OtlpPoster) -> None:
    land_fixture(poster, V4)
    (turn,) = session_turns("vercel4-fail")
    # AI SDK 4 does not hand a tool's error to the model: generateText throws, the root
    # span fails, and the failure is the tool span's (its exception's class, "Error").
    assert (turn.status, turn.reason, turn.failure_code, turn.failure_stage) == (
        "failed",
        "agent_error",
        "error",
        "tool",
    )
    assert turn.failure_message == ""
    assert event_rows(turn_id=turn.id) == [
        ("system", SYSTEM, [], ""),
        ("user", "Weather in Atlantis?", [], ""),
        ("assistant", "", ["call_atlantis"], ""),
        ("tool", "", [], "call_atlantis"),
    ]
    result = models.Event.objects.get(turn_id=turn.id, role="tool")
    assert (result.tool_response or {})["error"] == "Error"
    session = models.Session.objects.get(pk="vercel4-fail")
    assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)
    assert SECRET not in database_text()


@pytest.mark.parametrize(("fixture", "prefix"), WITH_CONTENT)
def test_vercel_ai_provider_error_fails_the_turn_at_the_provider(
    poster: OtlpPoster, fixture: str, prefix: str
) -> None:
    land_fixture(poster, fixture)
    (turn,) = session_turns(f"{prefix}-down")
    assert (turn.status, turn.reason, turn.failure_code, turn.failure_stage) == (
        "failed",
        "agent_error",
        "ai_api_call_error",  # the SDK's AI_APICallError
        "provider",
    )
    assert turn.failure_message == ""
    assert event_rows(turn_id=turn.id) == [
        ("system", SYSTEM, [], ""),
        ("user", "Is the model up?", [], ""),
    ]
    assert DOWN not in database_text()


def test_vercel_ai_keeps_only_what_the_mapping_reads_of_a_model_input(
    poster: OtlpPoster,
) -> None:
    land_fixture(poster, V6)
    inputs = [
        json.loads(span.attributes["ai.prompt.messages"])
        for span in OtlpSpan.objects.filter(name="ai.generateText.doGenerate")
        if span.attributes.get("ai.prompt.messages")
    ]
    assert len(inputs) == 6  # Paris 2, Rome 1, Atlantis 2, the failed call 1
    for messages in inputs:  # the system message, then what follows the last assistant one
        assert messages[0] == {"role": "system", "content": SYSTEM}
        assert "assistant" not in [m["role"] for m in messages]
    rome = next(m for m in inputs if "And in Rome?" in json.dumps(m))
    assert [m["role"] for m in rome] == ["system", "user"]  # not the first run again
    failed_result = next(m for m in inputs if "call_atlantis" in json.dumps(m))[-1]
    assert failed_result["content"][0]["output"] == {"type": "error-text", "value": ""}


def _plan(records: Sequence[SpanRecord]) -> list[tuple[Any, ...]]:
    by_trace: dict[str, list[SpanRecord]] = {}
    for record in records:
        by_trace.setdefault(record.trace_id, []).append(record)
    return [
        (log_mapping.place(s), log_mapping.turn_drafts(s), log_mapping.turn_outcome(s))
        for _, s in sorted(by_trace.items())
    ]


@pytest.mark.parametrize("fixture", [V6, NO_CONTENT, STREAM, V5, V7_LEGACY, V4])
def test_vercel_ai_plans_the_same_turns_from_kept_spans(fixture: str) -> None:
    """What `vercel_ai.kept` leaves out (the history before the last assistant message,
    error results' values) is nothing the mapping reads."""
    records = spans_of(decode_request((FIXTURES / fixture).read_bytes(), JSON))[0]
    kept = [replace(r, attributes=vercel_ai.kept(r.attributes)) for r in records]
    assert _plan(kept) == _plan(records)
    changed = {
        k.span_id for k, r in zip(kept, records, strict=True) if k.attributes != r.attributes
    }
    # The model calls given history: Paris's second, Rome's, Atlantis's second (not in AI
    # SDK 4, whose run stops at the tool's error).
    with_history = {
        r.span_id
        for r in records
        if '"role":"assistant"' in str(r.attributes.get("ai.prompt.messages", ""))
    }
    assert changed == with_history
    assert len(with_history) == (0 if fixture == NO_CONTENT else 2 if fixture == V4 else 3)


def _record(span_id: str, name: str, start: int, end: int, parent: str = "r", **attrs: Any) -> Any:
    """A span of the AI SDK's named `name`, from `start` to `end` microseconds."""
    at = datetime(2026, 12, 4, tzinfo=UTC)
    return SpanRecord(
        "0" * 32,
        span_id,
        parent,
        name,
        at + timedelta(microseconds=start),
        at + timedelta(microseconds=end),
        0,
        {"ai.operationId": name, **attrs},
    )


def test_each_tool_run_is_read_between_its_model_calls() -> None:
    """`vercel_ai.in_call_order` on the shapes the fixtures show (their timings vary from
    run to run): OpenTelemetry JS dates a span's start to the millisecond."""
    finish = "ai.response.finishReason"
    asking = _record("a", "ai.generateText.doGenerate", 0, 1100, **{finish: "tool-calls"})
    tool = _record("t", "ai.toolCall", 1000, 2300, **{"ai.toolCall.id": "c1"})
    answer = _record("b", "ai.generateText.doGenerate", 2000, 2500, **{finish: "stop"})
    ordered = vercel_ai.in_call_order([answer, tool, asking])
    assert [(s.span_id, s.start_at, s.end_at) for s in ordered] == [
        ("a", asking.start_at, asking.end_at),
        ("t", asking.end_at, tool.end_at),  # after the call that asked for it
        ("b", tool.end_at, answer.end_at),  # after the tool's end
    ]
    # Content not captured: the tool and the next call read as started in the same
    # millisecond (the next call by its finish reason is not the one that asked).
    quick = _record("t", "ai.toolCall", 1000, 1500, **{"ai.toolCall.id": "c1"})
    next_call = _record("b", "ai.generateText.doGenerate", 1000, 1900, **{finish: "stop"})
    ordered = vercel_ai.in_call_order([next_call, quick, asking])
    assert [(s.span_id, s.start_at) for s in ordered] == [
        ("a", asking.start_at),
        ("t", asking.end_at),
        ("b", quick.end_at),
    ]
    # AI SDK 7's legacy spans (and streamText's): the tool a child of its model call,
    # which ends after it.
    parent = _record("p", "ai.generateText.doGenerate", 0, 5000)
    child = _record("c", "ai.toolCall", 1000, 2000, parent="p", **{"ai.toolCall.id": "c2"})
    assert [(s.start_at, s.end_at) for s in vercel_ai.in_call_order([child, parent])] == [
        (parent.start_at, parent.end_at),
        (parent.end_at, parent.end_at),
    ]
    # A tool run after its model call is left as it is; other producers' spans sorted.
    after = _record("t", "ai.toolCall", 1200, 1900, **{"ai.toolCall.id": "c1"})
    assert vercel_ai.in_call_order([answer, after, asking]) == [asking, after, answer]
    chat = replace(asking, attributes={"gen_ai.operation.name": "chat"})
    run = replace(tool, attributes={"gen_ai.operation.name": "execute_tool"})
    assert vercel_ai.in_call_order([run, chat]) == [chat, run]


def test_vercel_ai_without_content_lands_calls_results_usage_and_failures(
    poster: OtlpPoster,
) -> None:
    land_fixture(poster, NO_CONTENT)
    session = models.Session.objects.get(pk="vercel6nc-s1")
    assert session.state["otlp"] == {"content_captured": False}
    assert (session.model, session.title, session.user_id) == (MODEL, "", "u1")
    assert (session.tokens_input, session.tokens_output) == (83, 18)
    paris, rome = session_turns("vercel6nc-s1")
    for turn in (paris, rome):
        assert turn.status == "completed"
        assert "message content was not captured" in turn.status_note
    # Each model call an event of usage alone; the tool span's call and its result
    # (not captured) right after the model call that asked for it.
    assert event_rows(turn_id=paris.id) == [
        ("assistant", "", [], ""),
        ("assistant", "", ["call_paris"], ""),
        ("tool", "", [], "call_paris"),
        ("assistant", "", [], ""),
    ]
    assert _usages(paris) == [(12, 5, MODEL), (30, 7, MODEL)]
    assert _usages(rome) == [(41, 6, MODEL)]
    (call,) = [e for e in models.Event.objects.filter(turn_id=paris.id) if e.tool_calls]
    assert call.tool_calls == [{"id": "call_paris", "name": "get_weather", "arguments": {}}]
    result = models.Event.objects.get(turn_id=paris.id, role="tool")
    assert (result.tool_response or {})["result"] == {"content_captured": False}

    (failed,) = session_turns("vercel6nc-fail")
    assert failed.status == "completed"
    assert event_rows(turn_id=failed.id) == [
        ("assistant", "", [], ""),
        ("assistant", "", ["call_atlantis"], ""),
        ("tool", "", [], "call_atlantis"),
        ("assistant", "", [], ""),
    ]
    error = models.Event.objects.get(turn_id=failed.id, role="tool")
    assert (error.tool_response or {})["error"] == "Error"
    fail_session = models.Session.objects.get(pk="vercel6nc-fail")
    assert (fail_session.protocol_issue_count, fail_session.orphan_result_count) == (0, 0)
    (down,) = session_turns("vercel6nc-down")
    assert (down.status, down.failure_code, down.failure_stage) == (
        "failed",
        "ai_api_call_error",
        "provider",
    )
    text = database_text()
    assert SECRET not in text and DOWN not in text
