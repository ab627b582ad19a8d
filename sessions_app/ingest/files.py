"""Import a file: read, detect, parse, redact, check, and write in one transaction.

`parse_file` turns a file into a redacted `ParseResult`; `import_file` stores it (one
transaction per file, the replace rules of `ingest.replace`); `transcript_files` lists
the files a command line names.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import math
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.db import DataError, IntegrityError

from sessions_app.ids import session_id_problem
from sessions_app.ingest.chunked import session_steps, write_in_bounded_transactions
from sessions_app.ingest.detect import DETECTION_LINES, detect_format, detect_records
from sessions_app.ingest.errors import ImportRefusedError, UnknownFormatError
from sessions_app.ingest.formats.adk_database import read_postgres, shown_url
from sessions_app.ingest.normalise import at_line, current_line, synthetic_times_from
from sessions_app.ingest.parsed import ParsedSession, ParseResult
from sessions_app.ingest.reading import DecodedLines, SourceFacts, SourceLines
from sessions_app.ingest.redaction import redact_parse_result
from sessions_app.ingest.registry import (
    DatabaseFormat,
    JsonLinesFormat,
    format_named,
    registered_formats,
)
from sessions_app.ingest.replace import plan_replacement
from sessions_app.ingest.subagents import link_subagents
from sessions_app.ingest.summary import ImportReport, file_totals
from sessions_app.ingest.writer import delete_sessions, stored_path, stored_status
from sessions_app.models import ImportedFile, Session

ADK_DATABASE = Session.SourceFormat.ADK_DATABASE

#: The file names a directory walk imports (`.db`: ADK session databases).
SUFFIXES = (".jsonl", ".json", ".db")
#: Errors a parser raises on a value it did not expect: the file is refused in one line.
BAD_VALUE_ERRORS = (ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError)


def transcript_files(paths: list[str]) -> list[tuple[Path, bool]]:
    """Files to import, in a stable order, each with `explicit` (named in `paths`).

    Directories are walked recursively for *.jsonl, *.json and *.db, a session file before
    the folder of the same name (Claude Code's `<session>.jsonl` before its
    `<session>/subagents/`). Raises FileNotFoundError (naming the path) for a path that
    does not exist.
    """
    found: list[tuple[Path, bool]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = [p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES]
            # ("abc",) sorts before ("abc", "subagents", ...): the file before its folder.
            files.sort(key=lambda p: (p.relative_to(path).with_suffix("").parts, p.suffix))
            found.extend((p, False) for p in files)
        elif path.is_file():
            found.append((path, True))
        else:
            raise FileNotFoundError(raw)
    return found


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a bulk parse or write.

    A large transcript allocates hundreds of thousands of small dicts and lists that all
    stay alive; CPython's generational collector keeps re-scanning them, which cost about
    70% of parse time on a 50,000-event file. They hold no reference cycles, so
    reference counting frees them; the collector is re-enabled (if it was on) afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_without_nul(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        replace_nul(value)
    return value


def replace_nul(record: Any) -> None:
    """Replace, in place, every NUL character in the strings of a parsed record (a
    `ParsedSession` and everything in it: texts, ids, JSON values and their keys) with
    U+FFFD. PostgreSQL text and jsonb cannot store NUL (SQLite could, but both databases
    must hold the same)."""
    for item in dataclasses.fields(record):
        setattr(record, item.name, _without_nul(getattr(record, item.name)))


def parse_file(
    path: Path, source_format: str = "auto", text: str | DecodedLines | None = None
) -> ParseResult:
    """Read and parse `path` (UTF-8) in `source_format` ("auto" = detect).

    Returns the sessions and the problems found, with credential-shaped values already
    redacted (`sessions_app.ingest.redaction`: nothing a parser read is stored unredacted).
    Raises `UnknownFormatError` when the format cannot be detected or the content does
    not fit the forced format, `ImportRefusedError` for JSON nested deeper than Python
    can read, a session id that `session_id_problem` refuses or an agentops export that
    does not fit its format, and OSError when the file cannot be read. Bytes that are not
    UTF-8 are read as U+FFFD. Sources without timestamps get times from the file's
    modification time (`normalise.synthetic_time`). `text`: the file's text when the
    caller already read it, or its lines already decoded (`reading.DecodedLines`: the
    live tail, which decodes each line once, as it is appended; a JSON Lines format
    only); else a JSON Lines file is read line by line (`reading.SourceLines`: its text
    is never held whole) and a JSON document whole.
    """
    at_line(0)
    written = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    decoded = text if isinstance(text, DecodedLines) else None
    database = None if decoded is not None else _database_format(path, source_format)
    facts = decoded.facts if decoded is not None else SourceFacts()
    source: str | SourceLines | DecodedLines = "" if database else (text or "")
    try:
        fmt = database or (_detect(path, text) if source_format == "auto" else source_format)
        if fmt is None:
            raise UnknownFormatError(path, "unknown format (not a supported transcript)")
        parser = format_named(fmt)
        if parser is None:
            raise UnknownFormatError(path, f"unknown format {fmt!r}")
        if decoded is not None and not isinstance(parser, JsonLinesFormat):
            raise UnknownFormatError(path, f"{fmt} is not a JSON Lines format")
        if text is None and not database:
            if isinstance(parser, JsonLinesFormat):
                source = SourceLines(path)
                facts = source.facts
            else:
                source = path.read_text(encoding="utf-8", errors="replace")
        if isinstance(source, str) and not database:
            facts.note_text(source)
        with gc_paused(), synthetic_times_from(written):
            result = (
                parser.parse(path, source)
                if isinstance(parser, JsonLinesFormat)
                else parser.parse(path, str(source))
            )
            del source  # a document's text is not kept while the rest runs
            # The one redaction point of every importer: before anything can be stored.
            if facts.may_hold_secret or database:
                redact_parse_result(result, None)
    except RecursionError:
        raise ImportRefusedError(path, "JSON nested too deeply to read") from None
    except BAD_VALUE_ERRORS as exc:
        if isinstance(exc, UnknownFormatError | ImportRefusedError):
            raise
        raise ImportRefusedError(path, bad_value_reason(exc), current_line()) from None
    may_hold_nul = facts.may_hold_nul or bool(database)
    non_finite = bool(database) or facts.may_hold_non_finite
    check_parse_result(path, result, may_hold_nul, may_hold_non_finite=non_finite)
    result.source_format = fmt
    return result


def _detect(path: Path, text: str | DecodedLines | None) -> str | None:
    """`detect.detect_format`; for lines already decoded, on their objects (not decoded
    again) when those are the first lines `detect_format` reads (split at "\n" only)."""
    if not isinstance(text, DecodedLines):
        return detect_format(path, text)
    head = text.head
    if path.suffix != ".json" and len(head.splitlines()) == head.count("\n"):
        lines = (r for n, r, _p in text.entries if n <= DETECTION_LINES)
        found = detect_records(lines)
        if found:
            return found
    return detect_format(path, head)


def _database_format(path: Path, source_format: str) -> str | None:
    """The name of the database format `path` is in (None: not a database file)."""
    for fmt in registered_formats():
        if isinstance(fmt, DatabaseFormat) and source_format in ("auto", fmt.name):
            if fmt.looks_like_file(path):
                return fmt.name
    return None


def bad_value_reason(exc: BaseException) -> str:
    """One line for a value a parser could not read (its line is
    `normalise.current_line()`, 0 when not known)."""
    detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    return f"unreadable value ({type(exc).__name__}: {detail})"


def check_parse_result(
    path: Path | str, result: ParseResult, may_hold_nul: bool, *, may_hold_non_finite: bool = True
) -> None:
    """Refuse, with `ImportRefusedError`, a result with no session (saying why), a
    session id that `session_id_problem` refuses, or a number no database column holds
    (infinite: JSON's 1e400; looked for only when `may_hold_non_finite`: the walk over
    every value cost as much as the parse); replace NUL characters (`replace_nul`) when
    `may_hold_nul`."""
    if not result.sessions:
        reason = result.empty_reason or "no conversation in it"
        if result.problems:
            reason += f" ({len(result.problems)} lines skipped; first: {result.problems[0]})"
        raise ImportRefusedError(path, f"no session found: {reason}; nothing was imported")
    # NUL may come as a raw byte or as the JSON escape; no other text can hold one.
    if may_hold_nul:
        for parsed in result.sessions:
            replace_nul(parsed)
    for parsed in result.sessions:
        problem = session_id_problem(parsed.id)
        if problem is not None:
            raise ImportRefusedError(path, problem)
        problem = _non_finite(parsed) if may_hold_non_finite else None
        if problem is not None:
            raise ImportRefusedError(path, problem, 0)


def _non_finite(parsed: ParsedSession) -> str | None:
    def walk(value: Any) -> bool:
        if isinstance(value, float):
            return not math.isfinite(value)
        if isinstance(value, dict):
            return any(walk(v) for v in value.values())
        if isinstance(value, list | tuple):
            return any(walk(v) for v in value)
        return False

    for index, event in enumerate(parsed.events):
        fields = (event.tool_calls, event.tool_response, event.usage, event.state_delta, event.raw)
        if any(walk(f) for f in fields):
            return f"event {index + 1} holds a number out of range (like 1e400)"
    if walk(parsed.state):
        return "the session state holds a number out of range (like 1e400)"
    return None


def import_file(
    path: Path,
    source_format: str = "auto",
    *,
    strict: bool = False,
    replace: bool = False,
) -> ImportReport:
    """Import one file: it lands whole or not at all.

    Same content (sha256) already imported -> nothing happens ("already imported").
    A changed version of a file replaces its sessions in the same transaction: sessions
    imported from the same path are deleted (also those the new version no longer
    holds) and the new ones written. A session id that exists from another source (another
    file, the runtime, the demo) refuses the file with `ImportRefusedError`, unless
    `replace` is set (`ingest.replace`). With `strict`, any problem refuses the file and
    nothing is written. Each session is stored with its resume status
    (`protocol_issue_count`, `cannot_resume`; `writer.stored_status`). Raises
    `UnknownFormatError` / `ImportRefusedError` / OSError as `parse_file` does.

    One transaction, except on SQLite for a file whose writes hold the write lock longer
    than ``AGENTOPS_IMPORT_LOCK_MS``: it commits in chunks, letting other writers in
    between, and deletes what it wrote if a later chunk fails (`ingest.chunked`).
    """
    # The collector stays off for the parse and the write; the parsed objects are freed
    # (by reference counting) when `_import_file` returns, before it is back on, so the
    # collection that follows does not walk them.
    with gc_paused():
        return _import_file(path, source_format, strict, replace)


def _import_file(path: Path, source_format: str, strict: bool, replace: bool) -> ImportReport:
    with path.open("rb") as stream:
        # Hashed as it is read: the bytes are not held beside the text the parser reads.
        digest = hashlib.file_digest(stream, "sha256").hexdigest()
    previous = ImportedFile.objects.filter(sha256=digest).first()
    if previous is not None:
        return ImportReport(
            path=path,
            source_format=previous.source_format,
            status="already imported",
            session_ids=list(previous.session_ids),
        )
    from sessions_app.ingest.streaming import store_streamed, streamable

    streamed = streamable(path, source_format, strict=strict, replace=replace)
    if streamed is not None:
        return store_streamed(path, digest, streamed, replace=replace)
    result = parse_file(path, source_format)
    return store_result(path, digest, result, strict=strict, replace=replace)


def import_database_url(url: str, *, strict: bool = False, replace: bool = False) -> ImportReport:
    """Import every session of an ADK `DatabaseSessionService` PostgreSQL database named by
    `url` (`postgresql://...`, read-only), in ONE transaction, like `import_file` (the
    URL without its password stands in for the path). Raises `ImportRefusedError` /
    `UnknownFormatError` as `import_file` does."""
    label = shown_url(url)
    with gc_paused():
        at_line(0)
        result, digest = read_postgres(url)
        redact_parse_result(result, None)
        check_parse_result(label, result, True)
        result.source_format = ADK_DATABASE
        previous = ImportedFile.objects.filter(sha256=digest).first()
        if previous is not None:
            return ImportReport(
                path=label,
                source_format=previous.source_format,
                status="already imported",
                session_ids=list(previous.session_ids),
            )
        return store_result(label, digest, result, strict=strict, replace=replace)


def _file_steps(
    path: Path | str,
    digest: str,
    result: ParseResult,
    statuses: list[tuple[int, bool, int]],
    replace: bool,
    report: ImportReport,
) -> Iterator[None]:
    """The writes of a parsed file as steps (`chunked.write_in_bounded_transactions`):
    the replacement, each session, the sub-agent links and the file's record."""
    replacement = plan_replacement(path, result.sessions, replace)
    report.replaced = replacement.session_ids
    delete_sessions(report.replaced)
    ImportedFile.objects.filter(pk__in=replacement.stale_records).delete()
    yield
    for parsed, status in zip(result.sessions, statuses, strict=True):
        yield from session_steps(parsed, str(path), status)
    ids = [s.id for s in result.sessions]
    link_subagents(ids)
    ImportedFile.objects.create(
        sha256=digest,
        path=stored_path(str(path)),
        source_format=str(result.source_format),
        session_ids=ids,
    )
    yield


def store_result(
    path: Path | str, digest: str, result: ParseResult, *, strict: bool, replace: bool
) -> ImportReport:
    """Write a parsed file's sessions (the rules of `import_file`), session by session.
    Raises `ImportRefusedError` for a replacement `plan_replacement` refuses or a value the
    database refuses (nothing of the file stays written)."""
    fmt = result.source_format
    ids = [s.id for s in result.sessions]
    report = ImportReport(
        path=path,
        source_format=str(fmt),
        status="imported",
        problems=result.problems,
        stats=file_totals(result),
        session_ids=ids,
    )
    if strict and result.problems:
        report.status = "refused"
        return report
    try:
        # Each session's resume status is worked out before any lock is taken; rows are
        # adapted a batch at a time as they are inserted (`ingest.chunked`).
        statuses = [stored_status(parsed) for parsed in result.sessions]
        steps = _file_steps(path, digest, result, statuses, replace, report)
        write_in_bounded_transactions(steps, undo=lambda: delete_sessions(ids))
    except (DataError, IntegrityError) as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise ImportRefusedError(path, f"the database refused a value ({detail})", 0) from None
    except BAD_VALUE_ERRORS as exc:
        # A shape the runtime contract does not allow (docs/runtime.md §1), e.g. a role.
        if isinstance(exc, ImportRefusedError):
            raise
        raise ImportRefusedError(path, bad_value_reason(exc), 0) from None
    return report
