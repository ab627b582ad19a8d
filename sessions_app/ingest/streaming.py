"""Importing a large Claude Code file or Codex CLI rollout while it is parsed: memory
stays flat with the file's size (README, "Importing transcripts").

`import_file` takes this path for a Claude Code or Codex CLI JSON Lines file of at least
``AGENTOPS_IMPORT_STREAM_BYTES`` (`streamable`); every other file, and the cases below,
take the whole-session path (`files.parse_file`, then `files.store_result`), which gives
the same stored rows. The file is read twice (a `FileStream`: `claude_stream`,
`codex_stream`): once for what needs all of it, then again while its sessions are
written, a batch of settled events and the turns that closed at a time
(`chunked.write_in_steps`: each batch is parsed and adapted outside any transaction and
written in one of its own on SQLite, so dashboard writes get the lock in between). Once
every event is stored, each session's resume status and the inspector's marks are worked
out from the stored rows a page at a time (`store.resume_paged`), and its header (title,
times, model, todo list) is completed.

The whole-session path is kept, because it decides before it writes, for a file that
cannot be streamed honestly or whose refusal must come before anything is written: a file
with no usable record, a session id `session_id_problem` refuses, a number no column
holds (`SourceFacts.may_hold_non_finite`), `--strict` with skipped lines, or sessions
that exist already without ``--replace`` (the lost-history check counts the new
version's events first). A value refused while streaming deletes what was written (the
sessions it replaced are not restored, as for any chunked import).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Protocol

from django.conf import settings
from django.db import DataError, IntegrityError

from sessions_app.ids import session_id_problem
from sessions_app.ingest.chunked import write_in_steps
from sessions_app.ingest.claude_stream import read_claude_stream
from sessions_app.ingest.codex_stream import read_codex_stream
from sessions_app.ingest.detect import DETECTION_LINES, detect_format
from sessions_app.ingest.errors import ImportRefusedError
from sessions_app.ingest.normalise import at_line, current_line, synthetic_times_from
from sessions_app.ingest.parsed import ImportProblem, ParsedEvent, ParsedSession, ParsedTurn
from sessions_app.ingest.reading import SourceLines, head_text
from sessions_app.ingest.replace import plan_replacement
from sessions_app.ingest.streamed import SessionStream
from sessions_app.ingest.subagents import link_subagents
from sessions_app.ingest.summary import TOTALS, ImportReport
from sessions_app.ingest.writer import (
    PreparedRows,
    delete_sessions,
    event_rows,
    execute_rows,
    insert_session_row,
    prepare_rows,
    stored_path,
    turn_rows,
)
from sessions_app.models import Event, ImportedFile, Session, Turn
from sessions_app.signals import parsed_session_written
from sessions_app.store import EVENT_INSERT_COLUMNS, TURN_COLUMNS
from sessions_app.store.page_facts import write_marks
from sessions_app.store.resume_paged import PagedFacts, kept_status_update, paged_resume_facts

__all__ = ["FileStream", "store_streamed", "streamable"]

#: Errors a parser raises on a value it did not expect (`files.BAD_VALUE_ERRORS`).
_BAD_VALUES = (ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError)


class FileStream(Protocol):
    """A file after its first reading, ready to be written while it is read again."""

    @property
    def source_format(self) -> str:
        """The file's format (`Session.SourceFormat`)."""

    @property
    def lines(self) -> SourceLines:
        """The file's lines (their `facts` complete after the first reading)."""

    @property
    def problems(self) -> list[ImportProblem]:
        """Every line the import skips, as the whole parse reports them."""

    @property
    def headers(self) -> list[ParsedSession]:
        """Each session's first header, in order (once `start` ran)."""

    @property
    def streams(self) -> Sequence[SessionStream]:
        """Each session's stream, in the order of `headers` (once `start` ran)."""

    def start(self) -> None:
        """Set up each session's parser and stream, and `headers`."""

    def pieces(self) -> Iterator[tuple[SessionStream, list[ParsedEvent], list[ParsedTurn]]]:
        """(session, events, turns) to store, in order, a batch at a time."""

    def finals(self) -> list[tuple[SessionStream, ParsedSession]]:
        """Each session's final header, once `pieces` ran to the end."""


#: The first reading of each format that streams (None: the whole parse decides).
READERS: dict[str, Callable[[Path], FileStream | None]] = {
    Session.SourceFormat.CLAUDE_CODE: read_claude_stream,
    Session.SourceFormat.CODEX_CLI: read_codex_stream,
}


def streamable(path: Path, source_format: str, *, strict: bool, replace: bool) -> FileStream | None:
    """The file after its first reading when it takes the streamed path (see the module
    doc), else None (nothing written; the whole-session path reads it again)."""
    if path.stat().st_size < settings.AGENTOPS_IMPORT_STREAM_BYTES or path.suffix in (
        ".db",
        ".json",
    ):
        return None
    if source_format == "auto":
        try:  # the first lines decide a JSON Lines format: the file is not read whole here
            source_format = detect_format(path, head_text(path, DETECTION_LINES)) or ""
        except RecursionError:
            return None
    reader = READERS.get(source_format)
    if reader is None:
        return None
    at_line(0)
    try:
        with synthetic_times_from(_written(path)):
            stream = reader(path)
    except (RecursionError, *_BAD_VALUES):
        return None  # the whole parse refuses it, with its reason
    if stream is None or stream.lines.facts.may_hold_non_finite:
        return None
    if strict and stream.problems:
        return None
    stream.start()
    ids = [header.id for header in stream.headers]
    if any(session_id_problem(session_id) for session_id in ids):
        return None
    if not replace and Session.objects.filter(id__in=ids).exists():
        return None
    return stream


def _written(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)


def store_streamed(path: Path, digest: str, stream: FileStream, *, replace: bool) -> ImportReport:
    """Write `stream`'s sessions while its second reading runs (see the module doc); the
    report `import_file` gives. Raises `ImportRefusedError` for a replacement
    `plan_replacement` refuses or a value the parser or the database refuses (nothing of
    the file stays written)."""
    ids = [header.id for header in stream.headers]
    report = ImportReport(
        path=path,
        source_format=str(stream.source_format),
        status="imported",
        problems=stream.problems,
        session_ids=ids,
    )
    parsing = [True]
    try:
        with synthetic_times_from(_written(path)):
            steps = _steps(path, digest, stream, replace, report, parsing)
            write_in_steps(steps, undo=lambda: delete_sessions(ids))
    except (DataError, IntegrityError) as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise ImportRefusedError(path, f"the database refused a value ({detail})", 0) from None
    except RecursionError:
        raise ImportRefusedError(path, "JSON nested too deeply to read") from None
    except _BAD_VALUES as exc:
        if isinstance(exc, ImportRefusedError):
            raise
        from sessions_app.ingest.files import bad_value_reason

        line = current_line() if parsing[0] else 0
        raise ImportRefusedError(path, bad_value_reason(exc), line) from None
    return report


def _steps(
    path: Path,
    digest: str,
    stream: FileStream,
    replace: bool,
    report: ImportReport,
    parsing: list[bool],
) -> Iterator[Callable[[], object]]:
    """The writes of a streamed file, each prepared (parsed, adapted, read) before it is
    handed on: the replacement and the session rows, each batch of events and turns, each
    session's status and header, the sub-agent links and the file's record."""
    source = str(path)
    stored = {
        id(session): header.id
        for session, header in zip(stream.streams, stream.headers, strict=True)
    }

    def begin() -> None:
        replacement = plan_replacement(path, stream.headers, replace)
        report.replaced = replacement.session_ids
        delete_sessions(report.replaced)
        ImportedFile.objects.filter(pk__in=replacement.stale_records).delete()
        for header in stream.headers:
            insert_session_row(header, source, (0, False, 0))

    yield begin
    for session, events, turns in stream.pieces():
        sid = stored[id(session)]
        rows = [
            prepare_rows(Turn, TURN_COLUMNS, turn_rows(sid, turns)),
            prepare_rows(Event, EVENT_INSERT_COLUMNS, event_rows(sid, events)),
        ]
        yield partial(_insert, rows)
    parsing[0] = False
    totals = dict.fromkeys(TOTALS, 0)
    for session, header in stream.finals():
        sid = stored[id(session)]
        for key, value in session.stats(header.todos).items():
            totals[key] += value
        totals["sessions"] += 1
        found = paged_resume_facts(sid)

        yield partial(_finish, sid, header, found, session.model)
    totals["skipped_lines"] = len(stream.problems)
    report.stats = totals

    def end() -> None:
        link_subagents(report.session_ids)
        ImportedFile.objects.create(
            sha256=digest,
            path=stored_path(source),
            source_format=str(stream.source_format),
            session_ids=report.session_ids,
        )

    yield end


def _insert(rows: list[PreparedRows]) -> None:
    for prepared in rows:
        if prepared.params:
            execute_rows(prepared)


def _finish(sid: str, header: ParsedSession, found: PagedFacts, model: str) -> None:
    """A session's last writes: its marks, its header's values and status, its todos."""
    write_marks(found.marks)
    Session.objects.filter(pk=sid).update(
        title=header.title,
        state={k: v for k, v in header.state.items() if k != "todos"},
        created_at=header.created_at,
        updated_at=header.updated_at,
        parent_session_id=header.parent_session_id,
        parent_call_id=header.parent_call_id,
        model=header.model or model,
        # Every event names one of its session's turns (`SessionBuilder`): never legacy.
        **kept_status_update(sid, found, legacy=False),
    )
    session = Session.objects.get(pk=sid)
    parsed_session_written.send(
        sender=Session, session=session, parsed=header, event_ids={}, user_ids={}
    )
