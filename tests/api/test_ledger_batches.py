"""A batch mixing plain events (one bulk insert) with tool calls, results and state deltas
(the store's own append) keeps batch order as conversation order, and the resume status
the store keeps equals its full recomputation."""

from __future__ import annotations

from typing import Any

import pytest

from sessions_app.models import Event, Session
from sessions_app.store import refresh_resume_status
from tests.api.conftest import ApiClient

pytestmark = pytest.mark.django_db


def _item(key: str, content: dict[str, object], **extra: object) -> dict[str, object]:
    return {"client_key": key, "turn_id": "t-1", "content": content, **extra}


def test_mixed_batch_keeps_order_status_and_retry(writer: ApiClient) -> None:
    assert writer.post("/sessions", {"app_name": "ops", "session_id": "s-b"}).status_code == 201
    assert writer.post("/sessions/s-b/turns", {"turn_id": "t-1"}).status_code == 201
    call = {"id": "c-1", "name": "ls", "arguments": {}}
    batch = {
        "events": [
            _item("a", {"role": "user", "text": "list"}),
            _item("b", {"role": "assistant", "text": "thinking"}),
            _item("c", {"role": "assistant", "tool_calls": [call]}),
            _item("d", {"role": "tool", "tool_response": {"tool_call_id": "c-1", "name": "ls",
                                                         "result": {"out": "x"}}}),
            _item("e", {"role": "assistant", "text": "done"}, state_delta={"k": 1}),
            _item("f", {"role": "assistant", "text": "token sk-ant-api03-" + "a" * 90}),
            _item("g", {"role": "assistant", "text": "bye"}),
        ]
    }  # fmt: skip
    answer = writer.post("/sessions/s-b/events", batch).json()
    stored = list(Event.objects.filter(session_id="s-b").order_by("id"))
    assert answer["ids"] == [e.id for e in stored]
    assert [e.text for e in stored][:3] == ["list", "thinking", ""]
    assert stored[3].role == "tool" and stored[6].text == "bye"
    assert "sk-ant-api03" not in stored[5].text  # redacted on the bulk path too
    assert Session.objects.get(pk="s-b").state == {"k": 1}
    kept = Session.objects.values_list("protocol_issue_count", "cannot_resume").get(pk="s-b")
    assert refresh_resume_status("s-b") == kept
    assert writer.post("/sessions/s-b/events", batch).json() == answer
    assert Event.objects.filter(session_id="s-b").count() == 7


def test_a_batch_needing_the_full_recomputation_makes_it_once(
    writer: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tool results outside any turn: the local rules cannot place them, the status is
    # recomputed in full; once for the batch, not once per event (quadratic before).
    calls: list[str] = []
    full = refresh_resume_status

    def counted(session_id: str) -> tuple[int, bool]:
        calls.append(session_id)
        return full(session_id)

    monkeypatch.setattr("sessions_app.store.service.refresh_resume_status", counted)
    assert writer.post("/sessions", {"app_name": "ops", "session_id": "s-o"}).status_code == 201
    orphans = [
        {"client_key": f"k{i}", "content": {"role": "tool", "tool_call_id": f"c{i}", "text": "x"}}
        for i in range(30)
    ]
    assert writer.post("/sessions/s-o/events", {"events": orphans}).status_code == 200
    assert calls == ["s-o"]
    kept = Session.objects.values_list("protocol_issue_count", "cannot_resume").get(pk="s-o")
    assert full("s-o") == kept
    assert Session.objects.get(pk="s-o").orphan_result_count == 30


def _plain_batch(first: int, count: int) -> dict[str, object]:
    return {
        "events": [
            {"client_key": f"k{first + i}", "content": {"role": "assistant", "text": f"e{i}"}}
            for i in range(count)
        ]
    }


def test_a_batch_takes_one_transaction_and_finds_its_keys_by_the_unique_index(
    writer: ApiClient,
) -> None:
    """The run-lease check reads before it writes (a session without a due lease takes no
    transaction for it), and the client keys are looked up through the partial unique
    index (a lookup that did not say `client_key <> ''` scanned every key of the
    session on SQLite)."""
    from django.db import connection

    assert writer.post("/sessions", {"app_name": "ops", "session_id": "s-q"}).status_code == 201
    assert writer.post("/sessions/s-q/events", _plain_batch(0, 50)).status_code == 200
    seen: list[tuple[str, Any]] = []

    def capture(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        assert writer.post("/sessions/s-q/events", _plain_batch(50, 20)).status_code == 200
    # Inside the test's own transaction each atomic block is a savepoint.
    assert sum(sql.startswith("SAVEPOINT") for sql, _p in seen) == 1
    if connection.vendor != "sqlite":
        return
    (lookup,) = [(s, p) for s, p in seen if "client_key IN" in s and s.startswith("SELECT")]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + lookup[0], lookup[1])
        plan = " ".join(str(row) for row in cursor.fetchall())
    assert "event_client_key_unique" in plan, plan


def test_a_batch_reaches_the_layer_as_one_message(
    writer: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch's events are posted to the outbox together and flushed once: the layer
    gets one ``live.batch`` holding every event, not one message per event."""
    sent: list[dict[str, Any]] = []

    async def record(session_id: str, message: dict[str, Any]) -> None:
        sent.append(message)

    monkeypatch.setattr("sessions_app.live.groups.broadcast", record)
    assert writer.post("/sessions", {"app_name": "ops", "session_id": "s-l"}).status_code == 201
    sent.clear()
    answer = writer.post("/sessions/s-l/events", _plain_batch(0, 100)).json()
    (message,) = sent
    assert message["type"] == "live.batch"
    events = [m["event"]["id"] for m in message["messages"] if m["type"] == "live.event"]
    assert events == answer["ids"]
