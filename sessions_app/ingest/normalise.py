"""Helpers every parser uses to read its source: times, JSON Lines, tool-call arguments,
failure codes, todo items and titles.

All datetimes are timezone-aware UTC. Sources without timestamps use
`synthetic_time(index)`: a base time plus `index` seconds. The base is the source file's
modification time (`synthetic_times_from`, set by `parse_file`: when the file was last
written is the best evidence of when its session ran); outside that, 2000-01-01T00:00:00Z.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from typing import Any

from sessions_app.ingest.parsed import ImportProblem, ParsedTodo
from sessions_app.ingest.reading import TOO_DEEP, DecodedLines, JsonLinesText, decode, loads
from sessions_app.ingest.redaction.core import redact_text

SYNTHETIC_BASE = datetime(2000, 1, 1, tzinfo=UTC)
_synthetic_base: ContextVar[datetime] = ContextVar("synthetic_base", default=SYNTHETIC_BASE)
# The 1-based line `jsonl_objects` yielded last (0: none), for one-line refusals.
_current_line: ContextVar[int] = ContextVar("current_line", default=0)


def synthetic_time(index: int) -> datetime:
    """A UTC time for sources without timestamps: the current base (`synthetic_times_from`;
    default 2000-01-01Z) plus `index` seconds."""
    return _synthetic_base.get() + timedelta(seconds=index)


@contextmanager
def synthetic_times_from(base: datetime) -> Iterator[None]:
    """Within the block, `synthetic_time(0)` is `base` (aware; converted to UTC, whole
    seconds). Raises ValueError for a naive `base`."""
    if base.tzinfo is None:
        raise ValueError("synthetic_times_from needs an aware datetime")
    token = _synthetic_base.set(base.astimezone(UTC).replace(microsecond=0))
    try:
        yield
    finally:
        _synthetic_base.reset(token)


def current_line() -> int:
    """The 1-based line number `jsonl_objects` yielded last in this context (0: none,
    e.g. a whole-file JSON document): where a parser was when a value failed."""
    return _current_line.get()


def at_line(number: int) -> None:
    """Say which 1-based line a parser reads now (0: none) for `current_line`."""
    _current_line.set(number)


def parse_iso(value: Any) -> datetime | None:
    """An ISO 8601 string ("...Z" or with offset) or epoch seconds as an aware UTC datetime.

    Returns None for anything else (missing, empty, unparsable, out of the range a
    datetime holds: years 1-9999). Naive values are taken as UTC.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value:
        return None
    try:
        # Python 3.11's fromisoformat reads "Z" and fractional seconds of any length.
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        return None


def jsonl_objects(
    name: str, text: JsonLinesText, problems: list[ImportProblem]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) for each line of a JSON Lines text (jsonlines.org)
    that holds a JSON object. Blank lines are skipped; a line that is not valid JSON or
    holds another JSON value is reported in `problems` ("not valid JSON (<reason>)",
    "not a JSON object (got <type>)") and skipped. `name` is the file named in problems.
    `text`: the whole text, a file read line by line (`reading.SourceLines`, whose
    facts learn here whether a line may hold a number out of range), or lines already
    decoded (`reading.DecodedLines`: the same objects and problems, nothing decoded
    again). Lines are decoded by `reading.loads` (orjson, read as `json.loads` reads
    them).
    """
    if isinstance(text, DecodedLines):  # decoded once, as its lines arrived (the tail)
        for number, record, problem in text.entries:
            _current_line.set(number)
            if problem == TOO_DEEP:
                raise RecursionError(problem)
            if problem:
                problems.append(ImportProblem(name, number, problem))
                continue
            yield number, record
        return
    lines = text.splitlines() if isinstance(text, str) else text
    source = None if isinstance(text, str) else text
    for number, line in enumerate(lines, start=1):
        _current_line.set(number)
        if not line.strip():
            continue
        try:
            record, stdlib = decode(line, source is None or source.block_has_long_numbers)
        except json.JSONDecodeError as exc:
            problems.append(ImportProblem(name, number, f"not valid JSON ({exc.msg})"))
            continue
        if stdlib and source is not None:
            source.facts.may_hold_non_finite = True
        if not isinstance(record, dict):
            kind = type(record).__name__
            problems.append(ImportProblem(name, number, f"not a JSON object (got {kind})"))
            continue
        yield number, record


def normalise_arguments(value: Any) -> dict[str, Any]:
    """Tool-call arguments as a JSON object (docs/runtime.md §1 ToolCall).

    A JSON string holding an object is unwrapped; empty/None becomes {}; any other value
    (a non-object JSON string, a list, a scalar) is kept under {"_raw": value} so nothing
    is lost and the shape stays an object.
    """
    if value is None or value == "":
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            decoded = loads(value)
        except ValueError:
            return {"_raw": value}
        if isinstance(decoded, dict):
            return decoded
        return {"_raw": decoded}
    return {"_raw": value}


def coerce_todos(value: Any) -> list[ParsedTodo]:
    """Todo items from a TodoWrite/update_plan payload (docs/runtime.md §7 reading rules).

    Accepts Claude's {content, status, activeForm}, the old {id, content, status,
    priority} and Codex's {step, status}; non-mapping entries are skipped; non-string
    fields become "". Anything other than a list gives no items.
    """
    items: list[ParsedTodo] = []
    if not isinstance(value, list):
        return items
    for entry in value:
        if not isinstance(entry, dict):
            continue
        content = entry.get("content", entry.get("step", ""))
        status = entry.get("status", "pending")
        active = entry.get("activeForm", entry.get("active_form", ""))
        items.append(
            ParsedTodo(
                content=content if isinstance(content, str) else "",
                status=status if isinstance(status, str) else "",
                active_form=active if isinstance(active, str) else "",
            )
        )
    return items


def first_line(text: str, limit: int = 80) -> str:
    """The first non-empty line of `text`, credentials redacted, THEN cut to `limit`
    characters (for titles: a secret straddling the cut never shows its first part)."""
    for line in text.splitlines():
        line = redact_text(line.strip())
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def decode_output(output: Any) -> Any:
    """A tool call's output as sources write it: JSON text decoded, anything else (plain
    text, a list of content parts) as it is."""
    if isinstance(output, str):
        try:
            return loads(output)
        except ValueError:
            return output
    return output


class SyntheticClock:
    """Times for a source without timestamps: each call gives the next `synthetic_time`
    (one second apart, from 0)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> datetime:
        self.count += 1
        return synthetic_time(self.count - 1)


def json_or_none(value: Any) -> Any:
    """`value` decoded when it is JSON text, None when it is text that is not JSON, else
    `value` itself (a column or attribute that holds JSON as text or already decoded)."""
    if isinstance(value, str):
        try:
            return loads(value)
        except ValueError:
            return None
    return value


def storable(value: Any) -> Any:
    """`value` with the characters of its texts that a database cannot store as U+FFFD,
    in keys and nested lists and objects too: NUL (PostgreSQL stores none, in text or
    JSON; imports replace it so too) and a lone surrogate (JSON's ``"\\ud800"`` decodes to
    one; UTF-8 has none); `value` itself when it holds none (most texts are ASCII)."""
    if isinstance(value, str):
        if "\x00" in value:
            value = value.replace("\x00", "\ufffd")
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return value
    if isinstance(value, dict):
        for k, v in value.items():  # most values are ASCII texts: nothing made for them
            ascii_text = type(v) is str and v.isascii() and "\x00" not in v
            if storable(k) is not k or (not ascii_text and storable(v) is not v):
                return {storable(k): storable(v) for k, v in value.items()}
        return value
    if isinstance(value, list):
        found = [storable(v) for v in value]
        return value if all(a is b for a, b in zip(found, value, strict=True)) else found
    return value
