"""The live tail reads and decodes only what was appended (`ingest.tail`), re-imports a
rewritten file, and keeps the running / idle outcome rules; real corpus transcripts."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessions_app.ingest import import_file, normalise, reading
from sessions_app.ingest.redaction import core
from sessions_app.ingest.tail import TranscriptTail
from sessions_app.ingest.tail_store import LocalSink
from sessions_app.models import ImportedFile, Session, Turn
from tests.test_watch_transcripts import CLAUDE, CODEX, SESSION, lines_of, snapshot

SPOTTER = "claude-code/spotter__tool_heavy.jsonl"
EDGES = "claude-code/claude-code-log__edge_cases.jsonl"
#: What a change may read besides the appended bytes: the rewrite check's two windows.
CHECK = 2 * 64


class _CountedHandle:
    """A binary file handle that adds the bytes each read returns to `counts[-1]`."""

    def __init__(self, handle: Any, counts: list[int]) -> None:
        self.handle = handle
        self.counts = counts

    def __enter__(self) -> _CountedHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()

    def read(self, size: int = -1) -> bytes:
        data: bytes = self.handle.read(size)
        self.counts[-1] += len(data)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle, name)


def _count_reads(monkeypatch: pytest.MonkeyPatch, name: str, counts: list[int]) -> None:
    """Every byte read through `Path.open` from a file called `name` is counted."""
    real_open = Path.open

    def counting_open(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(self, mode, *args, **kwargs)
        return _CountedHandle(handle, counts) if self.name == name else handle

    monkeypatch.setattr(Path, "open", counting_open)


def _count_decodes(monkeypatch: pytest.MonkeyPatch, lines: set[str], counts: list[int]) -> None:
    """Every decode of one of `lines` (a whole line of the file) is counted, whichever
    module decodes it."""
    real: Callable[..., Any] = reading.decode

    def counting(text: str, long_numbers: bool = True) -> Any:
        if text in lines:
            counts[-1] += 1
        return real(text, long_numbers)

    monkeypatch.setattr(reading, "decode", counting)
    monkeypatch.setattr(normalise, "decode", counting)


def _count_redactions(monkeypatch: pytest.MonkeyPatch, counts: list[int]) -> None:
    real = core.secret_spans

    def counting(text: str) -> Any:
        counts[-1] += 1
        return real(text)

    monkeypatch.setattr(core, "secret_spans", counting)


def _watched(tmp_path: Path, source: Path) -> tuple[Path, dict[str, Any]]:
    """A watched folder and the snapshot of a one-shot import of `source` at the path
    the tail will follow (same stored source path); the database is emptied after."""
    watched = tmp_path / "watched"
    watched.mkdir()
    target = watched / source.name
    shutil.copy(source, target)
    assert import_file(target).status == "imported"
    expected = snapshot()
    Session.objects.all().delete()
    ImportedFile.objects.all().delete()
    target.unlink()
    return target, expected


@pytest.mark.django_db
@pytest.mark.parametrize("name", [CLAUDE, CODEX])
def test_a_change_reads_and_decodes_only_the_appended_lines(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    source = corpus / name
    lines = lines_of(source)
    target, expected = _watched(tmp_path, source)
    # The same redaction work a one-shot import does, counted first.
    redactions = [0]
    _count_redactions(monkeypatch, redactions)
    shutil.copy(source, tmp_path / "one-shot.jsonl")
    assert import_file(tmp_path / "one-shot.jsonl").status == "imported"
    one_shot_redactions = redactions[0]
    assert one_shot_redactions > 0  # the file has texts the prefilter cannot rule out
    Session.objects.all().delete()
    ImportedFile.objects.all().delete()

    read: list[int] = []
    decoded: list[int] = []
    _count_reads(monkeypatch, target.name, read)
    texts = {line.decode().rstrip("\r\n") for line in lines}
    _count_decodes(monkeypatch, texts, decoded)
    redactions[0] = 0
    tail = TranscriptTail([str(target.parent)], LocalSink(), idle_seconds=5, state_path=None)
    now = 0.0
    for line in lines:
        for piece, completes in ((line[: len(line) // 2], 0), (line[len(line) // 2 :], 1)):
            with target.open("ab") as handle:
                handle.write(piece)
            read.append(0)
            decoded.append(0)
            tail.poll(now)
            now += 0.5
            # Only the appended bytes (and the rewrite check's windows) are read; only
            # the line completed by this piece is decoded.
            assert len(piece) <= read[-1] <= len(piece) + CHECK
            assert decoded[-1] == completes
    read.append(0)
    tail.poll(now)  # nothing appended: nothing read
    assert read[-1] == 0
    tail.poll(now + 10)
    assert snapshot() == expected
    # Each text is redacted once, not once per change (at most a few times the one-shot
    # import's work; the growing message of the latest turn is redacted as it grows).
    assert redactions[0] <= 3 * one_shot_redactions, (redactions[0], one_shot_redactions)


@pytest.mark.django_db
@pytest.mark.parametrize("name", [SPOTTER, EDGES])
def test_more_claude_transcripts_appended_line_by_line_end_like_a_one_shot_import(
    corpus: Path, tmp_path: Path, name: str
) -> None:
    """Interrupt markers, commands, a summary record, bad lines, duplicate uuids."""
    source = corpus / name
    target, expected = _watched(tmp_path, source)
    tail = TranscriptTail([str(target.parent)], LocalSink(), idle_seconds=5, state_path=None)
    now = 0.0
    for line in lines_of(source):
        with target.open("ab") as handle:
            handle.write(line[:7])
            handle.flush()
            tail.poll(now)
            handle.write(line[7:])
        now += 1.0
        tail.poll(now)
    tail.poll(now + 10)
    assert snapshot() == expected


def _reimported(target: Path, tail: TranscriptTail, now: float) -> None:
    """After a poll at `now`, the database holds what a one-shot import of `target` does."""
    tail.poll(now)
    tailed = snapshot()
    Session.objects.all().delete()
    ImportedFile.objects.all().delete()
    assert import_file(target).status == "imported"
    assert tailed == snapshot()


@pytest.mark.django_db
def test_a_file_rewritten_in_place_and_grown_is_imported_whole_again(
    corpus: Path, tmp_path: Path
) -> None:
    """Same inode, larger than what was read: its first bytes changed."""
    claude, codex = lines_of(corpus / CLAUDE), lines_of(corpus / CODEX)
    target = tmp_path / "s.jsonl"
    tail = TranscriptTail([str(tmp_path)], LocalSink(), idle_seconds=0, state_path=None)
    target.write_bytes(b"".join(claude[:20]))
    tail.poll(0)
    inode = target.stat().st_ino
    with target.open("r+b") as handle:  # rewritten in place: another transcript
        handle.write(b"".join(codex))
    assert target.stat().st_ino == inode
    _reimported(target, tail, 1)
    assert Session.objects.get().source_format == "codex_cli"


@pytest.mark.django_db
def test_a_file_whose_last_line_was_replaced_is_imported_whole_again(
    corpus: Path, tmp_path: Path
) -> None:
    """Same first bytes, larger: the bytes just before the new ones changed."""
    lines = lines_of(corpus / CLAUDE)
    target = tmp_path / "s.jsonl"
    tail = TranscriptTail([str(tmp_path)], LocalSink(), idle_seconds=0, state_path=None)
    target.write_bytes(b"".join(lines[:20]))
    tail.poll(0)
    # Line 20 replaced by lines 21 and 22 (longer), then the rest.
    target.write_bytes(b"".join(lines[:19] + lines[20:]))
    _reimported(target, tail, 1)
    assert Turn.objects.exists()


@pytest.mark.django_db
def test_truncated_then_grown_past_its_old_size_between_two_polls(
    corpus: Path, tmp_path: Path
) -> None:
    lines = lines_of(corpus / CODEX)
    target = tmp_path / "r.jsonl"
    tail = TranscriptTail([str(tmp_path)], LocalSink(), idle_seconds=0, state_path=None)
    target.write_bytes(b"".join(lines[:30]))
    tail.poll(0)
    target.write_bytes(b"".join(lines[:3] + lines[40:]))
    _reimported(target, tail, 1)


@pytest.mark.django_db
def test_latest_turn_runs_while_the_file_grows_and_gets_its_outcome_when_idle(
    corpus: Path, tmp_path: Path
) -> None:
    """The Claude transcript ends inside three tool calls: running while it grows,
    interrupted/abandoned once idle; an earlier turn is never shown running."""
    lines = lines_of(corpus / CLAUDE)
    target = tmp_path / "s.jsonl"
    tail = TranscriptTail([str(tmp_path)], LocalSink(), idle_seconds=30, state_path=None)
    target.write_bytes(b"".join(lines[:-1]))
    tail.poll(0)
    with target.open("ab") as handle:
        handle.write(lines[-1])
    tail.poll(20)  # grew 0 s ago
    turns = list(Turn.objects.filter(session_id=SESSION).order_by("id"))
    assert turns[-1].status == "running"
    assert all(t.status != "running" for t in turns[:-1])
    tail.poll(49)  # idle for 29 s: still running
    assert Turn.objects.get(pk=turns[-1].pk).status == "running"
    tail.poll(51)
    last = Turn.objects.get(pk=turns[-1].pk)
    assert (last.status, last.reason) == ("interrupted", "abandoned")
    assert last.status_note.startswith("transcript ends inside tool call ")


@pytest.mark.django_db
def test_an_interrupt_marker_is_shown_at_once_while_the_file_still_grows(
    corpus: Path, tmp_path: Path
) -> None:
    """spotter's line 17 is "[Request interrupted by user]": its turn is
    interrupted/canceled as soon as the line is read, not after the idle time."""
    lines = lines_of(corpus / SPOTTER)
    target = tmp_path / "s.jsonl"
    tail = TranscriptTail([str(tmp_path)], LocalSink(), idle_seconds=30, state_path=None)
    target.write_bytes(b"".join(lines[:18]))
    tail.poll(0)
    last = Turn.objects.order_by("-id").first()
    assert last is not None
    assert (last.status, last.reason) == ("interrupted", "canceled")
