"""A real producer: the LangSmith SDK (``langsmith`` 0.15.1) exporting as OpenTelemetry
(``LANGSMITH_OTEL_ENABLED=true``, ``LANGSMITH_OTEL_ONLY=true``) around a real LangGraph
``create_react_agent`` run offline (a fake chat model, one real ``@tool get_weather``),
captured once in ``tests/otlp/fixtures/langsmith_0.15.1_langgraph_spans.json`` (how:
``tests/otlp/fixtures/README.md``). Session ``lsm-s1``: two runs of one thread
(``metadata={"thread_id": ...}``, sent as ``langsmith.metadata.thread_id``); session
``lsm-fail``: one run whose tool raises ``ConnectionError(SECRET)``.

Only what already lands right is pinned here; the messages (LangChain's serialized
messages in ``gen_ai.prompt``/``gen_ai.completion``) do not land yet: see the README.
"""

from __future__ import annotations

from sessions_app import models
from tests.otlp.captured import land_fixture, session_turns
from tests.otlp.conftest import OtlpPoster
from tests.otlp.weather_runs import tokens_of
from tests.test_redaction_shapes import database_text

FIXTURE = "langsmith_0.15.1_langgraph_spans.json"
SECRET = "the-langsmith-tool-exception-text-qv73"


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
