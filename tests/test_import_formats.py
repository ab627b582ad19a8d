"""The formats added for real transcripts: ADK partials and session databases, Anthropic
Messages, Responses items, every RunState item type, SWE-agent without function
calling, and nothing silent (empty files, lost history, bad values)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from agentops.runtime.projection import explain_projection
from sessions_app.ingest import ImportRefusedError, UnknownFormatError, detect_format, import_file
from sessions_app.models import Event, Session, Turn
from sessions_app.projector import explain_product_projection
from sessions_app.store import event_from_row, turn_from_row

pytestmark = pytest.mark.django_db

FORMATS = Path(__file__).parent / "fixtures" / "formats"
ADK_DBS = Path(__file__).parent / "fixtures" / "adk"
PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


def _events(session_id: str) -> list[Event]:
    return list(Event.objects.filter(session_id=session_id).order_by("id"))


def _run(*args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `import_sessions ARGS --no-progress`."""
    import io

    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("import_sessions", *args, "--no-progress", stdout=out, stderr=err)
    except CommandError as exc:
        err.write(str(exc))
        return exc.returncode, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def test_adk_partial_chunks_are_never_stored_as_messages() -> None:
    import_file(FORMATS / "adk_partials.session.json")
    texts = [(e.role, e.text) for e in _events("adk-partials")]
    # p1, p2 precede their final event f1: dropped. p3, p4 end the stream: merged.
    assert texts == [
        ("user", "Tell me a story"),
        ("assistant", "Once upon a time."),
        ("assistant", ""),
        ("user", "Another"),
        ("assistant", "There was a fox"),
    ]
    merged = _events("adk-partials")[-1]
    assert isinstance(merged.raw, dict) and merged.raw["merged_partial_events"] == 2


def test_adk_state_only_events_are_shown_but_never_projected() -> None:
    import_file(FORMATS / "adk_partials.session.json")
    rows = _events("adk-partials")
    state_row = rows[2]
    assert state_row.state_delta == {"stories_told": 1} and state_row.text == ""
    turns = [turn_from_row(t) for t in Turn.objects.filter(session_id="adk-partials")]
    events = [event_from_row(r) for r in rows]
    product = explain_product_projection("adk-partials", turns, events)
    assert [e.id for e in product.state_only] == [state_row.id]
    assert state_row.id not in [e.id for e in product.explanation.context]
    assert len(product.explanation.context) == 4
    # The runtime's default projection replays a completed turn exactly as stored.
    assert state_row.id in [e.id for e in explain_projection(turns, events).context]


def _adk_event(n: int, author: str, part: dict[str, object], **extra: object) -> dict[str, object]:
    role = "model" if "function_call" in part or (author != "user" and "text" in part) else "user"
    return {
        "id": f"e{n}",
        "invocation_id": "inv-1",
        "author": author,
        "timestamp": 1_700_000_000 + n,
        "content": {"role": role, "parts": [part]},
        "actions": {"state_delta": extra.pop("state_delta", {})},
        **extra,
    }


def _call(call_id: str, name: str) -> dict[str, object]:
    return {"function_call": {"id": call_id, "name": name, "args": {}}}


def _response(call_id: str, name: str, value: dict[str, object]) -> dict[str, object]:
    return {"function_response": {"id": call_id, "name": name, "response": value}}


def _import_adk(tmp_path: Path, name: str, events: list[dict[str, object]]) -> Session:
    path = tmp_path / f"{name}.session.json"
    path.write_text(json.dumps({"id": name, "app_name": "app", "user_id": "u", "events": events}))
    import_file(path)
    return Session.objects.get(id=name)


def test_adk_long_running_update_replaces_the_result_and_is_no_orphan(tmp_path: Path) -> None:
    # ADK's long-running pattern: an interim response, then the client sends the final
    # one with the same id; ADK sends the model only the latest, right after the call.
    session = _import_adk(
        tmp_path,
        "adk-long",
        [
            _adk_event(1, "user", {"text": "get approval"}),
            _adk_event(2, "agent", _call("L1", "ask_for_approval"), long_running_tool_ids=["L1"]),
            _adk_event(3, "agent", _response("L1", "ask_for_approval", {"status": "pending"})),
            _adk_event(4, "agent", {"text": "I asked the manager"}),
            _adk_event(
                5,
                "user",
                _response("L1", "ask_for_approval", {"status": "approved"}),
                state_delta={"approved": True},
            ),
            _adk_event(6, "agent", {"text": "Approved!"}),
        ],
    )
    assert (session.orphan_result_count, session.protocol_issue_count) == (0, 0)
    rows = _events("adk-long")
    assert [(e.role, e.text) for e in rows] == [
        ("user", "get approval"),
        ("assistant", ""),
        ("tool", ""),
        ("assistant", "I asked the manager"),
        ("user", ""),  # the update's state delta, kept where it came
        ("assistant", "Approved!"),
    ]
    assert rows[2].tool_response["result"] == {"status": "approved"}  # type: ignore[index]
    assert isinstance(rows[2].raw, list) and [r["id"] for r in rows[2].raw] == ["e3", "e5"]
    assert rows[2].updated_at > rows[2].created_at
    assert rows[4].state_delta == {"approved": True}
    assert Turn.objects.get(session_id="adk-long").status == "completed"


def test_adk_confirmed_call_run_again_is_one_result(tmp_path: Path) -> None:
    # A tool needing confirmation answers with an error and asks through
    # adk_request_confirmation; once confirmed it runs again under the same call id.
    confirm = "adk_request_confirmation"
    session = _import_adk(
        tmp_path,
        "adk-confirm",
        [
            _adk_event(1, "user", {"text": "send 5 EUR"}),
            _adk_event(2, "agent", _call("C0", "transfer")),
            _adk_event(3, "agent", _response("C0", "transfer", {"error": "needs confirmation"})),
            _adk_event(4, "agent", _call("C1", confirm), long_running_tool_ids=["C1"]),
            _adk_event(5, "user", _response("C1", confirm, {"confirmed": True})),
            _adk_event(6, "agent", _response("C0", "transfer", {"result": "sent"})),
            _adk_event(7, "agent", {"text": "Sent."}),
        ],
    )
    assert (session.orphan_result_count, session.protocol_issue_count) == (0, 0)
    results = {
        e.tool_call_id: (e.tool_response or {}).get("result")
        for e in _events("adk-confirm")
        if e.role == "tool"
    }
    assert results == {"C0": {"result": "sent"}, "C1": {"confirmed": True}}


def test_adk_confirmation_not_yet_answered_awaits_the_user(tmp_path: Path) -> None:
    confirm = "adk_request_confirmation"
    _import_adk(
        tmp_path,
        "adk-asking",
        [
            _adk_event(1, "user", {"text": "send 5 EUR"}),
            _adk_event(2, "agent", _call("C0", "transfer")),
            _adk_event(3, "agent", _response("C0", "transfer", {"error": "needs confirmation"})),
            _adk_event(4, "agent", _call("C1", confirm), long_running_tool_ids=["C1"]),
        ],
    )
    turn = Turn.objects.get(session_id="adk-asking")
    assert (turn.status, turn.reason, turn.status_note) == (
        "interrupted",
        "consumer_stopped",
        "awaiting the user: C1",
    )


def test_adk_responses_to_no_call_stay_orphans(tmp_path: Path) -> None:
    session = _import_adk(
        tmp_path,
        "adk-ghost",
        [
            _adk_event(1, "user", {"text": "hi"}),
            _adk_event(2, "agent", _response("ghost", "f", {"a": 1})),
            _adk_event(3, "agent", _response("ghost", "f", {"a": 2})),
            _adk_event(4, "agent", {"text": "done"}),
        ],
    )
    assert session.orphan_result_count == 2


@pytest.mark.parametrize("name", ["adk_v0.db", "adk_v1.db"])
def test_adk_session_database_imports_directly(name: str, tmp_path: Path) -> None:
    db = tmp_path / name
    shutil.copy(ADK_DBS / name, db)
    code, out, _err = _run(str(db))
    assert code == 0, out
    sid = "adk-db-v0" if name == "adk_v0.db" else "adk-db-v1"
    session = Session.objects.get(id=sid)
    assert session.source_format == "adk_database" and session.app_name == "weather_app"
    assert session.title == "What is the weather in Paris?"
    rows = _events(sid)
    assert [(e.role, bool(e.tool_calls)) for e in rows] == [
        ("user", False),
        ("assistant", True),
        ("tool", False),
        ("assistant", False),
        ("assistant", False),
    ]
    assert rows[2].tool_response == {
        "tool_call_id": "adk-call-1",
        "name": "get_weather",
        "result": {"temp_c": 18},
    }
    # v0 keeps the state delta in a pickle: read without running it.
    assert rows[3].state_delta == {"last_city": "Paris"}
    assert session.protocol_issue_count == 0


def test_adk_database_pickle_is_never_executed(tmp_path: Path) -> None:
    from sessions_app.ingest.formats.adk_database import read_actions

    class Boom:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (print, ("executed",))

    import pickle

    assert read_actions(pickle.dumps({"state_delta": {"a": 1}})) == {"state_delta": {"a": 1}}
    # os.system / print would run with pickle.loads; the safe reader only builds data.
    assert read_actions(pickle.dumps(Boom())) == {}


def test_a_sqlite_file_that_is_not_adk_is_refused_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE t (x)")
    with pytest.raises(UnknownFormatError, match="not a Google ADK session database"):
        import_file(db)


@pytest.fixture
def adk_postgres() -> Iterator[str]:
    """A scratch schema in the local PostgreSQL holding the v1 fixture's rows."""
    try:
        connection = psycopg.connect(PG_URL, autocommit=True, connect_timeout=3)
    except psycopg.Error:
        pytest.skip("no PostgreSQL at 127.0.0.1:5432")
    schema = "adk_import_scratch"
    source = sqlite3.connect(ADK_DBS / "adk_v1.db")
    with connection:
        connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        connection.execute(f"CREATE SCHEMA {schema}")
        connection.execute(f"SET search_path TO {schema}")
        connection.execute(
            "CREATE TABLE sessions (app_name varchar(128), user_id varchar(128), "
            "id varchar(128), state jsonb NOT NULL, create_time timestamp NOT NULL, "
            "update_time timestamp NOT NULL, PRIMARY KEY (app_name, user_id, id))"
        )
        connection.execute(
            "CREATE TABLE events (id varchar(128), app_name varchar(128), "
            "user_id varchar(128), session_id varchar(128), invocation_id varchar(256), "
            "timestamp timestamp NOT NULL, event_data jsonb, "
            "PRIMARY KEY (id, app_name, user_id, session_id))"
        )
        connection.execute("CREATE TABLE adk_internal_metadata (key varchar(128), value text)")
        for row in source.execute("SELECT * FROM sessions"):
            connection.execute("INSERT INTO sessions VALUES (%s, %s, %s, %s, %s, %s)", row)
        for row in source.execute("SELECT * FROM events"):
            connection.execute("INSERT INTO events VALUES (%s, %s, %s, %s, %s, %s, %s)", row)
        yield f"{PG_URL}?options=-csearch_path%3D{schema}"
        connection.execute(f"DROP SCHEMA {schema} CASCADE")


def test_adk_postgresql_database_imports_by_url(adk_postgres: str) -> None:
    code, out, err = _run(adk_postgres)
    assert code == 0, err
    assert "imported (adk_database): 1 sessions, 1 turns, 5 events" in out
    session = Session.objects.get(id="adk-db-v1")
    assert session.source_path.startswith("postgresql://postgres@127.0.0.1")
    assert [e.role for e in _events("adk-db-v1")] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "assistant",
    ]
    # The same rows again: nothing to do.
    assert "already imported" in _run(adk_postgres)[1]


def test_anthropic_request_keeps_tool_blocks_and_the_image() -> None:
    path = FORMATS / "anthropic_request.json"
    assert detect_format(path, path.read_text()) == "anthropic_messages"
    report = import_file(path)
    assert report.stats["tool_calls"] == 1 and report.stats["unanswered_calls"] == 0
    rows = _events("anthropic:anthropic_request")
    assert [e.role for e in rows] == ["system", "user", "assistant", "tool", "assistant"]
    assert rows[2].reasoning == "need a tool" and rows[2].tool_calls[0]["name"] == "screenshot"
    result = rows[3].tool_response["result"]  # type: ignore[index]
    assert [block["type"] for block in result] == ["text", "image"]


def test_responses_item_list_is_detected_and_paired() -> None:
    path = FORMATS / "responses_items.json"
    assert detect_format(path, path.read_text()) == "openai_responses"
    report = import_file(path)
    assert report.stats["tool_calls"] == 2 and report.stats["unanswered_calls"] == 0
    rows = _events("openai-responses:responses_items")
    assert [c["id"] for c in rows[1].tool_calls] == ["call_1", "call_2"]
    assert rows[1].reasoning == "call the tool"
    assert rows[2].tool_response == {
        "tool_call_id": "call_1",
        "name": "get_weather",
        "result": {"temp": 18},
    }


def test_plain_chat_list_stays_openai_chat(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    assert detect_format(path, path.read_text()) == "openai_chat"


def test_runstate_custom_and_program_calls_are_answered() -> None:
    report = import_file(FORMATS / "runstate_custom_program.json")
    assert report.stats["tool_calls"] == 3 and report.stats["unanswered_calls"] == 0
    session = Session.objects.get(id="openai-agents:runstate_custom_program")
    assert session.title == "Look up account-1"
    assert session.state["pending_session_write"]["session_id"] == "s-1"
    shown = _events(session.id)[-1]
    assert shown.state_delta == {"pending_session_write": session.state["pending_session_write"]}


def _mcp_run_state(*decisions: bool) -> dict[str, object]:
    agent = {"name": "ops"}
    request = {
        "type": "mcp_approval_request",
        "id": "mcpr_1",
        "name": "delete_repo",
        "arguments": "{}",
        "server_label": "gh",
    }
    items: list[dict[str, object]] = [
        {"type": "mcp_approval_request_item", "agent": agent, "raw_item": request}
    ]
    for approve in decisions:
        response = {
            "type": "mcp_approval_response",
            "approval_request_id": "mcpr_1",
            "approve": approve,
        }
        items.append({"type": "mcp_approval_response_item", "agent": agent, "raw_item": response})
    return {
        "$schemaVersion": "1.17",
        "current_agent": agent,
        "original_input": "clean up the old repo",
        "generated_items": items,
    }


@pytest.mark.parametrize(
    ("decisions", "verdict"),
    [
        ((), ("interrupted", "consumer_stopped", "awaiting the user: mcpr_1", 1)),
        ((True,), ("completed", "", "", 0)),
        ((False,), ("completed", "", "", 0)),
    ],
)
def test_runstate_mcp_approval_is_awaited_until_a_decision_answers_it(
    tmp_path: Path, decisions: tuple[bool, ...], verdict: tuple[str, str, str, int]
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(_mcp_run_state(*decisions)))
    report = import_file(path)
    turn = Turn.objects.get(session_id="openai-agents:mcp")
    got = (turn.status, turn.reason, turn.status_note, report.stats["pending_calls"])
    assert got == verdict
    assert report.stats["unanswered_calls"] == 0
    rows = _events("openai-agents:mcp")
    # A decision is the request's result, never a system message sent to the model.
    assert [e.role for e in rows] == ["user", "assistant", *(["tool"] if decisions else [])]
    if decisions:
        assert rows[2].tool_response == {
            "tool_call_id": "mcpr_1",
            "name": "delete_repo",
            "result": {"approve": decisions[0]},
        }


def test_runstate_newer_schema_is_refused_naming_the_newest(tmp_path: Path) -> None:
    path = tmp_path / "future.json"
    path.write_text(json.dumps({"$schemaVersion": "999", "untrusted": True}))
    code, _out, err = _run(str(path))
    assert code == 1
    assert "'999' is newer than the newest this importer reads (1.19)" in err
    assert not Session.objects.exists()


def test_swe_agent_observations_answer_the_previous_action() -> None:
    report = import_file(FORMATS / "swe_agent_no_function_calling.traj.json")
    assert report.stats["turns"] == 1 and report.stats["unanswered_calls"] == 0
    rows = _events("openai-chat:swe_agent_no_function_calling.traj")
    assert [(e.role, e.author) for e in rows] == [
        ("system", "primary"),
        ("system", "demonstration"),
        ("user", "user"),
        ("assistant", "primary"),
        ("tool", "environment"),
        ("assistant", "primary"),
        ("tool", "environment"),
    ]
    assert rows[3].tool_calls[0]["arguments"] == {"command": "find_file missing.py\n"}
    assert rows[4].tool_response["result"] == "Found 1 matches"  # type: ignore[index]


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        (
            [
                {
                    "timestamp": "2025-01-01T00:00:00Z",
                    "type": "event_msg",
                    "payload": {"type": "turn_aborted"},
                }
            ],
            "this file has only event_msg records",
        ),
        (
            [
                {
                    "timestamp": "2025-01-01T00:00:00Z",
                    "type": "event_msg",
                    "payload": {"type": "user_message", "message": "hi"},
                }
            ],
            "no response_item record",
        ),
    ],
)
def test_a_file_without_a_session_says_why_and_exits_1(
    tmp_path: Path, lines: list[dict[str, object]], reason: str
) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines))
    code, _out, err = _run(str(path))
    assert code == 1 and "no session found" in err and reason in err


def test_a_reimport_that_drops_events_needs_replace(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    messages = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]
    path.write_text(json.dumps(messages))
    import_file(path)
    path.write_text(json.dumps(messages[:1]))
    with pytest.raises(ImportRefusedError, match="has 2 stored events and this version 1"):
        import_file(path)
    assert Event.objects.count() == 2
    import_file(path, replace=True)
    assert Event.objects.count() == 1


def test_bad_values_are_refused_as_path_line_reason(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    records = [
        {"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "x1"}},
        {
            "timestamp": "2025-01-01T00:00:01Z",
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": 7},
        },
        {
            "timestamp": "2025-01-01T00:00:02Z",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "call_id": "c",
                "name": "shell",
                "arguments": "{}",
            },
        },
        {
            "timestamp": "2025-01-01T00:00:03Z",
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c", "output": [1e400]},
        },
    ]
    path.write_text("\n".join(json.dumps(r) for r in records).replace("Infinity", "1e400"))
    with pytest.raises(ImportRefusedError) as refused:
        import_file(path)
    assert str(refused.value) == f"{path}:0: event 3 holds a number out of range (like 1e400)"
    # A value of the wrong type is refused at its line.
    records[3] = {
        "timestamp": "2025-01-01T00:00:03Z",
        "type": "response_item",
        "payload": {"type": "reasoning", "summary": 5},
    }
    path.write_text("\n".join(json.dumps(r) for r in records))
    with pytest.raises(ImportRefusedError) as refused:
        import_file(path)
    assert str(refused.value).startswith(f"{path}:4: unreadable value (TypeError: ")
    assert "\n" not in str(refused.value)
    assert not Session.objects.exists()


def test_a_directory_import_goes_on_past_a_refused_file(tmp_path: Path) -> None:
    (tmp_path / "a_future.json").write_text(json.dumps({"$schemaVersion": "2.0"}))
    shutil.copy(FORMATS / "responses_items.json", tmp_path / "b.json")
    code, out, err = _run(str(tmp_path))
    assert code == 1
    assert "a_future.json: RunState $schemaVersion '2.0' is newer" in err
    assert "b.json: imported (openai_responses)" in out
    assert Session.objects.filter(id="openai-responses:b").exists()


def _shapes_in(fmt: str, shape: list[tuple[str, str]]) -> tuple[str, str]:
    """(file name, text) of `shape` — ("prompt", text), ("call", id) or ("say", text) — in
    format `fmt`."""
    if fmt == "codex_cli":
        records: list[dict[str, object]] = [
            {"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "cx"}}
        ]
        for n, (kind, value) in enumerate(shape, start=1):
            at = f"2025-01-01T00:00:{n:02d}Z"
            if kind == "call":
                payload: dict[str, object] = {
                    "type": "function_call",
                    "call_id": value,
                    "name": "shell",
                    "arguments": "{}",
                }
            else:
                role, part = (
                    ("user", "input_text") if kind == "prompt" else ("assistant", "output_text")
                )
                payload = {
                    "type": "message",
                    "role": role,
                    "content": [{"type": part, "text": value}],
                }
            records.append({"timestamp": at, "type": "response_item", "payload": payload})
        return "rollout.jsonl", "\n".join(json.dumps(r) for r in records)
    if fmt == "google_adk":
        events = [
            _adk_event(n, "user", {"text": value})
            if kind == "prompt"
            else _adk_event(n, "agent", _call(value, "f") if kind == "call" else {"text": value})
            for n, (kind, value) in enumerate(shape, start=1)
        ]
        return "adk.session.json", json.dumps({"id": "adk", "app_name": "app", "events": events})
    messages: list[dict[str, object]] = []
    for kind, value in shape:
        if kind == "prompt":
            messages.append({"role": "user", "content": value})
        elif kind == "say":
            messages.append({"role": "assistant", "content": value})
        elif fmt == "openai_chat":
            function = {"name": "f", "arguments": "{}"}
            call = {"id": value, "type": "function", "function": function}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif fmt == "anthropic_messages":
            block = {"type": "tool_use", "id": value, "name": "f", "input": {}}
            messages.append({"role": "assistant", "content": [block]})
        else:
            messages.append(
                {"type": "function_call", "call_id": value, "name": "f", "arguments": "{}"}
            )
    if fmt == "openai_responses":
        messages = [m if "type" in m else {"type": "message", **m} for m in messages]
    return f"{fmt}.json", json.dumps(messages)


TURN_SHAPES = {
    "start": (
        [("call", "X"), ("prompt", "first"), ("say", "hi")],
        [("completed", "", "left with an unknown tool outcome")],
    ),
    "middle": (
        [("prompt", "first"), ("call", "X"), ("prompt", "second"), ("say", "hi")],
        [("completed", "", "left with an unknown tool outcome"), ("completed", "", "")],
    ),
    "end": (
        [("prompt", "first"), ("say", "hi"), ("prompt", "second"), ("call", "X")],
        [("completed", "", ""), ("interrupted", "abandoned", "transcript ends inside")],
    ),
}


@pytest.mark.parametrize("where", sorted(TURN_SHAPES))
@pytest.mark.parametrize(
    "fmt",
    ["openai_chat", "anthropic_messages", "openai_responses", "codex_cli", "google_adk"],
)
def test_one_turn_rule_in_every_format(tmp_path: Path, fmt: str, where: str) -> None:
    shape, expected = TURN_SHAPES[where]
    name, text = _shapes_in(fmt, shape)
    path = tmp_path / name
    path.write_text(text)
    report = import_file(path)
    assert report.source_format == fmt
    turns = Turn.objects.filter(session_id=report.session_ids[0]).order_by("started_at", "id")
    got = [(t.status, t.reason, t.status_note) for t in turns]
    assert [(s, r) for s, r, _n in got] == [(s, r) for s, r, _n in expected]
    for (_s, _r, note), (_a, _b, prefix) in zip(got, expected, strict=True):
        assert note.startswith(prefix) and (prefix or not note)
    session = Session.objects.get(pk=report.session_ids[0])
    # The call left without a result before a later prompt blocks the session; the one
    # the transcript ends inside does not (its turn is interrupted).
    assert session.cannot_resume is (where != "end")


@pytest.mark.parametrize(
    "payload",
    [
        {"message": "Summary: the parser is written; tests remain."},
        {
            "message": "",
            "replacement_history": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "Summary: the parser is written"}],
                }
            ],
        },
    ],
)
def test_codex_compaction_is_a_marked_event_and_the_context_starts_at_it(
    tmp_path: Path, operator_client: Any, payload: dict[str, object]
) -> None:
    shape = [("prompt", "write the parser"), ("call", "c1"), ("say", "written")]
    _name, text = _shapes_in("codex_cli", shape)
    records = [json.loads(line) for line in text.splitlines()]
    records.insert(
        3,
        {
            "timestamp": "2025-01-01T00:00:02.500Z",
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        },
    )
    records.append({"timestamp": "2025-01-01T00:00:05Z", "type": "compacted", "payload": payload})
    records.append(
        {
            "timestamp": "2025-01-01T00:00:06Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "going on"}],
            },
        }
    )
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records))
    report = import_file(path)
    assert report.stats["turns"] == 1  # the summary is never a prompt
    compaction = Event.objects.get(session_id="cx", author="compaction")
    assert compaction.role == "user" and compaction.text.startswith(
        "Summary: the parser is written"
    )
    assert isinstance(compaction.raw, dict)
    assert compaction.raw["compaction"]["summarised_events"] == 4
    body = operator_client.get(reverse("sessions:context", args=["cx"])).content.decode()
    assert body.count("badge kind-compacted") == 4
    assert body.count("badge kind-kept") == 2  # the summary and what came after it
