"""Claude Code's side requests (the session title, a topic check: records with neither a
``prompt.id`` nor trace context) join the turn of the nearest prompt of their session
sent in the same export (`claude_code.side_requests_joined`); the captured traced run is
in `test_claude_code_capture.py`. Here: records without traces, and what stays alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sessions_app.otlp.claude_code import SIDE_KEY, side_requests_joined
from sessions_app.otlp.decode import SpanRecord
from sessions_app.otlp.log_mapping import UNTRACED
from sessions_app.otlp.logs import untraced_trace

T0 = datetime(2026, 12, 4, 3, 0, tzinfo=UTC)


def _record(name: str, seconds: float, **attrs: Any) -> SpanRecord:
    at = T0 + timedelta(seconds=seconds)
    attributes = {"resource.service.name": "claude-code", "session.id": "s-1", **attrs}
    trace_id = untraced_trace("claude-code", attributes, at)
    return SpanRecord(trace_id, f"{int(seconds * 1000):016x}", "", f"claude_code.{name}", at,
                      at, 0, attributes, UNTRACED)  # fmt: skip


def test_a_side_request_joins_the_nearest_prompt_of_its_session() -> None:
    first = _record("user_prompt", 0, **{"prompt.id": "p1"})
    title = _record("api_request", 0.2, query_source="generate_session_title")
    second = _record("user_prompt", 30, **{"prompt.id": "p2"})
    check = _record("api_request", 29.5, query_source="topic")
    joined = side_requests_joined([first, title, second, check], untraced_trace)
    assert [r.trace_id for r in joined] == [first.trace_id] * 2 + [second.trace_id] * 2
    assert [r.attributes.get(SIDE_KEY) for r in joined] == [None, True, None, True]
    assert joined[1].attributes["prompt.id"] == "p1"


def test_a_side_request_without_a_near_prompt_of_its_session_stays_alone() -> None:
    prompt = _record("user_prompt", 0, **{"prompt.id": "p1"})
    late = _record("api_request", 61)  # beyond a minute from the prompt
    other = _record("api_request", 1, **{"session.id": "s-2"})
    alone = _record("api_request", 2)
    assert side_requests_joined([prompt, late, other], untraced_trace) == [prompt, late, other]
    assert side_requests_joined([alone], untraced_trace) == [alone]
