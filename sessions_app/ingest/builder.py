"""The turn rules every importer shares (docs/runtime.md §2, and the importer brief), in
`SessionBuilder`, so every format applies them the same way:

- a turn starts at each real user prompt; events before the first prompt belong to the
  first turn (a session with no prompt at all gets one turn holding everything);
- an interrupt marker (Claude's "[Request interrupted by user]", Codex `turn_aborted`)
  makes its turn `interrupted/canceled`;
- the last turn with calls awaiting approval (`pending_call_ids`) is
  `interrupted/consumer_stopped`; the last turn with calls that have no result (and are
  not pending) is `interrupted/abandoned` (the transcript ends inside a tool call);
- everything else is `completed` (a dangling call in an earlier turn is kept as the
  source wrote it: the runtime fails closed on it, docs/runtime.md §4-5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sessions_app.ingest.normalise import safe_failure_code, synthetic_time
from sessions_app.ingest.parsed import ParsedEvent, ParsedSession, ParsedTodo, ParsedTurn
from sessions_app.ingest.redaction import redact_id, redact_text
from sessions_app.models import Session


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
        """Mark the current turn failed/agent_error with a safe code and stage
        (docs/runtime.md §2)."""
        current = self._current()
        if not current.failure_code:
            # Redacted before it is squeezed (lower-cased): the squeeze would hide its shape.
            current.failure_code = safe_failure_code(redact_id(code))
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
