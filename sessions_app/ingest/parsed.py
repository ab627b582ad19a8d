"""The normalised intermediate form every importer produces, and the turn rules they share.

Each parser turns one source file into `ParseResult` (a list of `ParsedSession` plus the
`ImportProblem`s of the lines it skipped); `write_parsed_session` (in `writer.py`) stores
one `ParsedSession`. The turn rules (SPEC.md 2, and the importer brief) live here, in
`SessionBuilder`, so every format applies them the same way:

- a turn starts at each real user prompt; events before the first prompt belong to the
  first turn (a session with no prompt at all gets one turn holding everything);
- an interrupt marker (Claude's "[Request interrupted by user]", Codex `turn_aborted`)
  makes its turn `interrupted/canceled`;
- the last turn with calls awaiting approval (`pending_call_ids`) is
  `interrupted/consumer_stopped`; the last turn with calls that have no result (and are
  not pending) is `interrupted/abandoned` (the transcript ends inside a tool call);
- everything else is `completed` (a dangling call in an earlier turn is kept as the
  source wrote it: the runtime fails closed on it, SPEC.md 4-5).

All datetimes are timezone-aware UTC. Sources without timestamps use
`synthetic_time(index)`: a base time plus `index` seconds. The base is the source file's
modification time (`synthetic_times_from`, set by `parse_file`: when the file was last
written is the best evidence of when its session ran); outside that, 2000-01-01T00:00:00Z.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sessions_app.models import Session

SYNTHETIC_BASE = datetime(2000, 1, 1, tzinfo=UTC)
_synthetic_base: ContextVar[datetime] = ContextVar("synthetic_base", default=SYNTHETIC_BASE)

_FAILURE_CODE_RE = re.compile(r"[^a-z0-9_.-]+")


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


def parse_iso(value: Any) -> datetime | None:
    """An ISO 8601 string ("...Z" or with offset) or epoch seconds as an aware UTC datetime.

    Returns None for anything else (missing, empty, unparsable). Naive values are taken
    as UTC.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), tz=UTC)
    if not isinstance(value, str) or not value:
        return None
    try:
        # Python 3.11's fromisoformat reads "Z" and fractional seconds of any length.
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def jsonl_objects(
    name: str, text: str, problems: list[ImportProblem]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) for each line of a JSON Lines text (jsonlines.org)
    that holds a JSON object. Blank lines are skipped; a line that is not valid JSON or
    holds another JSON value is reported in `problems` ("not valid JSON (<reason>)",
    "not a JSON object (got <type>)") and skipped. `name` is the file named in problems.
    """
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(ImportProblem(name, number, f"not valid JSON ({exc.msg})"))
            continue
        if not isinstance(record, dict):
            kind = type(record).__name__
            problems.append(ImportProblem(name, number, f"not a JSON object (got {kind})"))
            continue
        yield number, record


def normalise_arguments(value: Any) -> dict[str, Any]:
    """Tool-call arguments as a JSON object (SPEC.md 1 ToolCall).

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
            decoded = json.loads(value)
        except ValueError:
            return {"_raw": value}
        if isinstance(decoded, dict):
            return decoded
        return {"_raw": decoded}
    return {"_raw": value}


def safe_failure_code(value: Any, default: str = "agent_error") -> str:
    """`value` squeezed into a SPEC.md 2 failure code: 1-128 chars of [a-z0-9_.-]."""
    code = _FAILURE_CODE_RE.sub("_", str(value or "").lower()).strip("_")[:128]
    return code or default


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
    """One todo item (SPEC.md 7): content, status (any string) and active form ("" = none)."""

    content: str
    status: str = "pending"
    active_form: str = ""


@dataclass(slots=True)
class ParsedTurn:
    """A turn's record (SPEC.md 2). `status_note` says why the importer chose the outcome."""

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
    todo_changes: list[dict[str, Any]] = field(default_factory=list)
    tool_outcomes: list[dict[str, Any]] = field(default_factory=list)

    def stats(self) -> dict[str, int]:
        """Counts for summaries and tests.

        Keys: turns, events, tool_calls, unanswered_calls (no result anywhere later and not
        pending), pending_calls (awaiting approval / long-running, no result), todo_items.
        """
        answered: set[str] = set()
        pending: set[str] = set()
        calls: list[str] = []
        for event in self.events:
            if event.role == "tool":
                answered.add(event.answered_call_id)
            for call in event.tool_calls:
                calls.append(str(call.get("id", "")))
            pending.update(event.pending_call_ids)
        open_calls = [c for c in calls if c not in answered]
        return {
            "turns": len(self.turns),
            "events": len(self.events),
            "tool_calls": len(calls),
            "unanswered_calls": sum(1 for c in open_calls if c not in pending),
            "pending_calls": sum(1 for c in open_calls if c in pending),
            "todo_items": len(self.todos or []),
        }


@dataclass(slots=True)
class ParseResult:
    """What a parser returns: sessions found, and the lines it skipped (with reasons)."""

    sessions: list[ParsedSession]
    problems: list[ImportProblem] = field(default_factory=list)
    source_format: str = ""


def coerce_todos(value: Any) -> list[ParsedTodo]:
    """Todo items from a TodoWrite/update_plan payload (SPEC.md 7 reading rules).

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


@dataclass(slots=True)
class _TurnDraft:
    events: list[ParsedEvent] = field(default_factory=list)
    interrupt_note: str = ""
    failure_code: str = ""
    failure_stage: str = ""
    failure_note: str = ""


class SessionBuilder:
    """Collects a session's events in order and applies the shared turn rules.

    Use `add(event, prompt=True)` for a real user prompt (starts a turn), `add(event)` for
    anything else, `interrupt(note)` for an interrupt marker, `fail(...)` for a failure the
    source records, `write_todos(items, at)` for each todo-list write, then `build(...)`.
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._preamble: list[ParsedEvent] = []
        self._turns: list[_TurnDraft] = []
        self.todos: list[ParsedTodo] | None = None
        self.todo_version = 0
        self.todo_updated_at: datetime | None = None

    @property
    def events(self) -> list[ParsedEvent]:
        """All events so far, in order."""
        out = list(self._preamble)
        for turn in self._turns:
            out.extend(turn.events)
        return out

    def last_event(self) -> ParsedEvent | None:
        """The most recently added event, or None."""
        if self._turns and self._turns[-1].events:
            return self._turns[-1].events[-1]
        return self._preamble[-1] if self._preamble else None

    def add(self, event: ParsedEvent, *, prompt: bool = False) -> ParsedEvent:
        """Append `event`; a real user prompt (`prompt=True`) starts a new turn."""
        if prompt:
            draft = _TurnDraft()
            if not self._turns:
                draft.events.extend(self._preamble)
                self._preamble = []
            self._turns.append(draft)
            draft.events.append(event)
        elif self._turns:
            self._turns[-1].events.append(event)
        else:
            self._preamble.append(event)
        return event

    def _current(self) -> _TurnDraft:
        if not self._turns:
            draft = _TurnDraft(events=self._preamble)
            self._preamble = []
            self._turns.append(draft)
        return self._turns[-1]

    def interrupt(self, note: str) -> None:
        """Mark the current turn interrupted/canceled (an interrupt marker), with `note`."""
        current = self._current()
        if not current.interrupt_note:
            current.interrupt_note = note

    def fail(self, code: str, stage: str, note: str) -> None:
        """Mark the current turn failed/agent_error with a safe code and stage (SPEC.md 2)."""
        current = self._current()
        if not current.failure_code:
            current.failure_code = safe_failure_code(code)
            current.failure_stage = stage
            current.failure_note = note

    def write_todos(self, items: list[ParsedTodo], at: datetime) -> None:
        """Record one todo-list write: the list becomes `items` (replace, never append)."""
        self.todos = items
        self.todo_version += 1
        self.todo_updated_at = at

    def build(
        self,
        *,
        app_name: str,
        user_id: str,
        title: str,
        state: dict[str, Any],
        source_format: Session.SourceFormat,
        created_at: datetime | None = None,
        updated_at: datetime | None = None,
    ) -> ParsedSession:
        """The finished `ParsedSession`: turn ids `<session id>/turn-NNNN`, outcomes set.

        `state` must not contain `todos` (dropped here: the todo rows are the truth).
        `created_at`/`updated_at` default to the first/last event time.
        """
        if self._preamble:
            self._turns.insert(0, _TurnDraft(events=self._preamble))
            self._preamble = []
        turns: list[ParsedTurn] = []
        events: list[ParsedEvent] = []
        # Results may arrive in a later turn than their call: a call of turn i is answered
        # when a result for its id appears in turn i or later.
        last_answer: dict[str, int] = {}
        for index, draft in enumerate(self._turns):
            for event in draft.events:
                if event.role == "tool":
                    last_answer[event.answered_call_id] = index
        last = len(self._turns) - 1
        for index, draft in enumerate(self._turns):
            turn_id = f"{self.session_id}/turn-{index + 1:04d}"
            times = [e.created_at for e in draft.events]
            started = times[0] if times else synthetic_time(0)
            finished = max([started, *times])
            pending: list[str] = []
            dangling: list[str] = []
            for event in draft.events:
                event.turn_id = turn_id
                for call in event.tool_calls:
                    call_id = str(call.get("id", ""))
                    if last_answer.get(call_id, -1) >= index:
                        continue
                    if call_id in event.pending_call_ids:
                        pending.append(call_id)
                    else:
                        dangling.append(call_id)
            turn = ParsedTurn(
                id=turn_id, status="completed", started_at=started, finished_at=finished
            )
            if draft.failure_code:
                turn.status, turn.reason = "failed", "agent_error"
                turn.failure_code, turn.failure_stage = draft.failure_code, draft.failure_stage
                turn.status_note = draft.failure_note
            elif draft.interrupt_note:
                turn.status, turn.reason = "interrupted", "canceled"
                turn.status_note = draft.interrupt_note
            elif index == last and pending:
                turn.status, turn.reason = "interrupted", "consumer_stopped"
                turn.status_note = "waiting for approval of " + ", ".join(pending)
            elif index == last and dangling:
                turn.status, turn.reason = "interrupted", "abandoned"
                turn.status_note = "transcript ends inside tool call " + ", ".join(dangling)
            elif dangling:
                turn.status_note = "no result for tool call " + ", ".join(dangling)
            turn.status_note = turn.status_note[:500]
            turns.append(turn)
            events.extend(draft.events)
        all_times = [e.created_at for e in events]
        first = min(all_times) if all_times else synthetic_time(0)
        latest = max(all_times) if all_times else first
        clean_state = {k: v for k, v in state.items() if k != "todos"}
        return ParsedSession(
            id=self.session_id,
            app_name=app_name,
            user_id=user_id,
            title=title[:500],
            state=clean_state,
            created_at=created_at or first,
            updated_at=max(updated_at or latest, latest),
            source_format=str(source_format),
            turns=turns,
            events=events,
            todos=self.todos,
            todo_version=self.todo_version,
            todo_updated_at=self.todo_updated_at,
        )


def first_line(text: str, limit: int = 80) -> str:
    """The first non-empty line of `text`, cut to `limit` characters (for titles)."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""
