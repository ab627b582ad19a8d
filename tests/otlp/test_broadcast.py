"""What a request's watchers are sent: every new event, in order, equal to what a watcher
resuming from the database reads (its `pair` included, when its call came in an earlier
batch); a new turn before its events, a changed turn after them; and the broadcast reads
the database a fixed number of times, whatever the number of turns and tool results."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app import models
from sessions_app.api.keys import create_key
from sessions_app.api.models import ApiKey
from sessions_app.live import event_payloads_after, turn_payload
from sessions_app.live.payloads import EVENT, TURN, unbatched
from sessions_app.otlp.decode import decode_request, spans_of
from sessions_app.otlp.writer import receive
from tests.otlp.agent_spans import OpenTurn, ok_turn, protobuf_body, provider


def _records(spans: Any) -> list[Any]:
    records, bad = spans_of(decode_request(protobuf_body(spans), "application/x-protobuf"))
    assert bad == 0
    return records


def _spans(traces: int, prefix: str) -> list[Any]:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer = provider(exporter).get_tracer("tests.otlp.broadcast")
    for number in range(traces):
        ok_turn(tracer, conversation=f"{prefix}-{number}")
    return list(exporter.get_finished_spans())


class Sent:
    """The messages handed to the channel layer, by session, in order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)

        async def broadcast(session_id: str, message: dict[str, Any]) -> None:
            self.by_session[session_id] += unbatched(message)

        monkeypatch.setattr("sessions_app.live.groups.broadcast", broadcast)

    def take(self) -> dict[str, list[dict[str, Any]]]:
        found, self.by_session = dict(self.by_session), defaultdict(list)
        return found


def _receive(records: list[Any], key: ApiKey) -> int:
    with CaptureQueriesContext(connection) as captured:
        done = async_to_sync(receive)(records, key)
    assert done.rejected == 0
    return len(captured)


def _check(messages: dict[str, list[dict[str, Any]]], after: int) -> None:
    """Each session's messages: its events as the database has them, each changed turn
    once with its stored values, a created turn before its first event."""
    assert messages
    for session_id, sent in messages.items():
        events = [m["event"] for m in sent if m["type"] == EVENT]
        stored = event_payloads_after(session_id, after)
        assert [{**e, "event_count": None} for e in events] == stored
        turns = [m["turn"] for m in sent if m["type"] == TURN]
        assert len({t["id"] for t in turns}) == len(turns)
        for turn in turns:
            assert turn == turn_payload(turn["id"])
            position = next(i for i, m in enumerate(sent) if m.get("turn") == turn)
            own = [i for i, m in enumerate(sent) if m.get("event", {}).get("turn_id") == turn["id"]]
            assert own and (position < own[0] or position > own[-1])


@pytest.mark.django_db
def test_watchers_get_every_event_as_stored_with_its_call(monkeypatch: pytest.MonkeyPatch) -> None:
    key = create_key("broadcast").row
    sent = Sent(monkeypatch)
    # Three running turns in two sessions. First batch: the model asks for a tool (its
    # call); second: the tool answers (a result whose call was stored before) and the
    # model answers.
    turns = [OpenTurn("a", "left"), OpenTurn("b", "left"), OpenTurn("c", "right")]
    _receive([r for turn in turns for r in _records(turn.take())], key)
    first = sent.take()
    _check(first, 0)
    assert set(first) == {"left", "right"}
    for messages in first.values():  # new turns: each comes before its events
        assert messages[0]["type"] == TURN and messages[0]["turn"]["status"] == "running"
    after = models.Event.objects.order_by("-id").values_list("id", flat=True).first() or 0
    for turn in turns:
        turn.tool_answers()
        turn.answers("done")
    _receive([r for turn in turns for r in _records(turn.take())], key)
    second = sent.take()
    _check(second, after)
    results = [
        m["event"] for ms in second.values() for m in ms
        if m["type"] == EVENT and m["event"]["role"] == "tool"
    ]  # fmt: skip
    assert len(results) == 3
    assert all(r["pair"] and 0 < r["pair"]["event"]["id"] <= after for r in results)
    for messages in second.values():  # changed turns: after their events
        assert messages[-1]["type"] == TURN and messages[-1]["turn"]["event_count"] == 4


@pytest.mark.django_db
def test_the_broadcast_queries_do_not_grow_with_turns_and_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = create_key("broadcast-queries").row
    Sent(monkeypatch)
    spans = _spans(2, "warm")  # the key's first use is noted once
    _receive(_records(spans), key)
    small, large = _records(_spans(2, "small")), _records(_spans(12, "large"))
    assert _receive(small, key) == _receive(large, key)
