"""Imports read their input line by line and, on SQLite, hand the write lock back between
chunks (`sessions_app.ingest.reading`, `sessions_app.ingest.chunked`)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.db import connection

from sessions_app.ingest import ImportRefusedError, chunked, files, import_file
from sessions_app.ingest.reading import SourceLines, loads
from sessions_app.models import Event, ImportedFile, Session, Turn
from tests.claude_lines import Lines
from tests.factories import make_session

sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's one writer")


def _transcript(tmp_path: Path, prompts: int) -> Path:
    lines = Lines("chunked")
    for n in range(prompts):
        lines.prompt(f"question {n}")
        lines.say(f"m{n}", f"answer {n}")
    path = tmp_path / "chunked.jsonl"
    lines.write(path)
    return path


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_an_import_longer_than_the_lock_limit_lets_another_writer_in_between_chunks(
    tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.AGENTOPS_IMPORT_LOCK_MS = 0  # every step over the limit: commit after each
    path = _transcript(tmp_path, 1500)  # 3,000 events: three batches of rows
    writes: list[str] = []

    def another_writer(_seconds: float) -> None:
        # A writer that does not wait at all: it gets the lock only if the import let go.
        other = sqlite3.connect(connection.settings_dict["NAME"], timeout=0)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.rollback()
            writes.append("got the lock")
        finally:
            other.close()

    monkeypatch.setattr(
        chunked, "time", SimpleNamespace(monotonic=time.monotonic, sleep=another_writer)
    )
    report = import_file(path)
    assert report.status == "imported"
    # replacement, session row, 2 turn batches, 3 event batches, todo list, file record
    assert len(writes) >= 7, writes
    assert Event.objects.filter(session_id="chunked").count() == 3000
    assert Turn.objects.filter(session_id="chunked").count() == 1500
    assert ImportedFile.objects.filter(session_ids=["chunked"]).exists()


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_chunked_import_that_fails_in_a_later_chunk_leaves_nothing(
    tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.AGENTOPS_IMPORT_LOCK_MS = 0
    monkeypatch.setattr(chunked, "YIELD_SECONDS", 0)
    path = _transcript(tmp_path, 1500)

    def fail(_ids: Any) -> int:
        raise ValueError("late failure")

    monkeypatch.setattr(files, "link_subagents", fail)
    with pytest.raises(ImportRefusedError, match="late failure"):
        import_file(path)
    assert not Session.objects.filter(id="chunked").exists()
    assert not Event.objects.filter(session_id="chunked").exists()
    assert not Turn.objects.filter(session_id="chunked").exists()
    assert not ImportedFile.objects.exists()


def _steps(count: int, done: list[int]) -> Iterator[None]:
    for n in range(count):
        make_session(f"step-{n}")
        done.append(n)
        yield


@pytest.mark.django_db(transaction=True)
def test_steps_commit_in_chunks_only_on_sqlite(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.AGENTOPS_IMPORT_LOCK_MS = 0
    monkeypatch.setattr(chunked, "YIELD_SECONDS", 0)
    done: list[int] = []
    committed = chunked.write_in_bounded_transactions(_steps(4, done), undo=lambda: None)
    assert done == [0, 1, 2, 3]
    # SQLite: a transaction per step (+ the last, empty one); PostgreSQL: one.
    assert committed == (5 if connection.vendor == "sqlite" else 1)


@pytest.mark.django_db
def test_steps_inside_a_callers_transaction_stay_in_it(settings: Any) -> None:
    settings.AGENTOPS_IMPORT_LOCK_MS = 0
    done: list[int] = []
    assert chunked.write_in_bounded_transactions(_steps(3, done), undo=lambda: None) == 1
    assert Session.objects.filter(id__startswith="step-").count() == 3


@pytest.mark.django_db
def test_an_import_within_the_lock_limit_is_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commits: list[int] = []
    real = chunked.write_in_bounded_transactions

    def counted(*args: Any, **kwargs: Any) -> int:
        commits.append(real(*args, **kwargs))
        return commits[-1]

    monkeypatch.setattr(files, "write_in_bounded_transactions", counted)
    import_file(_transcript(tmp_path, 5))
    assert commits == [1]


LINES = [
    '{"a": 1}',
    '{"big": 123456789012345678901234567890, "neg": -9223372036854775809}',
    '{"n": NaN, "i": Infinity, "e": 1e400, "tiny": 2.5e-400}',
    '{"s": "\\ud800 lone", "nul": "\\u0000", "u": "\\u00e9"}',
    '{"dup": 1, "dup": 2}',
    "[" * 950 + "]" * 950,
    # The shortest texts `needs_stdlib` must still scan (shorter ones are not scanned).
    "-9223372036854775809",
    "99999999999999999999",
    "9999999999999999999",
    "[" * 900 + "]" * 900,
    "\ufeff{}",
    "not json",
    "",
]


@pytest.mark.parametrize("text", LINES)
def test_loads_reads_what_the_standard_library_reads(text: str) -> None:
    try:
        expected: Any = json.loads(text)
    except (ValueError, RecursionError) as exc:
        with pytest.raises(type(exc)) as raised:
            loads(text)
        assert str(raised.value) == str(exc)  # the standard library's message
        return
    got = loads(text)
    assert json.dumps(got) == json.dumps(expected)
    assert type(got) is type(expected)


@pytest.mark.parametrize("block_bytes", [1, 3, 7, 1 << 20])
def test_source_lines_split_as_the_whole_text_splits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_bytes: int
) -> None:
    monkeypatch.setattr(SourceLines, "BLOCK_BYTES", block_bytes)
    path = tmp_path / "mixed.jsonl"
    raw = "a\r\nb\rc\n\nd\u2028e\x85f\n\xe2\x82 broken\ng".encode("utf-8", "surrogatepass")
    raw = raw.replace("\xe2\x82".encode(), b"\xe2\x82")  # a truncated UTF-8 sequence
    path.write_bytes(raw)
    expected = path.read_text(encoding="utf-8", errors="replace").splitlines()
    assert list(SourceLines(path)) == expected
