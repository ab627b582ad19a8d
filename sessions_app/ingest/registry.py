"""The formats the importer reads, in the order detection asks them.

A format is one parser module under `ingest/formats/` that defines one `Format` object;
`ingest/formats/__init__.py` registers them in detection order. A format is either
JSON Lines (`JsonLinesFormat`: one record per line; detection looks at single records),
one JSON document (`JsonDocumentFormat`: detection looks at the decoded document), or a
database file (`DatabaseFormat`: detection looks at the file's header). Each parses a
file into a `ParseResult` (`Format.parse`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessions_app.ingest.errors import UnknownFormatError
from sessions_app.ingest.parsed import ParseResult
from sessions_app.ingest.reading import JsonLinesText, loads


@dataclass(frozen=True, slots=True)
class JsonLinesFormat:
    """A JSON Lines format: `looks_like_record(record)` is True for one decoded line (a
    JSON object) that only this format writes; `parse_text(path, text)` parses the file,
    given as its whole text or read line by line (`reading.SourceLines`: a large file is
    never held whole)."""

    name: str
    looks_like_record: Callable[[dict[str, Any]], bool]
    parse_text: Callable[[Path, JsonLinesText], ParseResult]

    def parse(self, path: Path, text: JsonLinesText) -> ParseResult:
        """The file's sessions and the lines skipped (see `Format`)."""
        return self.parse_text(path, text)


@dataclass(frozen=True, slots=True)
class JsonDocumentFormat:
    """A whole-file JSON format: `looks_like(data)` is True for a decoded document in this
    format; `parse_document(path, data)` parses it."""

    name: str
    looks_like: Callable[[Any], bool]
    parse_document: Callable[[Path, Any], ParseResult]

    def parse(self, path: Path, text: str) -> ParseResult:
        """Decode `text` and parse it; `UnknownFormatError` when it is not a JSON document
        or not one in this format."""
        try:
            data = loads(text)
        except json.JSONDecodeError as exc:
            raise UnknownFormatError(
                path, f"not a JSON document (line {exc.lineno}: {exc.msg})"
            ) from None
        if not self.looks_like(data):
            raise UnknownFormatError(path, f"content is not in format {self.name!r}")
        return self.parse_document(path, data)


@dataclass(frozen=True, slots=True)
class DatabaseFormat:
    """A database file format (SQLite): `looks_like_file(path)` checks the file's header;
    `parse_path(path)` reads it (read-only) into sessions."""

    name: str
    looks_like_file: Callable[[Path], bool]
    parse_path: Callable[[Path], ParseResult]

    def parse(self, path: Path, text: str) -> ParseResult:
        """Read the database at `path` (`text` is not used)."""
        return self.parse_path(path)


#: One supported transcript format. `name` is its `Session.SourceFormat` value;
#: `parse(path, text)` reads the file's whole text and returns its sessions and problems
#: (raising `UnknownFormatError` when the text is not in this format, `ImportRefusedError`
#: when it is but cannot be imported as it is).
Format = JsonLinesFormat | JsonDocumentFormat | DatabaseFormat

_formats: dict[str, Format] = {}


def register(fmt: Format) -> None:
    """Add `fmt` after the formats registered so far (detection asks them in this order).
    Raises ValueError when a format of that name is registered already."""
    if fmt.name in _formats:
        raise ValueError(f"format {fmt.name!r} is registered already")
    _formats[fmt.name] = fmt


def registered_formats() -> tuple[Format, ...]:
    """Every registered format, in detection order."""
    return tuple(_formats.values())


def format_named(name: str) -> Format | None:
    """The registered format called `name` (a `Session.SourceFormat` value), or None."""
    return _formats.get(name)
