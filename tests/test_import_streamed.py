"""A large Claude Code file is imported while it is parsed (`sessions_app.ingest.streaming`)
and stores exactly the rows the whole-session path stores; the events it holds at once
stay bounded by a batch, whatever the file's size."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.forms.models import model_to_dict

from sessions_app.export.build import build_export
from sessions_app.ingest import import_file
from sessions_app.ingest.claude_stream import BATCH_EVENTS
from sessions_app.ingest.streamed import SessionStream
from sessions_app.models import Event, ImportedFile, Session, Turn
from tests.claude_lines import Lines
from todos_app.models import TodoItem, TodoList

pytestmark = pytest.mark.django_db

WHOLE = 1 << 40  # no file is that large: the whole-session path
STREAMED = 0  # every Claude Code file streams


def _stored(session_ids: list[str]) -> dict[str, Any]:
    """Every stored row of these sessions, ids made relative (the n-th event of a
    session), and each session's export document (event ids made relative too)."""
    out: dict[str, Any] = {}
    for sid in sorted(session_ids):
        session = Session.objects.get(pk=sid)
        row = model_to_dict(session)
        ids = list(Event.objects.filter(session_id=sid).order_by("id").values_list("id", flat=True))
        position = {event_id: n for n, event_id in enumerate(ids)}
        events = []
        for event in Event.objects.filter(session_id=sid).order_by("id"):
            values = model_to_dict(event)
            values.pop("id")
            events.append(values)
        turns = [model_to_dict(t) for t in Turn.objects.filter(session_id=sid).order_by("id")]
        todo = TodoList.objects.filter(session_id=sid).first()
        items = (
            list(TodoItem.objects.filter(todo_list=todo).order_by("position").values())
            if todo
            else None
        )
        document = build_export(session)
        document.pop("exported_at")
        for event in document["events"]:
            event["id"] = position[event["id"]]
        out[sid] = {
            "session": row,
            "turns": turns,
            "events": events,
            "todo": (todo.version, todo.updated_at) if todo else None,
            "items": [
                {k: v for k, v in i.items() if k not in ("id", "todo_list_id")} for i in items
            ]
            if items is not None
            else None,
            "export": document,
        }
    return out


def _same(streamed: dict[str, Any], whole: dict[str, Any], path: Path) -> None:
    """Assert equal stored rows, naming the first part (and row) that differs."""
    assert streamed.keys() == whole.keys(), path
    for sid, parts in whole.items():
        for part, value in parts.items():
            got = streamed[sid][part]
            if isinstance(value, list) and isinstance(got, list) and len(value) == len(got):
                for n, (mine, theirs) in enumerate(zip(got, value, strict=True)):
                    assert mine == theirs, (path, sid, part, n)
            assert got == value, (path, sid, part)


def _both_ways(path: Path, settings: Any) -> tuple[Any, Any, dict[str, Any], dict[str, Any]]:
    settings.AGENTOPS_IMPORT_STREAM_BYTES = WHOLE
    whole = import_file(path)
    ids = list(whole.session_ids)
    whole_rows = _stored(ids)
    Session.objects.filter(id__in=ids).delete()
    ImportedFile.objects.all().delete()
    settings.AGENTOPS_IMPORT_STREAM_BYTES = STREAMED
    streamed = import_file(path)
    return whole, streamed, whole_rows, _stored(list(streamed.session_ids))


def _large_transcript(path: Path, turns: int) -> None:
    """A transcript with every shape the turn rule and the page facts look at: merged API
    messages, parallel calls, results in a later turn, calls left open and awaiting the
    user, todo writes, interrupts, a rewind, a compaction, a credential and a NUL."""
    lines = Lines("big-stream")
    branch_point = ""
    for n in range(turns):
        if n == 20:
            branch_point = lines.last  # the rewind below starts a sibling of prompt 20
        lines.prompt(f"question {n}" + (" token ghp_" + "a1B2" * 9 if n == 7 else ""))
        lines.say(f"m{n}", f"looking at {n}")
        lines.use(f"m{n}", f"c{n}a")  # same message id: merged into one event
        lines.use(f"m{n}", f"c{n}b", name="Read")
        lines.result(f"c{n}a", f"out {n}\u0000" if n == 11 else f"out {n}")
        if n % 9 != 4:  # sometimes the second call is answered a turn later, or never
            lines.result(f"c{n}b")
        elif n % 2 == 0 and n > 0:
            lines.result(f"c{n - 9}b")
        if n % 13 == 5:
            lines.use(f"q{n}", f"ask{n}", name="AskUserQuestion")
        if n % 17 == 3:
            lines.todo_write(f"t{n}", f"todo{n}", [{"content": f"step {n}", "status": "pending"}])
            lines.result(f"todo{n}")
        if n % 29 == 8:
            lines.prompt("[Request interrupted by user]")
        if n == 60:
            lines.compaction("Summary: step 59 is pending")
        lines.say(f"e{n}", f"done {n}")
    # A rewind: the person edits the prompt of turn 21; the first branch is abandoned.
    lines.prompt("question 20, again", parent=branch_point)
    lines.say("rewound", "second branch")
    lines.use("last", "dangling")  # the transcript ends inside a call
    start = datetime(2026, 2, 1, tzinfo=UTC)
    for n, record in enumerate(lines.records):  # one second apart, however many
        record["timestamp"] = (start + timedelta(seconds=n)).isoformat()
    lines.write(path)


def test_a_streamed_import_stores_the_rows_the_whole_session_path_stores(
    tmp_path: Path, settings: Any
) -> None:
    path = tmp_path / "big.jsonl"
    _large_transcript(path, 400)
    whole, streamed, whole_rows, streamed_rows = _both_ways(path, settings)
    assert streamed.stats == whole.stats
    assert streamed.problems == whole.problems
    assert streamed.session_ids == whole.session_ids
    _same(streamed_rows, whole_rows, path)
    # The shapes were there: open calls, an abandoned branch, a redaction, a todo list.
    session = whole_rows["big-stream"]
    assert session["session"]["protocol_issue_count"] > 0
    assert session["session"]["cannot_resume"] is True
    assert whole.stats["unanswered_calls"] > 0 and whole.stats["pending_calls"] > 0
    assert any(e["archived_at"] is not None for e in session["events"])
    assert "ghp_" not in json.dumps(session["export"])
    assert session["items"]


def test_every_corpus_claude_file_streams_to_the_same_rows(corpus: Path, settings: Any) -> None:
    files = sorted((corpus / "claude-code").rglob("*.jsonl"))
    assert files
    for path in files:
        whole, streamed, whole_rows, streamed_rows = _both_ways(path, settings)
        assert (streamed.stats, streamed.problems) == (whole.stats, whole.problems), path
        _same(streamed_rows, whole_rows, path)
        Session.objects.all().delete()
        ImportedFile.objects.all().delete()


def test_a_streamed_import_holds_a_bounded_number_of_events_at_once(
    tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.AGENTOPS_IMPORT_STREAM_BYTES = STREAMED
    held: list[int] = []
    monkeypatch.setattr(SessionStream, "watch", staticmethod(held.append))
    for turns in (300, 3000):
        path = tmp_path / f"t{turns}.jsonl"
        _large_transcript(path, turns)
        held.clear()
        report = import_file(path)
        assert report.stats["events"] > 5 * BATCH_EVENTS or turns == 300
        # Right after each hand-over, what stays held is what may still change: at most
        # one API message's event, whatever the size of the file.
        assert held and max(held) <= 1, (turns, max(held))
        Session.objects.all().delete()
