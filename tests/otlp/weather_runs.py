"""What the real-framework OTLP tests expect of the same two runs of one conversation
(the frameworks' own instrumentation, a scripted model, a real weather tool): the first
asks for the weather in Paris through the tool, the second in Rome without it."""

from __future__ import annotations

from typing import Any

from sessions_app import models
from tests.otlp.rows import EventRow, event_rows

MODEL = "fake-weather-1"
SYSTEM = "Answer in one line."


def turn_rows(turn: models.Turn) -> list[EventRow]:
    """The `EventRow`s of `turn`."""
    return event_rows(turn_id=turn.id)


def tokens_of(event: models.Event) -> tuple[int, int] | None:
    """An event's (prompt, completion) tokens, None without usage."""
    usage = event.usage
    return (usage["prompt_tokens"], usage["completion_tokens"]) if usage else None


def outcome(turn: models.Turn) -> tuple[str, str, str, str, str]:
    """A turn's status, reason, failure code, stage and message."""
    return (turn.status, turn.reason, turn.failure_code, turn.failure_stage, turn.failure_message)


def session_usages(session_id: str) -> list[tuple[int, int] | None]:
    """The (prompt, completion) tokens of a session's events with usage, in order."""
    events = models.Event.objects.filter(session_id=session_id, usage__isnull=False)
    return [tokens_of(e) for e in events.order_by("id")]


def tool_result(turn: models.Turn) -> dict[str, Any] | None:
    """The tool response of the turn's one tool event."""
    return models.Event.objects.get(turn_id=turn.id, role="tool").tool_response


def assert_two_weather_runs(session_id: str, app: str) -> None:
    """Session `session_id` of `app` holds the two runs as completed turns: each with its
    own messages only, the Paris call paired with its result by the model's call id, each
    model call's usage with the model, no protocol issue."""
    session = models.Session.objects.get(pk=session_id)
    assert (session.app_name, session.model, session.title) == (app, MODEL, "Weather in Paris?")
    turns = list(models.Turn.objects.filter(session=session).order_by("started_at"))
    assert [(t.status, t.id.startswith(f"{session_id}/")) for t in turns] == [
        ("completed", True)
    ] * 2
    call = "call_paris"
    assert turn_rows(turns[0]) == [
        ("system", SYSTEM, [], ""),
        ("user", "Weather in Paris?", [], ""),
        ("assistant", "", [call], ""),
        ("tool", "", [], call),
        ("assistant", "It is sunny in Paris.", [], ""),
    ]
    # Its history (the first run) is not stored again, nor the same system prompt: the
    # model is sent it once.
    assert turn_rows(turns[1]) == [
        ("user", "And in Rome?", [], ""),
        ("assistant", "Rome is sunny too.", [], ""),
    ]
    asking = models.Event.objects.get(turn_id=turns[0].id, role="assistant", text="")
    assert asking.tool_calls == [
        {"id": call, "name": "get_weather", "arguments": {"city": "Paris"}}
    ]
    result = models.Event.objects.get(turn_id=turns[0].id, role="tool")
    assert result.tool_response == {
        "tool_call_id": call,
        "name": "get_weather",
        "result": "sunny in Paris",
    }
    used = list(models.Event.objects.filter(session=session, usage__isnull=False).order_by("id"))
    assert [(e.text, tokens_of(e)) for e in used] == [  # each model call's, on its last output
        ("", (12, 5)),
        ("It is sunny in Paris.", (30, 7)),
        ("Rome is sunny too.", (41, 6)),
    ]
    assert {(e.usage or {})["details"].get("model") for e in used} == {MODEL}
    assert session.protocol_issue_count == 0
