"""OpenAI Responses-API item lists: a bare JSON list of input/output items, or a request
body `{model, input: [...] | "text", instructions?}`.

Items are read by `responses_items.ResponsesReader` (message, reasoning, function_call /
function_call_output and every other call type with its output). Detection: a list whose
every element is an object with a known item `type` or a `role`, with at least one typed
item (a list of `{role, content}` only stays OpenAI chat); or an object with `input` and
`model`. `instructions` becomes a system event.

The shape has no timestamps: item `i` gets `synthetic_time(i)`. The session id is
derived from the file name (`openai-responses:<name>`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sessions_app.ingest.builder import SessionBuilder
from sessions_app.ingest.formats.openai_chat import file_stem
from sessions_app.ingest.formats.responses_items import ITEM_TYPES, ResponsesReader
from sessions_app.ingest.normalise import SyntheticClock, first_line
from sessions_app.ingest.parsed import ImportProblem, ParsedEvent, ParseResult
from sessions_app.ingest.registry import JsonDocumentFormat
from sessions_app.models import Session


def _items(data: Any) -> list[Any] | None:
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and "model" in data:
        value = data.get("input")
        if isinstance(value, str):
            return [{"type": "message", "role": "user", "content": value}]
        if isinstance(value, list):
            return value
    return None


def looks_like_responses(data: Any) -> bool:
    """True for a Responses item list or a Responses request body (see the module
    docstring)."""
    items = _items(data)
    if not items:
        return False
    typed = False
    for item in items:
        if not isinstance(item, dict):
            return False
        kind = item.get("type")
        if kind in ITEM_TYPES:
            typed = True
        elif kind is not None or "role" not in item:
            return False
    return typed or isinstance(data, dict)


def parse_openai_responses(path: Path, data: Any) -> ParseResult:
    """Parse a decoded Responses item list or request body (see the module docstring)."""
    name = str(path)
    session_id = f"openai-responses:{file_stem(path)}"
    builder = SessionBuilder(session_id)
    reader = ResponsesReader(builder)
    problems: list[ImportProblem] = []
    tick = SyntheticClock()

    if isinstance(data, dict) and isinstance(data.get("instructions"), str):
        builder.add(
            ParsedEvent(
                role="system",
                created_at=tick(),
                author="instructions",
                text=data["instructions"],
                raw={"instructions": data["instructions"]},
            )
        )
    for index, item in enumerate(_items(data) or []):
        if not isinstance(item, dict) or not reader.add(item, tick, item):
            kind = item.get("type") if isinstance(item, dict) else type(item).__name__
            problems.append(ImportProblem(name, 0, f"item {index} has unknown type {kind!r}"))
    reader.finish(tick())
    sessions = []
    if builder.events:
        sessions.append(
            builder.build(
                app_name="openai-responses",
                user_id="",
                title=first_line(reader.first_prompt) or session_id,
                state={},
                source_format=Session.SourceFormat.OPENAI_RESPONSES,
            )
        )
    return ParseResult(sessions=sessions, problems=problems)


FORMAT = JsonDocumentFormat(
    name=Session.SourceFormat.OPENAI_RESPONSES,
    looks_like=looks_like_responses,
    parse_document=parse_openai_responses,
)
