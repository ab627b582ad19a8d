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
    events: list[ParsedEvent] = field(default_factory=list)
    prompt: ParsedEvent | None = None
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
            draft.prompt = event
        elif self._turns:
            self._turns[-1].events.append(event)
        else:
            self._preamble.append(event)
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
        before = [e for e in self.events if e.archived_at is None]
        open_items = [t for t in self.todos or [] if t.status != "completed"]
        folded = " ".join(event.text.split()).casefold()
        event.author = COMPACTION_AUTHOR
        event.raw = {
            "compaction": {
                "trigger": trigger,
                "pre_tokens": pre_tokens,
                "summarised_events": len(before),
                "summarised_up_to": before[-1].source_id if before else "",
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
                if event.role == "tool" and event.archived_at is None:
                    last_answer[event.answered_call_id] = index
        # Global position of the last real prompt: a call before it was left behind.
        position = 0
        last_prompt = -1
        for draft in self._turns:
            for event in draft.events:
                if event is draft.prompt and event.archived_at is None:
                    last_prompt = position
                position += 1
        position = 0
        for index, draft in enumerate(self._turns):
            turn_id = f"{self.session_id}/turn-{index + 1:04d}"
            times = [e.created_at for e in draft.events]
            started = times[0] if times else synthetic_time(0)
            finished = max([started, *times])
            open_calls = _OpenCalls()
            for event in draft.events:
                event.turn_id = turn_id
                # Archived events (an abandoned rewind branch) are not in the conversation.
                for call in event.tool_calls if event.archived_at is None else ():
                    call_id = str(call.get("id", ""))
                    if last_answer.get(call_id, -1) < index:
                        open_calls.add(call_id, event, position < last_prompt)
                position += 1
            turn = ParsedTurn(
                id=turn_id, status="completed", started_at=started, finished_at=finished
            )
            _decide(turn, draft, open_calls)
            if draft.events and all(e.archived_at is not None for e in draft.events):
                turn.status_note = ABANDONED_BRANCH_NOTE
            turn.status_note = redact_text(turn.status_note)[:500]
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
            title=redact_text(title)[:500],  # redacted before the cut, never after
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


@dataclass(slots=True)
class _OpenCalls:
    """A turn's unanswered calls, split by the turn rule's cases."""

    awaiting: list[str] = field(default_factory=list)
    awaiting_left: list[str] = field(default_factory=list)
    dangling: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)

    def add(self, call_id: str, event: ParsedEvent, later_prompt: bool) -> None:
        """File `call_id` of `event`: awaiting the user or not, a later prompt or not."""
        if call_id in event.pending_call_ids:
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
