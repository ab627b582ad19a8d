"""`import_sessions`: one transaction per file, strict mode, re-import, errors, variants."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.ingest import import_file
from sessions_app.models import Event, ImportedFile, Session, Turn
from todos_app.models import TodoItem

pytestmark = pytest.mark.django_db

EDGE = "claude-code/claude-code-log__edge_cases.jsonl"
ADK = "google-adk/adk-samples__personalized-shopping__text_search_floral_dress.session.json"


def _counts() -> tuple[int, int, int, int, int]:
    return (
        Session.objects.count(),
        Turn.objects.count(),
        Event.objects.count(),
        TodoItem.objects.count(),
        ImportedFile.objects.count(),
    )


def test_edge_cases_report_each_bad_line_on_stderr(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = corpus / EDGE
    call_command("import_sessions", str(path), "--no-progress")
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines == [
        f"{path}:10: message has no 'content' (found 'contenst')",
        f"{path}:11: missing or invalid 'timestamp' (found 'timesstamp')",
        f"{path}:13: not a JSON object (got str)",
        f"{path}:14: object has no 'type'",
        f"{path}:15: not a JSON object (got int)",
        f"{path}:16: not a JSON object (got list)",
        f"{path}:18: message.content[0] is not an object",
    ]
    assert "3 turns, 11 events, 3 tool calls, 2 unanswered calls" in captured.out
    assert "7 skipped lines" in captured.out


def test_strict_refuses_file_and_leaves_database_unchanged(corpus: Path) -> None:
    call_command("import_sessions", str(corpus / ADK), "--no-progress")
    before = _counts()
    with pytest.raises(CommandError) as excinfo:
        call_command("import_sessions", str(corpus / EDGE), "--strict", "--no-progress")
    assert "refused" in str(excinfo.value)
    assert _counts() == before
    assert not Session.objects.filter(id="edge_cases").exists()


def test_reimport_same_content_does_nothing(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    call_command("import_sessions", str(corpus / EDGE), "--no-progress")
    first = _counts()
    capsys.readouterr()
    call_command("import_sessions", str(corpus / EDGE), "--no-progress")
    assert "already imported" in capsys.readouterr().out
    assert _counts() == first


def test_new_file_version_replaces_its_sessions(corpus: Path, tmp_path: Path) -> None:
    source = corpus / "claude-code/spotter__tool_heavy.jsonl"
    copy = tmp_path / "session.jsonl"
    lines = source.read_text().splitlines()
    copy.write_text("\n".join(lines[:18]) + "\n")  # up to the first interrupt marker
    assert import_file(copy).stats["turns"] == 1
    copy.write_text("\n".join(lines) + "\n")
    report = import_file(copy)
    assert report.replaced == ["d6e0bada-1959-4eec-a9d2-0bfade768d8f"]
    assert Session.objects.count() == 1
    assert Turn.objects.count() == 2
    assert Event.objects.count() == 17  # one event per API message
    assert ImportedFile.objects.count() == 1


def test_missing_path_exits_2_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(CommandError) as excinfo:
        call_command("import_sessions", str(tmp_path / "nope.jsonl"))
    assert excinfo.value.returncode == 2
    assert "\n" not in str(excinfo.value)
    assert "no such file or directory" in str(excinfo.value)


def test_unknown_format_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "thing.json"
    path.write_text(json.dumps({"hello": "world"}))
    with pytest.raises(CommandError) as excinfo:
        call_command("import_sessions", str(path))
    assert excinfo.value.returncode == 2
    assert "\n" not in str(excinfo.value)
    assert "unknown format" in str(excinfo.value)
    assert Session.objects.count() == 0


def test_forced_format_that_does_not_fit_exits_2(corpus: Path) -> None:
    with pytest.raises(CommandError) as excinfo:
        call_command("import_sessions", str(corpus / ADK), "--format", "openai_agents")
    assert excinfo.value.returncode == 2


def _camel(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): _camel(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def test_adk_camel_case_variant_imports_the_same_counts(corpus: Path, tmp_path: Path) -> None:
    snake = corpus / ADK
    data = json.loads(snake.read_text())
    camel = _camel(data)
    # State keys are the application's own data, not ADK field names: keep them.
    camel["state"] = data["state"]
    for event, original in zip(camel["events"], data["events"], strict=True):
        if original.get("actions", {}).get("state_delta"):
            event["actions"]["stateDelta"] = original["actions"]["state_delta"]
    assert "appName" in camel and "invocationId" in camel["events"][0]
    path = tmp_path / "camel.session.json"
    path.write_text(json.dumps(camel))
    snake_stats = import_file(snake).stats
    Session.objects.all().delete()
    ImportedFile.objects.all().delete()
    camel_stats = import_file(path).stats
    assert camel_stats == snake_stats
    assert Event.objects.filter(state_delta__has_key="_time").count() == 10


def test_duplicate_uuid_is_reported_and_skipped(tmp_path: Path) -> None:
    def line(uuid: str, text: str, ts: str) -> str:
        return json.dumps(
            {
                "type": "user",
                "uuid": uuid,
                "sessionId": "dup-session",
                "timestamp": ts,
                "message": {"role": "user", "content": text},
            }
        )

    path = tmp_path / "dup.jsonl"
    path.write_text(
        "\n".join(
            [
                line("u1", "first", "2025-01-01T00:00:00Z"),
                line("u1", "again", "2025-01-01T00:00:01Z"),
                line("u2", "second", "2025-01-01T00:00:02Z"),
            ]
        )
    )
    report = import_file(path)
    assert [str(p) for p in report.problems] == [f"{path}:2: duplicate uuid 'u1' (first at line 1)"]
    assert list(Event.objects.values_list("text", flat=True)) == ["first", "second"]


def test_import_refreshes_resume_status(corpus: Path) -> None:
    import_file(corpus / EDGE)
    import_file(corpus / "claude-code/agentcmd__full-session-three.jsonl")
    # Edge cases: the MultiEdit call of a *completed* turn has no result (its result line
    # is malformed), so the next run would be refused; plus the final TodoWrite call.
    edge = Session.objects.get(id="edge_cases")
    assert (edge.protocol_issue_count, edge.cannot_resume) == (2, True)
    # full-session-three ends inside three calls of an interrupted/abandoned turn: one
    # issue, but the projector cuts that turn, so the session can resume.
    full = Session.objects.get(id="cfa1e878-62b5-4e40-b281-bbf9b250d766")
    assert (full.protocol_issue_count, full.cannot_resume) == (1, False)


def test_codex_turn_aborted_and_update_plan(tmp_path: Path) -> None:
    """Synthetic rollout (the corpus file has neither): interrupt marker and todo writes."""

    def rec(ts: int, kind: str, payload: dict[str, Any]) -> str:
        stamp = f"2025-09-25T21:00:{ts:02d}Z"
        return json.dumps({"timestamp": stamp, "type": kind, "payload": payload})

    plan = [{"step": "Read code", "status": "completed"}, {"step": "Fix", "status": "pending"}]
    lines = [
        rec(0, "session_meta", {"id": "codex-synthetic", "timestamp": "2025-09-25T21:00:00Z"}),
        rec(
            1,
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Fix the bug"}],
            },
        ),
        rec(
            2,
            "response_item",
            {
                "type": "function_call",
                "name": "update_plan",
                "call_id": "c1",
                "arguments": json.dumps({"plan": plan[:1]}),
            },
        ),
        rec(3, "response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}),
        rec(
            4,
            "response_item",
            {
                "type": "function_call",
                "name": "update_plan",
                "call_id": "c2",
                "arguments": json.dumps({"plan": plan}),
            },
        ),
        rec(5, "response_item", {"type": "function_call_output", "call_id": "c2", "output": "ok"}),
        rec(6, "event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
        rec(
            7,
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Go on"}],
            },
        ),
        rec(
            8,
            "response_item",
            {"type": "function_call", "name": "shell", "call_id": "c3", "arguments": ""},
        ),
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(lines) + "\n")
    report = import_file(path)
    assert report.source_format == "codex_cli"
    assert report.stats["todo_items"] == 2
    turns = list(Turn.objects.filter(session_id="codex-synthetic"))
    assert [(t.status, t.reason, t.status_note) for t in turns] == [
        ("interrupted", "canceled", "turn_aborted (interrupted) at line 7"),
        ("interrupted", "abandoned", "transcript ends inside tool call c3"),
    ]
    items = TodoItem.objects.filter(todo_list__session_id="codex-synthetic")
    assert [(i.content, i.status) for i in items] == [
        ("Read code", "completed"),
        ("Fix", "pending"),
    ]
    assert items[0].todo_list.version == 2
    last = Event.objects.filter(session_id="codex-synthetic").last()
    assert last is not None and last.tool_calls[0]["arguments"] == {}


def test_a_bad_file_among_several_stops_the_run_before_anything_is_imported(
    corpus: Path, tmp_path: Path
) -> None:
    unknown = tmp_path / "shape.json"
    unknown.write_text('{"hello": "world"}')
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    good = corpus / "claude-code/spotter__tool_heavy.jsonl"
    for bad, message in ((unknown, "unknown format"), (empty, "the file is empty")):
        with pytest.raises(CommandError) as refused:
            call_command("import_sessions", str(good), str(bad), "--no-progress")
        assert refused.value.returncode == 2 and message in str(refused.value)
        assert "\n" not in str(refused.value)
    assert not Session.objects.exists()


def test_sources_without_timestamps_take_times_from_the_file(corpus: Path, tmp_path: Path) -> None:
    """A first user saw "Created 2000-01-01" and "26 years ago" on chat imports."""
    source = corpus / "openai-chat-swe-agent/swe-agent__6e44b9__sweagenttestrepo-1c2844.traj.json"
    copy = tmp_path / source.name
    copy.write_bytes(source.read_bytes())
    written = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    os.utime(copy, (written.timestamp(), written.timestamp()))
    session = Session.objects.get(pk=import_file(copy).session_ids[0])
    assert session.created_at == written
    first = Event.objects.filter(session_id=session.id).order_by("id").first()
    assert first is not None and first.created_at == written
