"""Who a landed event is by: the user's messages by ``user`` (as imports and the runner
store them), the rest by the agent whose span it came from, named on that span or on the
nearest ancestor (Strands, AutoGen and OpenLLMetry name it on ``invoke_agent`` alone),
else the resource's service name."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sessions_app import models
from sessions_app.otlp.authors import agent_names
from sessions_app.otlp.decode import SpanRecord
from sessions_app.otlp.log_mapping import turn_drafts
from tests.otlp.captured import land_fixture
from tests.otlp.conftest import OtlpPoster


@pytest.mark.parametrize(
    ("fixture", "session_id", "agent"),
    [
        ("strands_1.62.0_spans.json", "st-s1", "weather_agent"),
        ("openllmetry_langchain_0.62.4_spans.json", "ollm-s1", "LangGraph"),
    ],
)
def test_events_are_by_the_user_or_the_agent_named_above_them(
    poster: OtlpPoster, fixture: str, session_id: str, agent: str
) -> None:
    land_fixture(poster, fixture)
    events = models.Event.objects.filter(session_id=session_id)
    assert {(e.role, e.author) for e in events} == {
        ("system", agent),
        ("user", "user"),
        ("assistant", agent),
        ("tool", agent),
    }


def test_autogen_events_are_by_the_assistant_agent(poster: OtlpPoster) -> None:
    from tests.otlp.test_autogen_capture import AGENT, _land_fixture, _run_sessions

    _land_fixture(poster, AGENT)
    events = models.Event.objects.filter(session_id__in=_run_sessions(AGENT))
    assert {e.author for e in events if e.role != "user"} == {"weather_agent"}
    assert {e.author for e in events if e.role == "user"} == {"user"}


_START = datetime(2026, 1, 1, tzinfo=UTC)


def _span(span_id: str, parent: str, name: str, at: int, **attributes: Any) -> SpanRecord:
    start = _START + timedelta(seconds=at)
    return SpanRecord("t" * 32, span_id.ljust(16, "0"), parent and parent.ljust(16, "0"), name,
                      start, start + timedelta(seconds=1), 0,
                      {"resource.service.name": "team-app", **attributes})  # fmt: skip


def _output(text: str) -> str:
    return f'[{{"role": "assistant", "parts": [{{"type": "text", "content": "{text}"}}]}}]'


def test_each_agent_of_a_team_authors_its_own_events() -> None:
    spans = [
        _span("a", "", "invoke_agent lead", 0, **{"gen_ai.agent.name": "lead"}),
        _span("b", "a", "chat m", 1, **{"gen_ai.output.messages": _output("plan")}),
        _span("c", "a", "invoke_agent helper", 2, **{"gen_ai.agent.name": "helper"}),
        _span("d", "c", "step", 3),
        _span("e", "d", "chat m", 4, **{"gen_ai.output.messages": _output("done")}),
        _span("f", "x", "chat m", 5, **{"gen_ai.output.messages": _output("orphan")}),
    ]
    names = agent_names(spans)
    assert {k[:1]: v for k, v in names.items()} == {
        "a": "lead", "b": "lead", "c": "helper", "d": "helper", "e": "helper"
    }  # fmt: skip
    # A span under no named agent (its parent never arrived): the service's name.
    assert [(d.text, d.author) for d in turn_drafts(spans)] == [
        ("plan", "lead"), ("done", "helper"), ("orphan", "team-app")
    ]  # fmt: skip
