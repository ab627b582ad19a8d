"""The live tail (`manage.py watch_transcripts`): real transcripts from the corpus appended
line by line into a watched folder end with exactly what a one-shot import stores."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from sessions_app.ingest import import_file
from sessions_app.ingest.tail import TranscriptTail
from sessions_app.ingest.tail_store import LocalSink
from sessions_app.models import Event, ImportedFile, Session, Turn
from tests.live.helpers import database_url_for_servers

CLAUDE = "claude-code/agentcmd__full-session-three.jsonl"
SESSION = "cfa1e878-62b5-4e40-b281-bbf9b250d766"  # CLAUDE's
CODEX = "codex-cli/agentcmd__rollout-2025-09-25T15-12-14-019982b8.jsonl"
ROOT = Path(__file__).resolve().parent.parent


def snapshot() -> dict[str, Any]:
    """Everything the comparison needs: sessions, turns with outcomes, events in order."""
    return {
        "sessions": sorted(
            Session.objects.values_list(
                "id", "title", "protocol_issue_count", "cannot_resume", "orphan_result_count"
            )
        ),
        "turns": sorted(
            Turn.objects.values_list(
                "id",
                "status",
                "reason",
                "status_note",
                "failure_code",
                "started_at",
                "finished_at",
            )
        ),
        "events": list(
            Event.objects.order_by("id").values_list(
                "session_id",
                "turn_id",
                "role",
                "source_id",
                "text",
                "reasoning",
                "tool_calls",
                "tool_response",
                "finish_reason",
                "created_at",
            )
        ),
        "tool_calls": sum(len(c) for c in Event.objects.values_list("tool_calls", flat=True)),
    }


def one_shot(path: Path) -> dict[str, Any]:
    """The snapshot of a one-shot import of `path`; the database is emptied after."""
    assert import_file(path).status == "imported"
    expected = snapshot()
    Session.objects.all().delete()
    ImportedFile.objects.all().delete()
    return expected


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


@pytest.mark.django_db
@pytest.mark.parametrize("name", [CLAUDE, CODEX])
def test_file_appended_line_by_line_ends_like_a_one_shot_import(
    corpus: Path, tmp_path: Path, name: str
) -> None:
    source = corpus / name
    watched = tmp_path / "watched"
    watched.mkdir()
    target = watched / source.name
    # The same path for both, so stored source paths agree.
    shutil.copy(source, target)
    expected = one_shot(target)
    target.unlink()

    tail = TranscriptTail([str(watched)], LocalSink(), idle_seconds=5, state_path=None)
    now = 0.0
    running_seen = 0
    for index, line in enumerate(lines_of(source)):
        with target.open("ab") as handle:
            # A line arrives in two writes: the half line waits for its newline.
            handle.write(line[: len(line) // 2])
            handle.flush()
            tail.poll(now)
            handle.write(line[len(line) // 2 :])
        now += 1.0
        tail.poll(now)
        statuses = list(Turn.objects.order_by("started_at", "id").values_list("status", flat=True))
        running_seen += statuses[-1:] == ["running"]
        if index > 2 and statuses:
            # Only the latest turn may show running while the file grows.
            assert "running" not in statuses[:-1]
    assert running_seen > 0
    tail.poll(now + 10)  # idle: the latest turn gets its outcome
    assert snapshot() == expected
    assert ImportedFile.objects.filter(sha256=tail.files[str(target.resolve())].state.sha256)
    # A one-shot import of the same bytes finds them imported.
    assert import_file(target).status == "already imported"


@pytest.mark.django_db
def test_rewritten_file_is_imported_whole_again(corpus: Path, tmp_path: Path) -> None:
    source = corpus / CLAUDE
    lines = lines_of(source)
    target = tmp_path / "s.jsonl"
    tail = TranscriptTail([str(tmp_path)], LocalSink(), idle_seconds=0, state_path=None)
    target.write_bytes(b"".join(lines))
    tail.poll(0)
    assert Event.objects.count() == 32
    # Truncated to its first 20 lines (size shrinks): read whole again.
    target.write_bytes(b"".join(lines[:20]))
    tail.poll(1)
    shorter = snapshot()
    Session.objects.all().delete()
    ImportedFile.objects.all().delete()
    assert import_file(target).status == "imported"
    assert snapshot() == shorter


@pytest.mark.django_db
def test_state_file_lets_a_restarted_watcher_skip_what_it_holds(
    corpus: Path, tmp_path: Path
) -> None:
    watched = tmp_path / "w"
    watched.mkdir()
    shutil.copy(corpus / CODEX, watched / "r.jsonl")
    state = tmp_path / "state.json"
    TranscriptTail([str(watched)], LocalSink(), idle_seconds=0, state_path=state).poll(0)
    before = snapshot()
    assert state.exists() and before["events"]
    again = TranscriptTail([str(watched)], LocalSink(), idle_seconds=0, state_path=state)
    assert again.poll(0) == 0
    assert snapshot() == before


@pytest.mark.django_db
def test_command_once_imports_a_folder_and_refuses_half_options(
    corpus: Path, tmp_path: Path
) -> None:
    shutil.copy(corpus / CLAUDE, tmp_path / "a.jsonl")
    state = tmp_path / "st.json"
    call_command("watch_transcripts", str(tmp_path), "--once", "--idle-seconds", "0",
                 "--state", str(state))  # fmt: skip
    assert Event.objects.count() == 32
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--to and --api-key go together"):
        call_command("watch_transcripts", str(tmp_path), "--to", "http://x")


@pytest.mark.django_db(transaction=True)
def test_watcher_subprocess_follows_a_growing_codex_rollout(corpus: Path, tmp_path: Path) -> None:
    source = corpus / CODEX
    watched = tmp_path / "w"
    watched.mkdir()
    target = watched / source.name
    shutil.copy(source, target)
    expected = one_shot(target)
    target.unlink()
    env = {**os.environ, "DATABASE_URL": database_url_for_servers()}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    child = subprocess.Popen(
        [sys.executable, "manage.py", "watch_transcripts", str(watched), "--poll", "0.05",
         "--idle-seconds", "1", "--state", str(tmp_path / "st.json")],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        lines = lines_of(source)
        for start in range(0, len(lines), 20):
            with target.open("ab") as handle:
                handle.write(b"".join(lines[start : start + 20]))
            time.sleep(0.1)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and snapshot() != expected:
            time.sleep(0.2)
        assert snapshot() == expected
    finally:
        child.terminate()
        output = child.communicate(timeout=30)[0]
    assert "Traceback" not in output, output


@pytest.mark.django_db
def test_watchers_hear_of_a_new_turn_before_its_events(corpus: Path, tmp_path: Path) -> None:
    """A page adds a live event into its turn's article: a turn and its first events read
    in one pass must reach watchers turn first (else those events have nowhere to go)."""
    source = lines_of(corpus / CLAUDE)
    target = tmp_path / "watched" / "session.jsonl"
    target.parent.mkdir()
    sink = LocalSink()
    heard: list[tuple[str, str]] = []

    async def turn(turn_id: str) -> None:
        heard.append(("turn", turn_id))

    async def event(stored: Any) -> None:
        heard.append(("event", stored.turn_id))

    sink.live.announce_turn = turn  # type: ignore[method-assign]
    sink.live.announce_event = event  # type: ignore[method-assign]
    tail = TranscriptTail([str(target.parent)], sink, idle_seconds=5, state_path=None)
    # Turn 2 begins at line 5: lines 5-9 arrive together (its prompt, a call, results).
    for now, chunk in enumerate([source[:5], source[5:10], source[10:]]):
        with target.open("ab") as handle:
            handle.write(b"".join(chunk))
        tail.poll(float(now))
    assert {turn_id for kind, turn_id in heard if kind == "event"} == {f"{SESSION}/turn-0002"}
    for kind, turn_id in heard:
        if kind == "event":
            assert ("turn", turn_id) in heard[: heard.index((kind, turn_id))], heard
