"""Transcript importers: format detection, one parser per format, and `import_file`.

Formats (shared/corpus/README.md): Claude Code JSONL, Codex CLI rollout JSONL, Google
ADK session JSON (snake_case and camelCase), OpenAI chat-completions message lists
(bare list or SWE-agent trajectory `history`), OpenAI Agents SDK RunState, and our own
session export (`agentops.session-export/1`). Each parser
returns the normalised form of `base.py`; `writer.write_parsed_session` stores it.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from django.db import transaction

from sessions_app.ingest.agentops_export import looks_like_export, parse_agentops_export
from sessions_app.ingest.base import (
    ImportProblem,
    ParsedEvent,
    ParsedSession,
    ParsedTodo,
    ParsedTurn,
    ParseResult,
    synthetic_times_from,
)
from sessions_app.ingest.claude_code import parse_claude_code
from sessions_app.ingest.codex_cli import parse_codex_cli
from sessions_app.ingest.google_adk import looks_like_adk, parse_google_adk
from sessions_app.ingest.openai import (
    chat_messages,
    looks_like_run_state,
    parse_openai_agents,
    parse_openai_chat,
)
from sessions_app.ingest.redaction import redact_parse_result
from sessions_app.ingest.writer import (
    delete_sessions,
    stored_path,
    stored_source_path,
    write_parsed_session,
)
from sessions_app.models import ImportedFile, Session

__all__ = [
    "FORMATS",
    "ImportProblem",
    "ImportRefusedError",
    "ImportReport",
    "ParseResult",
    "ParsedEvent",
    "ParsedSession",
    "ParsedTodo",
    "ParsedTurn",
    "UnknownFormatError",
    "detect_format",
    "import_file",
    "parse_file",
    "write_parsed_session",
]

F = Session.SourceFormat
JSONL_FORMATS = {F.CLAUDE_CODE, F.CODEX_CLI}
FORMATS: tuple[str, ...] = (
    F.CLAUDE_CODE,
    F.CODEX_CLI,
    F.GOOGLE_ADK,
    F.OPENAI_CHAT,
    F.OPENAI_AGENTS,
    F.AGENTOPS_EXPORT,
)
CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context"}
CLAUDE_TYPES = {
    "user",
    "assistant",
    "summary",
    "system",
    "progress",
    "queue-operation",
    "file-history-snapshot",
}


class UnknownFormatError(ValueError):
    """The file is not in any supported format (or not in the one forced). Has `path`."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path


class ImportRefusedError(ValueError):
    """The file was read but cannot be imported as it is (nothing was written). Has
    `path`; the message says why: a session id a URL cannot carry, a session that exists
    from another source (see `import_file`'s `replace`), JSON nested too deeply to read."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path


# Session ids become one URL path segment (/sessions/<id>/): no "/", no control
# characters, not "." or "..", at most 255 characters (the column).
_BAD_ID_CHARACTER = re.compile(r"[/\x00-\x1f\x7f]")
MAX_ID_LENGTH = cast(int, Session._meta.get_field("id").max_length)


def session_id_problem(session_id: str) -> str | None:
    """Why `session_id` cannot be stored and linked to, or None when it can."""
    if not session_id:
        return "the session id is empty"
    if len(session_id) > MAX_ID_LENGTH:
        return f"the session id is {len(session_id)} characters long (at most {MAX_ID_LENGTH})"
    if session_id in (".", ".."):
        return f"the session id {session_id!r} is not allowed"
    bad = _BAD_ID_CHARACTER.search(session_id)
    if bad:
        return f"the session id {session_id!r} contains {bad.group()!r}, which ids may not hold"
    return None


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


def _first_lines(text: str, count: int) -> Iterator[str]:
    """The first `count` lines of `text` (split at "\\n", as JSON Lines are), without
    splitting the rest of a large file."""
    start = 0
    for _ in range(count):
        end = text.find("\n", start)
        if end < 0:
            yield text[start:]
            return
        yield text[start:end]
        start = end + 1


def _detect_jsonl(text: str) -> str | None:
    for line in _first_lines(text, 50):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if record.get("type") in CODEX_TYPES and "payload" in record:
            return F.CODEX_CLI
        if record.get("type") in CLAUDE_TYPES or "sessionId" in record:
            return F.CLAUDE_CODE
    return None


def _detect_json(data: Any) -> str | None:
    if looks_like_export(data):
        return F.AGENTOPS_EXPORT
    if looks_like_run_state(data):
        return F.OPENAI_AGENTS
    if looks_like_adk(data):
        return F.GOOGLE_ADK
    if chat_messages(data) is not None:
        return F.OPENAI_CHAT
    return None


def detect_format(path: Path, text: str) -> str | None:
    """The `Session.SourceFormat` value of a file's content, or None when unknown.

    JSONL (any line-per-record file): Codex when a record has `type` session_meta /
    response_item / event_msg / turn_context and a `payload`; Claude Code when a record
    has a Claude record type or `sessionId`. A whole-file JSON document: an agentops
    export (`schema` key), RunState, ADK session, or chat message list. The file name is
    only a tie-breaker (JSON first for `.json`, JSONL first otherwise).
    """
    if path.suffix != ".json":
        found = _detect_jsonl(text)
        if found:
            return found
    try:
        data = json.loads(text)
    except ValueError:
        return _detect_jsonl(text) if path.suffix == ".json" else None
    return _detect_json(data)


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


def parse_file(path: Path, source_format: str = "auto") -> ParseResult:
    """Read and parse `path` (UTF-8) in `source_format` ("auto" = detect).

    Returns the sessions and the problems found, with credential-shaped values already
    redacted (`sessions_app.ingest.redaction`: nothing a parser read is stored unredacted).
    Raises `UnknownFormatError` when the format cannot be detected or the content does
    not fit the forced format, `ImportRefusedError` for JSON nested deeper than Python
    can read or a session id that `session_id_problem` refuses, and OSError when the file
    cannot be read. Bytes that are not UTF-8 are read as U+FFFD. Sources without
    timestamps get times from the file's modification time (`base.synthetic_time`).
    """
    text = path.read_text(encoding="utf-8", errors="replace")
    written = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    try:
        fmt = detect_format(path, text) if source_format == "auto" else source_format
        if fmt is None:
            raise UnknownFormatError(path, "unknown format (not a supported transcript)")
        with gc_paused(), synthetic_times_from(written):
            if fmt == F.CLAUDE_CODE:
                result = parse_claude_code(path, text)
            elif fmt == F.CODEX_CLI:
                result = parse_codex_cli(path, text)
            else:
                result = _parse_json(path, text, fmt)
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


def _parse_json(path: Path, text: str, fmt: str) -> ParseResult:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnknownFormatError(
            path, f"not a JSON document (line {exc.lineno}: {exc.msg})"
        ) from None
    parsers: dict[str, tuple[Callable[[Any], bool], Callable[[Path, Any], ParseResult]]] = {
        F.GOOGLE_ADK: (looks_like_adk, parse_google_adk),
        F.OPENAI_CHAT: (lambda d: chat_messages(d) is not None, parse_openai_chat),
        F.OPENAI_AGENTS: (looks_like_run_state, parse_openai_agents),
        F.AGENTOPS_EXPORT: (looks_like_export, parse_agentops_export),
    }
    if fmt not in parsers:
        raise UnknownFormatError(path, f"unknown format {fmt!r}")
    fits, parser = parsers[fmt]
    if not fits(data):
        raise UnknownFormatError(path, f"content is not in format {fmt!r}")
    return parser(path, data)


@dataclass(slots=True)
class ImportReport:
    """What `import_file` did with one file.

    `status` is "imported", "already imported" or "refused" (strict mode and problems);
    `stats` holds per-file totals (sessions, turns, events, tool_calls, unanswered_calls,
    pending_calls, todo_items, skipped_lines); `replaced` lists the ids of sessions that
    existed before and were replaced.
    """

    path: Path
    source_format: str
    status: str
    problems: list[ImportProblem] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    session_ids: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)


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
    `replace` is set. With `strict`, any problem refuses the file and nothing is written.
    Each session is stored with its resume status (`protocol_issue_count`,
    `cannot_resume`; `writer.write_parsed_session`). Raises `UnknownFormatError` /
    `ImportRefusedError` / OSError as `parse_file` does.
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
    totals = dict.fromkeys(
        (
            "sessions",
            "turns",
            "events",
            "tool_calls",
            "unanswered_calls",
            "pending_calls",
            "todo_items",
        ),
        0,
    )
    for parsed in result.sessions:
        totals["sessions"] += 1
        for key, value in parsed.stats().items():
            totals[key] += value
    totals["skipped_lines"] = len(result.problems)
    ids = [s.id for s in result.sessions]
    report = ImportReport(
        path=path,
        source_format=str(fmt),
        status="imported",
        problems=result.problems,
        stats=totals,
        session_ids=ids,
    )
    if strict and result.problems:
        report.status = "refused"
        return report
    with transaction.atomic():
        sources = {s.id: stored_source_path(s, str(path)) for s in result.sessions}
        existing = list(
            Session.objects.filter(id__in=ids).values_list("id", "source_format", "source_path")
        )
        for session_id, old_format, old_path in existing:
            same_file = old_path == sources[session_id] and old_format not in (
                Session.SourceFormat.RUNTIME,
                Session.SourceFormat.DEMO,
            )
            if not (same_file or replace):
                label = (
                    Session.SourceFormat(old_format).label
                    if old_format in Session.SourceFormat.values
                    else old_format
                )
                origin = f"{label}, {old_path}" if old_path else label
                raise ImportRefusedError(
                    path,
                    f"session {session_id!r} already exists ({origin}); "
                    "nothing was imported (replace it with --replace)",
                )
        # Records of older versions of this file (or of these sessions) no longer
        # describe the database; sessions an older version of this file held go too.
        stale = [
            f
            for f in ImportedFile.objects.only("pk", "path", "session_ids")
            if f.path == str(path) or set(f.session_ids) & set(ids)
        ]
        dropped = {sid for f in stale if f.path == str(path) for sid in f.session_ids} - set(ids)
        dropped_here = list(
            Session.objects.filter(id__in=dropped, source_path=stored_path(str(path))).values_list(
                "id", flat=True
            )
        )
        report.replaced = [i for i, _f, _p in existing] + sorted(dropped_here)
        delete_sessions(report.replaced)
        ImportedFile.objects.filter(pk__in=[f.pk for f in stale]).delete()
        for parsed in result.sessions:
            write_parsed_session(parsed, str(path))
        ImportedFile.objects.create(
            sha256=digest, path=str(path), source_format=str(fmt), session_ids=ids
        )
    return report
