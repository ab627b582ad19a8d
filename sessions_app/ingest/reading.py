"""Reading a source file: JSON decoded fast, JSON Lines read line by line.

`loads` decodes JSON text with orjson, giving exactly what the standard library's
`json.loads` gives (the importer's results do not depend on which reader ran): text
orjson would read differently goes to `json.loads`, and so does text orjson refuses, so a
refusal names the standard library's reason as before. orjson differs on integers beyond
64 bits (it reads them as floats: a run of 19 digits sends the text to the standard
library), on numbers out of a double's range and on the NaN / Infinity literals (it
refuses them: the standard library reads them), and on nesting deeper than 1,024 (Python
refuses at about 1,000: texts with 900 or more brackets go to the standard library).

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

#: Every digit as "0": a run of 19 digits is then found by `bytes.find` (C speed; a
#: regular expression over every character cost as much as decoding).
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_NINETEEN_DIGITS = b"0" * 19
#: Brackets from which a text may nest deeper than orjson reads like Python.
_DEEP = 900
#: Whole texts that can hold a number no database column holds: a 3-digit exponent (1e400
#: reads as infinity), 300 digits in a row (1000...0.0), or the Infinity / NaN literals
#: Python's JSON reader accepts.
NON_FINITE_HINT = re.compile(r"[eE][+-]?\d{3}|\d{300}|Infinity|NaN")


def needs_stdlib(text: str, long_numbers: bool = True) -> bool:
    """True when `text` may hold what orjson reads otherwise than `json.loads` without
    refusing it: an integer beyond 64 bits (a run of 19 digits; not looked for when
    `long_numbers` is False: the caller knows there is none), or deep nesting."""
    # A text shorter than either limit holds neither: not scanned (most texts are short).
    if len(text) >= _DEEP and text.count("[") + text.count("{") >= _DEEP:
        return True
    if not long_numbers or len(text) < len(_NINETEEN_DIGITS):
        return False
    data = text.encode("utf-8", "surrogatepass")
    return _NINETEEN_DIGITS in data.translate(_DIGITS_AS_ZERO)


def decode(text: str, long_numbers: bool = True) -> tuple[Any, bool]:
    """(`json.loads(text)`, whether the standard library read it): orjson reads `text`
    unless `needs_stdlib(text, long_numbers)`, and hands what it refuses (NaN, Infinity,
    numbers out of a double's range, bad JSON) to `json.loads`. Raises
    `json.JSONDecodeError` (the standard library's, with its message) or RecursionError
    as `json.loads` does."""
    if not needs_stdlib(text, long_numbers):
        try:
            return orjson.loads(text), False
        except orjson.JSONDecodeError:
            pass  # the standard library's error (or its reading of the text) decides
    return json.loads(text), True


def loads(text: str) -> Any:
    """`json.loads(text)`, computed by orjson where both give the same (`decode`, whose
    common case is repeated here: a call less for each of the many small texts)."""
    if not needs_stdlib(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return decode(text)[0]


@dataclass(slots=True)
class SourceFacts:
    """What the import's whole-text checks need, gathered as a file's lines are read.

    Each is False only when no line can hold it: `may_hold_secret` (the redaction
    prefilter on every line: sound, since no trigger spans a line break),
    `may_hold_nul` (a NUL byte or its JSON escape), `may_hold_non_finite` (a number
    Python reads as infinite or too large for a column: set by `normalise.jsonl_objects`
    for a line the standard library read, which every such number needs; for a whole
    text, `NON_FINITE_HINT`).
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

    def note_text(self, text: str) -> None:
        """Take a whole text into account (every fact)."""
        self.note(text)
        self.may_hold_non_finite = NON_FINITE_HINT.search(text) is not None


class SourceLines:
    """The lines of a UTF-8 file, read as they are iterated, as
    ``path.read_text(encoding="utf-8", errors="replace").splitlines()`` gives them.

    The file is read a block of whole lines (`BLOCK_BYTES`, cut right after a "\n") at a
    time, each block decoded and split by `str.splitlines` (which also splits at "\r",
    "\x85", U+2028 ...), so the lines and their numbers are those of the whole-text
    split: a cut after "\n" is a line break there too, and a multi-byte character never
    holds the "\n" byte (bytes that are not UTF-8 read as U+FFFD either way). The
    whole-text checks run once per block (`facts`, complete once the lines have been read
    to the end), and so does the look for runs of 19 digits (`block_has_long_numbers`:
    False means no line of the current block has one). Each iteration reads the file anew.
    """

    #: Bytes read at a time (one block and its lines are held at once).
    BLOCK_BYTES = 1 << 20

    def __init__(self, path: Path) -> None:
        self.path = path
        self.facts = SourceFacts()
        self.block_has_long_numbers = True

    def _blocks(self) -> Iterator[bytes]:
        pending: list[bytes] = []  # read, not yet ending with a "\n"
        with self.path.open("rb") as stream:
            while chunk := stream.read(self.BLOCK_BYTES):
                cut = chunk.rfind(b"\n") + 1
                if cut == 0:
                    pending.append(chunk)  # a line longer than a block: read on
                    continue
                pending.append(chunk[:cut])
                yield b"".join(pending)
                pending = [chunk[cut:]]
        if any(pending):
            yield b"".join(pending)

    def __iter__(self) -> Iterator[str]:
        facts = self.facts
        for block in self._blocks():
            self.block_has_long_numbers = _NINETEEN_DIGITS in block.translate(_DIGITS_AS_ZERO)
            text = block.decode("utf-8", errors="replace")
            facts.note(text)
            yield from text.splitlines()


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


#: A line `DecodedLines` could not decode for nesting too deep (raised when it is read).
TOO_DEEP = "\x00too deep"


class DecodedLines:
    """A JSON Lines text held decoded in memory and extended as its file grows (the live
    tail, `ingest.tail`): each line is decoded once, when its bytes are appended, never
    again; parsers read it as they read a text (`normalise.jsonl_objects`).

    `extend` takes bytes that end right after a "\\n" (so the lines, their numbers and
    the decoding are those of the whole text's `str.splitlines`, as for `SourceLines`);
    `entries` holds (line number, object or None, problem or ""), one per non-blank line;
    `facts` covers every byte appended; `head` is the text of the first
    `head_lines` lines (format detection); `decoded` counts the lines decoded.
    """

    def __init__(self, head_lines: int = 50) -> None:
        self.entries: list[tuple[int, Any, str]] = []
        self.facts = SourceFacts()
        self.lines = 0
        self.decoded = 0
        self.head = ""
        self._head_left = head_lines

    def extend(self, chunk: bytes) -> None:
        """Decode the lines of `chunk` (complete lines: it ends with "\\n")."""
        long_numbers = _NINETEEN_DIGITS in chunk.translate(_DIGITS_AS_ZERO)
        text = chunk.decode("utf-8", errors="replace")
        self.facts.note(text)
        if self._head_left > 0:  # split at "\n" only, as `head_text` reads a file's head
            first = text.split("\n")[:-1][: self._head_left]  # `chunk` ends with "\n"
            self._head_left -= len(first)
            self.head += "".join(f"{line}\n" for line in first)
        for line in text.splitlines():
            self.lines += 1
            if not line.strip():
                continue
            self.decoded += 1
            try:
                record, stdlib = decode(line, long_numbers)
            except json.JSONDecodeError as exc:
                self.entries.append((self.lines, None, f"not valid JSON ({exc.msg})"))
                continue
            except RecursionError:
                self.entries.append((self.lines, None, TOO_DEEP))
                continue
            if not isinstance(record, dict):
                kind = type(record).__name__
                self.entries.append((self.lines, None, f"not a JSON object (got {kind})"))
                continue
            self.entries.append((self.lines, record, ""))
            if stdlib:  # as for `SourceLines` (`SourceFacts.may_hold_non_finite`)
                self.facts.may_hold_non_finite = True


#: A JSON Lines source: its whole text, the file read line by line, or lines held decoded.
JsonLinesText = str | SourceLines | DecodedLines
