"""Where a search query was found in an event, as a short excerpt with the words marked.

The database's full-text engine says *which* events match (`search.text`); this module
says *where* for the reader: the first field of the event that holds a query word
(message, reasoning, tool call, tool result) and about `WIDTH` characters around it, cut
into plain and marked pieces (the template escapes both). A word is found in any case,
at a boundary of letters and digits (so `order` is found in `get_order`, as the engines
split words at punctuation).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from sessions_app.models import Event
from sessions_app.pages.presenters import result_display

WIDTH = 200
"""About how many characters of the field an excerpt shows."""


@dataclass(frozen=True)
class Piece:
    """A piece of an excerpt: `text`, and whether it is a query word (`marked`)."""

    text: str
    marked: bool = False


@dataclass(frozen=True)
class Snippet:
    """Where the query was found: `field` ("message", "reasoning", "tool call",
    "tool result") and the excerpt's `pieces`; `cut_before` / `cut_after` say whether
    the field goes on beyond the excerpt."""

    field: str
    pieces: list[Piece]
    cut_before: bool = False
    cut_after: bool = False


def _fields(event: Event) -> Iterator[tuple[str, str]]:
    """The event's searchable text, field by field, as the page shows it."""
    if isinstance(event.parts, list):
        texts = [str(p.get("text") or "") for p in event.parts if isinstance(p, dict)]
        yield "message", "\n".join(t for t in texts if t) or event.text
    else:
        yield "message", event.text
    yield "reasoning", event.reasoning
    calls = event.tool_calls if isinstance(event.tool_calls, list) else []
    for call in calls:
        if isinstance(call, dict):
            arguments = json.dumps(call.get("arguments", {}), ensure_ascii=False)
            yield "tool call", f"{call.get('name', '')} {arguments}"
    if event.tool_response:
        response = event.tool_response
        name = response.get("name", "") if isinstance(response, dict) else ""
        yield (
            "tool result",
            f"{name}: {result_display(event).text}" if name else (result_display(event).text),
        )


def words_pattern(query: str) -> re.Pattern[str] | None:
    """A pattern finding any word of `query` (any case, at letter/digit boundaries);
    None when the query has no word."""
    words = sorted({w for w in query.split() if w}, key=len, reverse=True)
    if not words:
        return None
    alternatives = "|".join(re.escape(w) for w in words)
    return re.compile(rf"(?<![^\W_])(?:{alternatives})(?![^\W_])", re.IGNORECASE)


_SPACE = re.compile(r"\s+")


def _window(text: str, at: int) -> tuple[int, int]:
    """Start and end of about WIDTH characters of `text` around position `at`, moved to
    word boundaries when one is near, without leading or trailing white space."""
    start = max(at - WIDTH // 3, 0)
    if start > 0:
        space = text.find(" ", start, at)
        start = space + 1 if space != -1 and space - start < 20 else start
    end = min(start + WIDTH, len(text))
    if end < len(text):
        space = text.rfind(" ", at, end)
        end = space if space != -1 and end - space < 20 else end
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def snippet(event: Event, query: str) -> Snippet | None:
    """The excerpt of `event` around the first word of `query` it holds, or None when no
    field holds one as written (the engine matched a form this module does not find:
    e.g. a word split differently)."""
    pattern = words_pattern(query)
    if pattern is None:
        return None
    for field, text in _fields(event):
        text = text or ""
        found = pattern.search(text)
        if found is None:
            continue
        start, end = _window(text, found.start())
        window = text[start:end]
        pieces: list[Piece] = []
        at = 0
        for match in pattern.finditer(window):
            if match.start() > at:
                pieces.append(Piece(_SPACE.sub(" ", window[at : match.start()])))
            pieces.append(Piece(match.group(), marked=True))
            at = match.end()
        if at < len(window):
            pieces.append(Piece(_SPACE.sub(" ", window[at:])))
        return Snippet(field, pieces, cut_before=start > 0, cut_after=end < len(text))
    return None
