"""Redacting whole records: an imported session (`redact_parse_result`), a runtime
event's columns (`redact_event_fields`) and todo items (`redact_todo_items`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from agentops.runtime.session import failure_code_of
from sessions_app.ingest.redaction.core import redact_id, redact_text, redact_value
from sessions_app.ingest.redaction.prefilter import might_hold_secret

if TYPE_CHECKING:
    from agentops.runtime.todos import TodoItem
    from sessions_app.ingest.parsed import ParsedEvent, ParsedSession, ParsedTurn, ParseResult

#: Longest title and turn note the columns hold (cut after redacting, never before).
TITLE_LENGTH = 500


class _TurnIds:
    """Redacted turn ids, consistent across a session's turns, events and audit rows:
    ``<session id>/turn-NNNN`` keeps its shape with the redacted session id."""

    def __init__(self, old_session_id: str, new_session_id: str) -> None:
        self._prefix = old_session_id + "/"
        self._new_prefix = new_session_id + "/"
        self._seen: dict[str, str] = {}

    def __call__(self, turn_id: str) -> str:
        new = self._seen.get(turn_id)
        if new is None:
            if turn_id.startswith(self._prefix):
                new = self._new_prefix + redact_id(turn_id[len(self._prefix) :])
            else:
                new = redact_id(turn_id)
            self._seen[turn_id] = new
        return new


def _might_hold(*values: Any) -> bool:
    """The prefilter on a whole event at once: its values as one JSON text (orjson, about
    a microsecond). Sound because the triggers are (see `prefilter`)."""
    try:
        blob = orjson.dumps(values, option=orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return True
    return might_hold_secret(blob.decode())


def redact_parsed_session(parsed: ParsedSession) -> None:
    """Redact, in place, every stored value of a parsed session.

    Ids and names (session id, app name, user id, turn ids) get URL-safe id markers
    (`redact_id`); the model name (cut to its 255-character column) and the title are
    redacted, then cut (the title to 500 characters); everything else (state, source
    path, turn notes and failures, todo items, every event's text, reasoning, author,
    source id, call ids, parts, tool calls, tool response, usage, state delta and raw
    records, an export's todo audit rows and tool outcomes) is redacted as text or as a
    JSON value (`redact_value`, JSON inside strings decoded).
    """
    old_id = parsed.id
    parsed.id = redact_id(old_id)
    turn_id = _TurnIds(old_id, parsed.id)
    parsed.app_name = redact_id(parsed.app_name)
    parsed.user_id = redact_id(parsed.user_id)
    parsed.model = redact_text(parsed.model)[:255]
    parsed.title = redact_text(parsed.title)[:TITLE_LENGTH]
    parsed.state = redact_value(parsed.state)
    if parsed.source_path is not None:
        parsed.source_path = redact_text(parsed.source_path)
    for turn in parsed.turns:
        redact_parsed_turn(turn, turn_id)
    for item in parsed.todos or []:
        item.content = redact_text(item.content)
        item.status = redact_text(item.status)
        item.active_form = redact_text(item.active_form)
    for event in parsed.events:
        redact_parsed_event(event, turn_id)
    changes = []
    for change in parsed.todo_changes:
        redacted = redact_value(change)
        if change.get("turn_id"):
            redacted = {**redacted, "turn_id": turn_id(str(change["turn_id"]))}
        changes.append(redacted)
    parsed.todo_changes = changes
    parsed.tool_outcomes = [redact_value(o) for o in parsed.tool_outcomes]


def session_turn_ids(old_session_id: str) -> Callable[[str], str]:
    """The redacted turn ids of session `old_session_id` (as `redact_parsed_session`
    maps them), for a session redacted a piece at a time (`ingest.streamed`)."""
    return _TurnIds(old_session_id, redact_id(old_session_id))


def redact_parsed_turn(turn: ParsedTurn, turn_id: Callable[[str], str]) -> None:
    """Redact, in place, one turn of a parsed session (`redact_parsed_session`; `turn_id`:
    `session_turn_ids` of its session)."""
    turn.id = turn_id(turn.id)
    turn.status_note = redact_text(turn.status_note)[:TITLE_LENGTH]
    turn.failure_message = redact_text(turn.failure_message)
    code = redact_id(turn.failure_code)
    if code != turn.failure_code:
        turn.failure_code = failure_code_of(code)


def redact_parsed_event(event: ParsedEvent, turn_id: Callable[[str], str]) -> None:
    """Redact, in place, one event of a parsed session (`redact_parsed_session`;
    `turn_id`: `session_turn_ids` of its session)."""
    event.turn_id = turn_id(event.turn_id) if event.turn_id else ""
    if not _might_hold(
        event.text, event.reasoning, event.author, event.source_id, event.tool_call_id,
        event.pending_call_ids, event.parts, event.tool_calls, event.tool_response,
        event.usage, event.state_delta, event.raw,
    ):  # fmt: skip
        return
    event.text = redact_text(event.text)
    event.reasoning = redact_text(event.reasoning)
    event.author = redact_text(event.author)
    event.source_id = redact_text(event.source_id)
    event.tool_call_id = redact_text(event.tool_call_id)
    event.pending_call_ids = [redact_text(c) for c in event.pending_call_ids]
    event.parts = redact_value(event.parts)
    event.tool_calls = redact_value(event.tool_calls)
    event.tool_response = redact_value(event.tool_response)
    event.usage = redact_value(event.usage)
    event.state_delta = redact_value(event.state_delta)
    event.raw = redact_value(event.raw)


def redact_parse_result(result: ParseResult, source_text: str | None) -> None:
    """Redact every session of `result` in place, before anything is written.

    `source_text` is the file the result was parsed from: when the prefilter rules it
    out (`might_hold_secret`), no parsed string can hold a secret and the walk is
    skipped. Pass None to always walk.
    """
    if source_text is not None and not might_hold_secret(source_text):
        return
    for parsed in result.sessions:
        redact_parsed_session(parsed)


#: The columns of a runtime event `redact_event_fields` redacts as text / as JSON.
_EVENT_TEXT_COLUMNS = ("text", "reasoning", "author", "tool_call_id")
_EVENT_JSON_COLUMNS = ("parts", "tool_calls", "tool_response", "usage", "state_delta")


def redact_event_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """A runtime event's column values (`sessions_app.store.rows.row_fields_from_event`)
    with credentials redacted: the same dict when nothing changed, else a new one.

    Ids (turn, session) are left alone: the runtime addresses its rows by them.
    """
    out = dict(fields)
    for name in _EVENT_TEXT_COLUMNS:
        if isinstance(out.get(name), str):
            out[name] = redact_text(out[name])
    for name in _EVENT_JSON_COLUMNS:
        if out.get(name) is not None:
            out[name] = redact_value(out[name])
    changed = any(out[name] is not fields[name] for name in out)
    return out if changed else fields


def redact_todo_items(items: Sequence[TodoItem]) -> list[TodoItem]:
    """Todo items with credentials redacted in content, status and active form (items
    that hold none are returned as they are)."""
    out: list[TodoItem] = []
    for item in items:
        content, status, active = (
            redact_text(item.content),
            redact_text(item.status),
            redact_text(item.active_form),
        )
        if (content, status, active) == (item.content, item.status, item.active_form):
            out.append(item)
        else:
            update = {"content": content, "status": status, "active_form": active}
            out.append(item.model_copy(update=update))
    return out


__all__ = [
    "might_hold_secret",
    "redact_event_fields",
    "redact_parse_result",
    "redact_parsed_event",
    "redact_parsed_session",
    "redact_parsed_turn",
    "redact_todo_items",
    "session_turn_ids",
]
