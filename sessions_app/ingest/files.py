"""Import a file: read, detect, parse, redact, check, and write in one transaction.

`parse_file` turns a file into a redacted `ParseResult`; `import_file` stores it (one
transaction per file, the replace rules of `ingest.replace`); `transcript_files` lists
the files a command line names.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.db import transaction

from sessions_app.ids import session_id_problem
from sessions_app.ingest.detect import detect_format
from sessions_app.ingest.errors import ImportRefusedError, UnknownFormatError
from sessions_app.ingest.normalise import synthetic_times_from
from sessions_app.ingest.parsed import ParseResult
from sessions_app.ingest.redaction import redact_parse_result
from sessions_app.ingest.registry import format_named
from sessions_app.ingest.replace import plan_replacement
from sessions_app.ingest.summary import ImportReport, file_totals
from sessions_app.ingest.writer import delete_sessions, stored_path, write_parsed_session
from sessions_app.models import ImportedFile

#: The file names a directory walk imports.
SUFFIXES = (".jsonl", ".json")


def transcript_files(paths: list[str]) -> list[tuple[Path, bool]]:
    """Files to import, in a stable order, each with `explicit` (named in `paths`).

    Directories are walked recursively for *.jsonl and *.json. Raises FileNotFoundError
    (naming the path) for a path that does not exist.
    """
    found: list[tuple[Path, bool]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(
                (p, False) for p in sorted(path.rglob("*")) if p.is_file() and p.suffix in SUFFIXES
            )
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


def parse_file(path: Path, source_format: str = "auto") -> ParseResult:
    """Read and parse `path` (UTF-8) in `source_format` ("auto" = detect).

    Returns the sessions and the problems found, with credential-shaped values already
    redacted (`sessions_app.ingest.redaction`: nothing a parser read is stored unredacted).
    Raises `UnknownFormatError` when the format cannot be detected or the content does
    not fit the forced format, `ImportRefusedError` for JSON nested deeper than Python
    can read, a session id that `session_id_problem` refuses or an agentops export that
    does not fit its format, and OSError when the file cannot be read. Bytes that are not
    UTF-8 are read as U+FFFD. Sources without timestamps get times from the file's
    modification time (`normalise.synthetic_time`).
    """
    text = path.read_text(encoding="utf-8", errors="replace")
    written = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    try:
        fmt = detect_format(path, text) if source_format == "auto" else source_format
        if fmt is None:
            raise UnknownFormatError(path, "unknown format (not a supported transcript)")
        parser = format_named(fmt)
        if parser is None:
            raise UnknownFormatError(path, f"unknown format {fmt!r}")
        with gc_paused(), synthetic_times_from(written):
            result = parser.parse(path, text)
            # The one redaction point of every importer: before anything can be stored.
            redact_parse_result(result, text)
    except RecursionError:
        raise ImportRefusedError(path, "JSON nested too deeply to read") from None
    # NUL may come as a raw byte or as the JSON escape; no other text can hold one.
    if "\x00" in text or "\\u0000" in text:
        for parsed in result.sessions:
            replace_nul(parsed)
    for parsed in result.sessions:
        problem = session_id_problem(parsed.id)
        if problem is not None:
            raise ImportRefusedError(path, problem)
    result.source_format = fmt
    return result


def import_file(
    path: Path,
    source_format: str = "auto",
    *,
    strict: bool = False,
    replace: bool = False,
) -> ImportReport:
    """Import one file in ONE transaction: it lands whole or not at all.

    Same content (sha256) already imported -> nothing happens ("already imported").
    A changed version of a file replaces its sessions in the same transaction: sessions
    imported from the same path are deleted (also those the new version no longer
    holds) and the new ones written. A session id that exists from another source (another
    file, the runtime, the demo) refuses the file with `ImportRefusedError`, unless
    `replace` is set (`ingest.replace`). With `strict`, any problem refuses the file and
    nothing is written. Each session is stored with its resume status
    (`protocol_issue_count`, `cannot_resume`; `writer.write_parsed_session`). Raises
    `UnknownFormatError` / `ImportRefusedError` / OSError as `parse_file` does.
    """
    # The collector stays off for the parse and the write; the parsed objects are freed
    # (by reference counting) when `_import_file` returns, before it is back on, so the
    # collection that follows does not walk them.
    with gc_paused():
        return _import_file(path, source_format, strict, replace)


def _import_file(path: Path, source_format: str, strict: bool, replace: bool) -> ImportReport:
    content = path.read_bytes()
    digest = hashlib.sha256(content).hexdigest()
    previous = ImportedFile.objects.filter(sha256=digest).first()
    if previous is not None:
        return ImportReport(
            path=path,
            source_format=previous.source_format,
            status="already imported",
            session_ids=list(previous.session_ids),
        )
    result = parse_file(path, source_format)
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
    with transaction.atomic():
        replacement = plan_replacement(path, result.sessions, replace)
        report.replaced = replacement.session_ids
        delete_sessions(report.replaced)
        ImportedFile.objects.filter(pk__in=replacement.stale_records).delete()
        for parsed in result.sessions:
            write_parsed_session(parsed, str(path))
        ImportedFile.objects.create(
            sha256=digest, path=stored_path(str(path)), source_format=str(fmt), session_ids=ids
        )
    return report
