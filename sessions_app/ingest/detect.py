"""Which format a file is in: the registered formats (`ingest.registry`) are asked in order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import sessions_app.ingest.formats  # noqa: F401  (registers every format, in order)
from sessions_app.ingest.reading import head_text, loads
from sessions_app.ingest.registry import (
    DatabaseFormat,
    JsonDocumentFormat,
    JsonLinesFormat,
    registered_formats,
)

#: How many lines of a JSON Lines file detection reads before it gives up.
DETECTION_LINES = 50


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
    return detect_records(_decoded(_first_lines(text, DETECTION_LINES)))


def _decoded(lines: Iterable[str]) -> Iterator[Any]:
    for line in lines:
        try:
            yield loads(line)
        except ValueError:
            continue


def detect_records(records: Iterable[Any]) -> str | None:
    """The JSON Lines format that the first of `records` (a file's first lines, decoded;
    values that are not objects are passed over) that a format recognises names."""
    line_formats = [f for f in registered_formats() if isinstance(f, JsonLinesFormat)]
    for record in records:
        if not isinstance(record, dict):
            continue
        for fmt in line_formats:
            if fmt.looks_like_record(record):
                return fmt.name
    return None


def _detect_json(data: Any) -> str | None:
    for fmt in registered_formats():
        if isinstance(fmt, JsonDocumentFormat) and fmt.looks_like(data):
            return fmt.name
    return None


def detect_format(path: Path, text: str | None = None) -> str | None:
    """The `Session.SourceFormat` value of a file's content, or None when unknown.

    JSONL (any line-per-record file): the first of the first 50 records that a JSON Lines
    format recognises decides (Codex: `type` session_meta / response_item / event_msg /
    turn_context and a `payload`; Claude Code: a Claude record type or `sessionId`). A
    whole-file JSON document: an agentops export (`schema` key), RunState, ADK session,
    Anthropic Messages, Responses items or chat message list (a SQLite database is found
    by its header, `parse_file`). The file name is only a tie-breaker (JSON first for `.json`, JSONL
    first otherwise). May raise RecursionError for JSON nested too deeply to read.
    `text`: the file's text; None: read from `path`, only the first lines when they decide
    (a large JSON Lines file is not read whole to be detected). Raises OSError when the
    file cannot be read.
    """
    if path.suffix != ".json":
        found = _detect_jsonl(head_text(path, DETECTION_LINES) if text is None else text)
        if found:
            return found
    if text is None:
        text = path.read_text(encoding="utf-8", errors="replace")
    try:
        data = loads(text)
    except ValueError:
        return _detect_jsonl(text) if path.suffix == ".json" else None
    return _detect_json(data)


def undetectable_reason(path: Path) -> str | None:
    """Why `path` cannot be auto-detected, or None when it can: it cannot be read, is
    empty, holds JSON nested too deeply to read, or is in no supported format. Read as the
    import reads it (bytes that are not UTF-8 become U+FFFD)."""
    for database in registered_formats():
        if isinstance(database, DatabaseFormat) and database.looks_like_file(path):
            return None  # its tables are checked when it is read
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"cannot read ({exc})"
    if not text.strip():
        return "the file is empty"
    try:
        fmt = detect_format(path, text)
    except RecursionError:
        return "JSON nested too deeply to read"
    if fmt is None:
        return (
            "unknown format (not Claude Code, Codex CLI, Google ADK session or database, "
            "Anthropic Messages, OpenAI chat messages or Responses items, Agents SDK "
            "RunState or an agentops export)"
        )
    return None
