"""One session of a file imported while it is parsed (`ingest.streaming`): its events
handed on as they settle, its turns decided as they close, nothing of its content held
once written.

A parser adds events to a `SessionBuilder` as for a whole parse; `SessionStream` takes
the events the parser says no later record can change (`take`), and gives each its turn
id, feeds the shared turn rule (`builder.TurnRules`: it keeps per-turn facts and the open
call ids, never events), redacts it and replaces NUL characters when the file may hold
them (the checks of `files.parse_file`, event by event), and counts it for the file's
totals (`parsed.CallTally`) and the session's model. A turn is handed on (`ready_turns`)
once no later event can change it: it has closed (a later turn began and no event of it
is still held) and none of its calls is open; the others at the end (`finish`). The
session's header (title, times, todo list) is final at the end too. The same values as
`SessionBuilder.build`, then `redaction.redact_parse_result` and `files.replace_nul`, give
for the whole session: `tests/test_import_streamed.py` compares the stored rows.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sessions_app.ingest.builder import SessionBuilder, TurnFacts, TurnRules, turn_id_of
from sessions_app.ingest.model_name import model_named
from sessions_app.ingest.normalise import synthetic_time
from sessions_app.ingest.parsed import CallTally, ParsedEvent, ParsedSession, ParsedTurn
from sessions_app.ingest.reading import SourceFacts
from sessions_app.ingest.redaction import (
    redact_parsed_event,
    redact_parsed_session,
    redact_parsed_turn,
    session_turn_ids,
)

__all__ = ["BATCH_EVENTS", "SessionStream"]

#: Settled events a streamed import hands on at a time (one INSERT batch).
BATCH_EVENTS = 1000

#: Held events that a hook (`SessionStream.watch`) is told of after each `take`, tests.
Watcher = Callable[[int], None]


class SessionStream:
    """The settled part of one `SessionBuilder`'s session, handed on piece by piece (see
    the module doc). `facts`: what the first reading of the file learnt of it (whether a
    credential or a NUL character may be in it)."""

    watch: Watcher | None = None

    def __init__(self, builder: SessionBuilder, facts: SourceFacts) -> None:
        self.builder = builder
        self.rules = TurnRules()
        self.tally = CallTally()
        self._facts: dict[int, TurnFacts] = {}
        self._waiting: dict[int, TurnFacts] = {}
        self._closed = 0
        self._redact = facts.may_hold_secret
        self._nul = facts.may_hold_nul
        self._turn_ids = session_turn_ids(builder.session_id)
        self.first: datetime | None = None
        self.latest: datetime | None = None
        self.model = ""

    def take(self, count: int) -> list[ParsedEvent]:
        """The first `count` held events of the builder (the parser says they are
        settled), ready to store, and no longer held."""
        from sessions_app.ingest.files import replace_nul

        held = self.builder.held
        out: list[ParsedEvent] = []
        sid = self.builder.session_id
        for event, index, prompt in held[:count]:
            event.turn_id = turn_id_of(sid, index)
            facts = self._facts.get(index)
            if facts is None:
                facts = self._facts[index] = TurnFacts()
            self.rules.feed(event, index, facts, prompt)
            at = event.created_at
            if self.first is None or at < self.first:
                self.first = at
            if self.latest is None or at > self.latest:
                self.latest = at
            if self._redact:
                redact_parsed_event(event, self._turn_ids)
            if self._nul:
                replace_nul(event)
            self.tally.add(event)
            if found := model_named((event.raw,)):
                self.model = found
            out.append(event)
        del held[:count]
        if SessionStream.watch is not None:
            SessionStream.watch(len(held))
        return out

    def hand_on(self, count: int) -> tuple[list[ParsedEvent], list[ParsedTurn]]:
        """The first `count` held events (`take`), and the turns then ready
        (`ready_turns`): one batch to store."""
        events = self.take(count)
        return events, self.ready_turns()

    def hand_on_rest(self) -> tuple[list[ParsedEvent], list[ParsedTurn]]:
        """Every event still held and every turn not handed on yet (`finish`): the
        session's last batch, once the parser has had its last record."""
        events, turns = self.hand_on(len(self.builder.held))
        return events, [*turns, *self.finish()]

    def _turn(self, index: int, facts: TurnFacts) -> ParsedTurn:
        from sessions_app.ingest.files import replace_nul

        turn = self.rules.turn(self.builder.session_id, index, facts, self.builder.draft(index))
        if self._redact:
            redact_parsed_turn(turn, self._turn_ids)
        if self._nul:
            replace_nul(turn)
        return turn

    def ready_turns(self) -> list[ParsedTurn]:
        """The turns that closed since the last call and that no later event can change
        (`TurnFacts.settled`); closed ones with open calls wait for `finish`."""
        held = self.builder.held
        bound = self.builder.turn_count - 1
        if held:
            bound = min(bound, held[0][1])
        out: list[ParsedTurn] = []
        for index in range(self._closed, max(bound, self._closed)):
            facts = self._facts.pop(index, TurnFacts())
            if facts.settled():
                out.append(self._turn(index, facts))
            else:
                self._waiting[index] = facts
        self._closed = max(bound, self._closed)
        return out

    def finish(self) -> list[ParsedTurn]:
        """Every turn not handed on yet, final: every event was taken (`take`)."""
        if self.builder.held:
            raise RuntimeError("finish() with events still held")
        out = [self._turn(index, facts) for index, facts in sorted(self._waiting.items())]
        for index in range(self._closed, self.builder.turn_count):
            out.append(self._turn(index, self._facts.pop(index, TurnFacts())))
        self._waiting = {}
        self._closed = self.builder.turn_count
        return out

    def header(
        self, title: str, fields: dict[str, Any], model: str = "", **times: datetime | None
    ) -> ParsedSession:
        """The session's header (no turns, no events), redacted as its events are, with
        `title`, `fields` (`SessionBuilder.header`'s), `model` (the one the source names
        apart from its events, "" for none) and its times: `created_at` / `updated_at`
        when given (the first / last event time by default, as `build`)."""
        from sessions_app.ingest.files import replace_nul

        first = self.first or synthetic_time(0)
        latest = self.latest or first
        created, updated = times.get("created_at"), times.get("updated_at")
        parsed = self.builder.header(
            title=title,
            created_at=created or first,
            updated_at=max(updated or latest, latest),
            **fields,
        )
        parsed.model = model
        if self._redact:
            redact_parsed_session(parsed)
        if self._nul:
            replace_nul(parsed)
        return parsed

    def stats(self, todos: Any) -> dict[str, int]:
        """`ParsedSession.stats` of the events taken so far and the turns so far."""
        return self.tally.stats(self.builder.turn_count, todos)
