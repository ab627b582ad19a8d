"""Reading a source file: JSON decoded fast, JSON Lines read line by line.

`loads` decodes JSON text with orjson, giving exactly what the standard library's
`json.loads` gives (the importer's results do not depend on which reader ran): text
orjson would read differently goes to `json.loads`, and so does text orjson refuses, so a
refusal names the standard library's reason as before. orjson differs on integers beyond
64 bits (it reads them as floats), on numbers out of a double's range and on the
NaN / Infinity literals (it refuses them), and on nesting deeper than 1,024 (Python
refuses at about 1,000); `_NEEDS_STDLIB` finds every text that may hold the first three
(a run of 19 digits, a three-digit exponent, the literals), and texts with 900 or more
brackets go to the standard library too.

`SourceLines` is a JSON Lines file read one line at a time (constant memory whatever the
file's size), split exactly as `str.splitlines` splits the whole text, noting as it goes
what the import's checks need to know of the whole text (`SourceFacts`): whether a
credential may be in it (`redaction.might_hold_secret`), whether it may hold a NUL
character, whether it may hold a number no database column holds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from sessions_app.ingest.redaction.prefilter import might_hold_secret

#: Text orjson would read differently from `json.loads` (see the module doc). Every match
#: of the import's old non-finite hint (a three-digit exponent, 300 digits, the
#: literals) is a match here, so it also serves as that hint (`files.check_parse_result`).
_NEEDS_STDLIB = re.compile(r"[0-9]{19}|[eE][+-]?[0-9]{3}|Infinity|NaN")
#: Brackets from which a text may nest deeper than orjson reads like Python.
_DEEP = 900


def needs_stdlib(text: str) -> bool:
    """True when `text` may hold a number orjson reads otherwise than `json.loads` (or
    one out of a database column's range), or nests deeply."""
    return _NEEDS_STDLIB.search(text) is not None or text.count("[") + text.count("{") >= _DEEP


def loads(text: str, stdlib: bool | None = None) -> Any:
    """`json.loads(text)`, computed by orjson where both give the same (`stdlib`: the
    caller's `needs_stdlib(text)`, worked out here when None). Raises
    `json.JSONDecodeError` (the standard library's, with its message) or RecursionError
    as `json.loads` does."""
    if not (needs_stdlib(text) if stdlib is None else stdlib):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass  # the standard library's error (or its reading of the text) decides
    return json.loads(text)


@dataclass(slots=True)
class SourceFacts:
    """What the import's whole-text checks need, gathered as a file's lines are read.

    Each is False only when no line can hold it: `may_hold_secret` (the redaction
    prefilter on every line: sound, since no trigger spans a line break),
    `may_hold_nul` (a NUL byte or its JSON escape), `may_hold_non_finite` (a number
    Python reads as infinite or too large for a column: set by `normalise.jsonl_objects`,
    which asks `needs_stdlib` of every line anyway).
    """

    may_hold_secret: bool = False
    may_hold_nul: bool = False
    may_hold_non_finite: bool = False

    def note(self, text: str) -> None:
        """Take `text` (one line, or a whole text) into account (all but
        `may_hold_non_finite`)."""
        if not self.may_hold_secret and might_hold_secret(text):
            self.may_hold_secret = True
        if not self.may_hold_nul and ("\x00" in text or "\\u0000" in text):
            self.may_hold_nul = True


class SourceLines:
    """The lines of a UTF-8 file, read as they are iterated (once), as
    ``path.read_text(encoding="utf-8", errors="replace").splitlines()`` gives them.

    The file is read a line (up to "\\n") at a time and each piece split again by
    `str.splitlines` (which also splits at "\\r", "\\x85", U+2028 ...), so line numbers
    match the whole-text split. Bytes that are not UTF-8 read as U+FFFD (a multi-byte
    character never holds the "\\n" byte, so the split does not change the decoding).
    `facts` is complete once the lines have been read to the end.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.facts = SourceFacts()

    def __iter__(self) -> Iterator[str]:
        facts = self.facts
        with self.path.open("rb") as stream:
            for raw in stream:
                piece = raw.decode("utf-8", errors="replace")
                facts.note(piece)
                yield from piece.splitlines()


#: A JSON Lines source: its whole text, or the file read line by line.
JsonLinesText = str | SourceLines


def head_text(path: Path, lines: int) -> str:
    """The first `lines` lines of a UTF-8 file (split at "\\n", newlines kept), read
    without the rest; bytes that are not UTF-8 read as U+FFFD."""
    out: list[str] = []
    with path.open("rb") as stream:
        for raw in stream:
            out.append(raw.decode("utf-8", errors="replace"))
            if len(out) >= lines:
                break
    return "".join(out)
