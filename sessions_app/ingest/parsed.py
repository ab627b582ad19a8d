"""The normalised intermediate form every importer produces.

Each parser turns one source file into `ParseResult` (a list of `ParsedSession` plus the
`ImportProblem`s of the lines it skipped); `write_parsed_session` (in `writer.py`) stores
one `ParsedSession`. All datetimes are timezone-aware UTC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(slots=True)
class ImportProblem:
    """A line (or the whole file) an importer could not use.

    `line` is 1-based, as editors show it (0 means the file as a whole); `reason` is a
    short specific message. `str()` gives "PATH:LINE: reason".
    """

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass(slots=True)
class ParsedTodo:
    """One todo item (docs/runtime.md §7): content, status (any string) and active form ("" =
    none)."""

    content: str
    status: str = "pending"
    active_form: str = ""


@dataclass(slots=True)
class ParsedTurn:
    """A turn's record (docs/runtime.md §2). `status_note` says why the importer chose the
    outcome."""

    id: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    reason: str = ""
    status_note: str = ""
    failure_code: str = ""
    failure_stage: str = ""
    failure_message: str = ""


@dataclass(slots=True)
class ParsedEvent:
    """One event in `Event` column shapes (see sessions_app.models.Event).

    `raw` is the source record (or the list of records merged into this event).
    """

    role: str
    created_at: datetime
    turn_id: str = ""
    text: str = ""
    author: str = ""
    source_id: str = ""
    parts: list[dict[str, Any]] = field(default_factory=list)
    reasoning: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_response: dict[str, Any] | None = None
    tool_call_id: str = ""
    pending_call_ids: list[str] = field(default_factory=list)
    finish_reason: str = ""
    usage: dict[str, Any] | None = None
    state_delta: dict[str, Any] = field(default_factory=dict)
    raw: Any = None
    # Only an agentops export carries these (None: updated_at = created_at, not deleted,
    # not archived; original_id: the id the event had where it was exported).
    updated_at: datetime | None = None
    deleted_at: datetime | None = None
    archived_at: datetime | None = None
    original_id: int | None = None

    @property
    def answered_call_id(self) -> str:
        """The call id this (tool) event answers: tool_response's, else tool_call_id."""
        if self.tool_response and self.tool_response.get("tool_call_id"):
            return str(self.tool_response["tool_call_id"])
        return self.tool_call_id


@dataclass(slots=True)
class ParsedSession:
    """A whole session ready to be written: header, turns, events (in order) and todos.

    `todos` is the last todo-list write seen (None = the source never wrote one);
    `todo_version` counts the writes and `todo_updated_at` is the time of the last one.
    `source_format` is a `Session.SourceFormat` value.
    """

    id: str
    app_name: str
    user_id: str
    title: str
    state: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    source_format: str
    turns: list[ParsedTurn] = field(default_factory=list)
    events: list[ParsedEvent] = field(default_factory=list)
    todos: list[ParsedTodo] | None = None
    todo_version: int = 0
    todo_updated_at: datetime | None = None
    # Only an agentops export carries these. `source_path` (None: the imported file's
    # path) keeps where the session first came from. `todo_changes` and `tool_outcomes`
    # are rows in `TodoChange` / `ToolOutcome` attnames, except that `event_id` holds the
    # exported event id (mapped to the new id on write) and `user` / `recorded_by` a
    # username (None or unknown: no user).
    source_path: str | None = None
    # A sub-agent's session names its parent session and, when known, the call that
    # started it (`Session.parent_session_id`, `parent_call_id`).
    parent_session_id: str = ""
    parent_call_id: str = ""
    # The model the source names ("" = take it from the events' raw records on write).
    model: str = ""
    todo_changes: list[dict[str, Any]] = field(default_factory=list)
    tool_outcomes: list[dict[str, Any]] = field(default_factory=list)

    def stats(self) -> dict[str, int]:
        """Counts for summaries and tests.

        Keys: turns, events, tool_calls, unanswered_calls (no result anywhere later and not
        pending), pending_calls (awaiting approval / long-running, no result), todo_items.
        """
        tally = CallTally()
        for event in self.events:
            tally.add(event)
        return tally.stats(len(self.turns), self.todos)


class CallTally:
    """`ParsedSession.stats` of events fed once, in order (`add`): a call is unanswered
    when no result for its id comes anywhere in the session (before or after it) and
    pending when some event marks its id as awaiting a person. Keeps ids, not events."""

    def __init__(self) -> None:
        self.events = 0
        self.calls = 0
        self._answered: set[str] = set()
        self._pending: set[str] = set()
        self._open: dict[str, int] = {}

    def add(self, event: ParsedEvent) -> None:
        """Count `event` (the next in order)."""
        self.events += 1
        if event.role == "tool":
            answered = event.answered_call_id
            self._answered.add(answered)
            self._open.pop(answered, None)
        for call in event.tool_calls:
            call_id = str(call.get("id", ""))
            self.calls += 1
            if call_id not in self._answered:
                self._open[call_id] = self._open.get(call_id, 0) + 1
        self._pending.update(event.pending_call_ids)

    def stats(self, turns: int, todos: list[ParsedTodo] | None) -> dict[str, int]:
        """The `ParsedSession.stats` keys, for a session of `turns` turns and `todos`."""
        pending = self._pending
        return {
            "turns": turns,
            "events": self.events,
            "tool_calls": self.calls,
            "unanswered_calls": sum(n for c, n in self._open.items() if c not in pending),
            "pending_calls": sum(n for c, n in self._open.items() if c in pending),
            "todo_items": len(todos or []),
        }


@dataclass(slots=True)
class ParseResult:
    """What a parser returns: sessions found, and the lines it skipped (with reasons).

    `empty_reason`: when there is no session, why (said in the refusal), "" for the
    generic reason."""

    sessions: list[ParsedSession]
    problems: list[ImportProblem] = field(default_factory=list)
    source_format: str = ""
    empty_reason: str = ""


def tool_result_event(
    *,
    call_id: str,
    response: dict[str, Any],
    at: datetime,
    source_id: str,
    author: str = "tool",
    raw: Any = None,
    **extra: Any,
) -> ParsedEvent:
    """The tool-result event answering `call_id` with `response` (`{tool_call_id, name,
    result | error}`), as every format stores it; `extra` sets other `ParsedEvent` fields
    (e.g. `state_delta`, `archived_at`)."""
    return ParsedEvent(
        role="tool",
        created_at=at,
        author=author,
        source_id=source_id,
        tool_call_id=call_id,
        tool_response=response,
        raw=raw,
        **extra,
    )
