"""The turn rules every importer shares (docs/runtime.md §2), in `SessionBuilder`, so every
format applies them the same way (README, "Importing transcripts"; docs/concepts.md, turn
outcomes of imports):

- a turn starts at each real user prompt, wherever it sits; events before the first
  prompt belong to the first turn (a session with no prompt at all gets one turn holding
  everything);
- a call is *unanswered* when no result for its id comes after it (in its turn or a
  later one); a call the source marks as waiting for a person (`pending_call_ids`:
  approvals, long-running calls, questions to the user) is *awaiting the user*;
- the outcome of a turn, first rule that applies:
  1. the source records a failure: `failed/agent_error` with its safe code;
  2. an interrupt marker (Claude's "[Request interrupted by user]", Codex
     `turn_aborted`): `interrupted/canceled`;
  3. calls awaiting the user and no later prompt: `interrupted/consumer_stopped`,
     note "awaiting the user: ...";
  4. unanswered calls and no later prompt (the transcript really ends inside a call):
     `interrupted/abandoned`, note "transcript ends inside tool call ...";
  5. unanswered calls followed by a later prompt: `completed`, note "left with an
     unknown tool outcome: ..." (kept as the source wrote it: the runtime fails closed
     on it, docs/runtime.md §4-5);
  6. anything else: `completed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentops.runtime.session import failure_code_of
from sessions_app.ingest.normalise import synthetic_time
from sessions_app.ingest.parsed import ParsedEvent, ParsedSession, ParsedTodo, ParsedTurn
from sessions_app.ingest.redaction import redact_id, redact_text
from sessions_app.models import Session
from sessions_app.projector import COMPACTION_AUTHOR

#: The note prefixes of the turn rule (one wording for every format).
AWAITING_USER_NOTE = "awaiting the user: "
ENDS_INSIDE_CALL_NOTE = "transcript ends inside tool call "
UNKNOWN_OUTCOME_NOTE = "left with an unknown tool outcome: no result for tool call "
ABANDONED_BRANCH_NOTE = "abandoned branch: the conversation was rewound past this turn"


@dataclass(slots=True)
class _TurnDraft:
    """What the source says of one turn (interrupt marker, failure)."""

    interrupt_note: str = ""
    failure_code: str = ""
    failure_stage: str = ""
    failure_note: str = ""


@dataclass(slots=True)
class _Call:
    """A call of an active event as the turn rule files it: still open (no result for its
    id in its turn or a later one so far), awaiting the user, where it sits."""

    call_id: str
    pending: bool
    position: int
    open: bool = True


@dataclass(slots=True)
class TurnFacts:
    """What the turn rule needs of one turn's events, gathered as they are fed in order
    (`TurnRules.feed`): the first and latest times, how many events (archived ones) and
    its calls still open."""

    started: datetime | None = None
    latest: datetime | None = None
    events: int = 0
    archived: int = 0
    calls: list[_Call] = field(default_factory=list)

    def settled(self) -> bool:
        """True when no later event can change the turn's outcome: none of its calls is
        open (a call once answered stays answered; the later-prompt case only matters for
        open calls)."""
        return not any(call.open for call in self.calls)


class TurnRules:
    """The module's turn rule over a session's events fed once, in order (`feed`): what
    each turn needs is kept per turn (`TurnFacts`), never the events, so a session can be
    decided while its events stream past (`ingest.streamed`) as well as whole (`build`).

    A call of turn i is answered when a result for its id comes in turn i (before or after
    it) or later; `last_prompt` is the position of the last real prompt that is not
    archived (a call before it was left behind)."""

    def __init__(self) -> None:
        self._open: dict[str, list[_Call]] = {}
        self._turn = -1
        self._turn_results: set[str] = set()
        self.position = 0
        self.last_prompt = -1

    def feed(self, event: ParsedEvent, turn: int, facts: TurnFacts, prompt: bool) -> None:
        """Take `event` (the next in order) of turn `turn` (whose facts are `facts`);
        `prompt`: it is the real prompt that started its turn."""
        if turn != self._turn:
            self._turn, self._turn_results = turn, set()
        at = event.created_at
        if facts.started is None:
            facts.started = facts.latest = at
        elif facts.latest is None or at > facts.latest:
            facts.latest = at
        facts.events += 1
        active = event.archived_at is None
        if not active:
            facts.archived += 1
        elif event.role == "tool":
            answered = event.answered_call_id
            for entry in self._open.pop(answered, ()):
                entry.open = False
            self._turn_results.add(answered)
        # Archived events (an abandoned rewind branch) are not in the conversation.
        for call in event.tool_calls if active else ():
            call_id = str(call.get("id", ""))
            if call_id in self._turn_results:
                continue
            entry = _Call(call_id, call_id in event.pending_call_ids, self.position)
            facts.calls.append(entry)
            self._open.setdefault(call_id, []).append(entry)
        if prompt and active:
            self.last_prompt = self.position
        self.position += 1

    def turn(self, session_id: str, index: int, facts: TurnFacts, draft: _TurnDraft) -> ParsedTurn:
        """Turn `index` (0-based) of the session with its outcome, as far as the events fed
        so far tell (final once `facts.settled()` or every event was fed)."""
        turn_id = turn_id_of(session_id, index)
        started = facts.started or synthetic_time(0)
        finished = max(started, facts.latest or started)
        open_calls = _OpenCalls()
        for call in facts.calls:
            if call.open:
                open_calls.add(call.call_id, call.pending, call.position < self.last_prompt)
        turn = ParsedTurn(id=turn_id, status="completed", started_at=started, finished_at=finished)
        _decide(turn, draft, open_calls)
        if facts.events and facts.archived == facts.events:
            turn.status_note = ABANDONED_BRANCH_NOTE
        turn.status_note = redact_text(turn.status_note)[:500]
        return turn


def turn_id_of(session_id: str, index: int) -> str:
    """The id of turn `index` (0-based) of session `session_id`."""
    return f"{session_id}/turn-{index + 1:04d}"


class SessionBuilder:
    """Collects a session's events in order and applies the shared turn rules.

    Use `add(event, prompt=True)` for a real user prompt (starts a turn), `add(event)` for
    anything else, `interrupt(note)` for an interrupt marker, `fail(...)` for a failure the
    source records, `write_todos(items, at)` for each todo-list write, then `build(...)`.
    Each event is held with its turn's index (events before the first prompt belong to
    the first turn) and whether it started its turn (`held`); `ingest.streamed` hands
    settled ones on instead of keeping them.
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.held: list[tuple[ParsedEvent, int, bool]] = []
        self._drafts: list[_TurnDraft] = []
        self._added = 0
        self._active = 0
        self._last_active_source = ""
        self.todos: list[ParsedTodo] | None = None
        self.todo_version = 0
        self.todo_updated_at: datetime | None = None

    @property
    def events(self) -> list[ParsedEvent]:
        """All events held, in order."""
        return [event for event, _turn, _prompt in self.held]

    @property
    def turn_count(self) -> int:
        """How many turns the session has so far (events before a first prompt: one)."""
        return len(self._drafts) or (1 if self._added else 0)

    def last_event(self) -> ParsedEvent | None:
        """The most recently added event still held, or None."""
        return self.held[-1][0] if self.held else None

    def add(self, event: ParsedEvent, *, prompt: bool = False) -> ParsedEvent:
        """Append `event`; a real user prompt (`prompt=True`) starts a new turn."""
        if prompt:
            self._drafts.append(_TurnDraft())
        self.held.append((event, max(len(self._drafts) - 1, 0), prompt))
        self._added += 1
        if event.archived_at is None:
            self._active += 1
            self._last_active_source = event.source_id
        return event

    def compaction(
        self,
        event: ParsedEvent,
        *,
        trigger: str,
        pre_tokens: int | None,
        records: list[Any],
    ) -> ParsedEvent:
        """Append `event` (role user, its text the summary) as a compaction event, never a
        prompt: author `COMPACTION_AUTHOR`, `raw` = {"compaction": facts, "records":
        `records`}; facts: `trigger` ("" unknown), `pre_tokens`, `summarised_events` (the
        active events before it), `summarised_up_to` (the last one's source id) and
        `todo_carried` (None: no open todo item to carry; else whether the summary names
        every open item)."""
        open_items = [t for t in self.todos or [] if t.status != "completed"]
        folded = " ".join(event.text.split()).casefold()
        event.author = COMPACTION_AUTHOR
        event.raw = {
            "compaction": {
                "trigger": trigger,
                "pre_tokens": pre_tokens,
                "summarised_events": self._active,
                "summarised_up_to": self._last_active_source if self._active else "",
                "todo_carried": all(
                    " ".join(t.content.split()).casefold() in folded for t in open_items
                )
                if open_items
                else None,
            },
            "records": records,
        }
        return self.add(event)

    def _current(self) -> _TurnDraft:
        if not self._drafts:
            self._drafts.append(_TurnDraft())
        return self._drafts[-1]

    def draft(self, index: int) -> _TurnDraft:
        """What the source said of turn `index` (a turn without a prompt: nothing)."""
        return self._drafts[index] if index < len(self._drafts) else _TurnDraft()

    def interrupt(self, note: str) -> None:
        """Mark the current turn interrupted/canceled (an interrupt marker), with `note`."""
        current = self._current()
        if not current.interrupt_note:
            current.interrupt_note = note

    def fail(self, code: str, stage: str, note: str) -> None:
        """Mark the current turn failed/agent_error with a safe code and stage
        (docs/runtime.md §2)."""
        current = self._current()
        if not current.failure_code:
            # Redacted before it is squeezed (lower-cased): the squeeze would hide its shape.
            current.failure_code = failure_code_of(redact_id(code))
            current.failure_stage = stage
            current.failure_note = note

    def write_todos(self, items: list[ParsedTodo], at: datetime) -> None:
        """Record one todo-list write: the list becomes `items` (replace, never append)."""
        self.todos = items
        self.todo_version += 1
        self.todo_updated_at = at

    def header(
        self,
        *,
        app_name: str,
        user_id: str,
        title: str,
        state: dict[str, Any],
        source_format: Session.SourceFormat,
        created_at: datetime,
        updated_at: datetime,
    ) -> ParsedSession:
        """The session without turns or events: title redacted, then cut; `todos` dropped
        from `state` (the todo rows are the truth); the todo list so far."""
        return ParsedSession(
            id=self.session_id,
            app_name=app_name,
            user_id=user_id,
            title=redact_text(title)[:500],  # redacted before the cut, never after
            state={k: v for k, v in state.items() if k != "todos"},
            created_at=created_at,
            updated_at=updated_at,
            source_format=str(source_format),
            todos=self.todos,
            todo_version=self.todo_version,
            todo_updated_at=self.todo_updated_at,
        )

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
        """The finished `ParsedSession`: turn ids `<session id>/turn-NNNN`, outcomes set
        (`TurnRules`).

        `state` must not contain `todos` (dropped here: the todo rows are the truth).
        `created_at`/`updated_at` default to the first/last event time.
        """
        rules = TurnRules()
        facts = [TurnFacts() for _ in range(self.turn_count)]
        events: list[ParsedEvent] = []
        for event, index, prompt in self.held:
            event.turn_id = turn_id_of(self.session_id, index)
            rules.feed(event, index, facts[index], prompt)
            events.append(event)
        turns = [
            rules.turn(self.session_id, index, f, self.draft(index))
            for index, f in enumerate(facts)
        ]
        all_times = [e.created_at for e in events]
        first = min(all_times) if all_times else synthetic_time(0)
        latest = max(all_times) if all_times else first
        parsed = self.header(
            app_name=app_name,
            user_id=user_id,
            title=title,
            state=state,
            source_format=source_format,
            created_at=created_at or first,
            updated_at=max(updated_at or latest, latest),
        )
        parsed.turns, parsed.events = turns, events
        return parsed


@dataclass(slots=True)
class _OpenCalls:
    """A turn's unanswered calls, split by the turn rule's cases."""

    awaiting: list[str] = field(default_factory=list)
    awaiting_left: list[str] = field(default_factory=list)
    dangling: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)

    def add(self, call_id: str, pending: bool, later_prompt: bool) -> None:
        """File `call_id`: awaiting the user or not, a later prompt or not."""
        if pending:
            (self.awaiting_left if later_prompt else self.awaiting).append(call_id)
        else:
            (self.left if later_prompt else self.dangling).append(call_id)


def _decide(turn: ParsedTurn, draft: _TurnDraft, calls: _OpenCalls) -> None:
    """Set `turn`'s outcome and note by the module's turn rule (first rule that applies)."""
    if draft.failure_code:
        turn.status, turn.reason = "failed", "agent_error"
        turn.failure_code, turn.failure_stage = draft.failure_code, draft.failure_stage
        turn.status_note = draft.failure_note
    elif draft.interrupt_note:
        turn.status, turn.reason = "interrupted", "canceled"
        turn.status_note = draft.interrupt_note
    elif calls.awaiting:
        turn.status, turn.reason = "interrupted", "consumer_stopped"
        turn.status_note = AWAITING_USER_NOTE + ", ".join(calls.awaiting)
    elif calls.dangling:
        turn.status, turn.reason = "interrupted", "abandoned"
        turn.status_note = ENDS_INSIDE_CALL_NOTE + ", ".join(calls.dangling)
    else:
        notes = []
        if calls.left:
            notes.append(UNKNOWN_OUTCOME_NOTE + ", ".join(calls.left))
        if calls.awaiting_left:
            notes.append(AWAITING_USER_NOTE + ", ".join(calls.awaiting_left))
        turn.status_note = "; ".join(notes)
    turn.status_note = turn.status_note[:500]
