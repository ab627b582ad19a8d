"""A Codex CLI rollout read twice, so that its session can be written while it is parsed
(`ingest.streaming`), with exactly the session `formats.codex_cli` gives.

The first reading (`read_codex_stream`) keeps what needs the whole file and none of its
content: the problems (every skipped line, then every token count that is not a number,
the order of the whole parse), the first `session_meta` (the session's id and start),
the model the last `turn_context` names, and whether any record gives an event (a rollout
with none has no session: the whole parse refuses it, saying why). The second reading
(`pieces`) feeds each record to the parser's `codex_cli.Rollout` and hands on, a batch at
a time, every event held but the last (the only one a later record changes: parallel
calls join it), with the turns that closed (`streamed.SessionStream`). Memory holds the
call ids and names (for the results that come later), a few bytes per turn, and one batch
of events.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from sessions_app.ingest.formats.codex_cli import (
    SESSION_FIELDS,
    TOKEN_COUNT_PROBLEM,
    Rollout,
    adds_event,
    first_meta,
    model_of_record,
    rollout_items,
    session_id_of,
    token_usage,
)
from sessions_app.ingest.normalise import parse_iso
from sessions_app.ingest.parsed import ImportProblem, ParsedEvent, ParsedSession, ParsedTurn
from sessions_app.ingest.reading import SourceLines
from sessions_app.ingest.streamed import BATCH_EVENTS, SessionStream
from sessions_app.models import Session

__all__ = ["CodexStream", "read_codex_stream"]


@dataclass
class CodexStream:
    """A Codex CLI rollout after its first reading (see the module doc): a
    `streaming.FileStream` of one session."""

    source_format: ClassVar[str] = Session.SourceFormat.CODEX_CLI
    path: Path
    lines: SourceLines
    problems: list[ImportProblem]
    meta: dict[str, Any]
    model: str
    headers: list[ParsedSession] = field(default_factory=list)
    streams: list[SessionStream] = field(default_factory=list)
    rollout: Rollout | None = None

    def start(self) -> None:
        """Set up the session's parser and stream; `headers` holds its first header (id,
        app, format: written before any event, completed by `finals`)."""
        # The second reading's problems are the first's again: not kept twice.
        self.rollout = Rollout(str(self.path), session_id_of(self.path, self.meta), [])
        self.streams = [SessionStream(self.rollout.builder, self.lines.facts)]
        self.headers = [self._header("")]

    def _header(self, title: str) -> ParsedSession:
        created = parse_iso(self.meta.get("timestamp"))
        return self.streams[0].header(title, SESSION_FIELDS, self.model, created_at=created)

    def pieces(self) -> Iterator[tuple[SessionStream, list[ParsedEvent], list[ParsedTurn]]]:
        """(session, events, turns) to store, in order, a batch at a time: the second
        reading (see the module doc). Every event and turn of the session comes out."""
        rollout, stream = self.rollout, self.streams[0]
        assert rollout is not None
        held = rollout.builder.held
        for number, record, payload in rollout_items(str(self.path), self.lines, []):
            rollout.record(number, record, payload)
            if len(held) > BATCH_EVENTS:
                yield stream, *stream.hand_on(len(held) - 1)
        rollout.finish()
        yield stream, *stream.hand_on_rest()

    def finals(self) -> list[tuple[SessionStream, ParsedSession]]:
        """The session's final header (title, times, todo list), once `pieces` has run
        to the end."""
        assert self.rollout is not None
        return [(self.streams[0], self._header(self.rollout.title()))]


def read_codex_stream(path: Path) -> CodexStream | None:
    """The first reading of the Codex CLI rollout `path` (see the module doc); None when
    no record gives an event (the whole parse refuses it, saying why)."""
    name = str(path)
    lines = SourceLines(path)
    problems: list[ImportProblem] = []
    token_problems: list[ImportProblem] = []
    meta: dict[str, Any] = {}
    model = ""
    events = False
    for number, record, payload in rollout_items(name, lines, problems):
        kind = record["type"]
        meta = first_meta(meta, record, payload)
        model = model_of_record(record) or model
        if kind == "event_msg" and payload.get("type") == "token_count":
            if token_usage(payload)[1]:
                token_problems.append(ImportProblem(name, number, TOKEN_COUNT_PROBLEM))
        events = events or adds_event(kind, payload)
    if not events:
        return None
    return CodexStream(path, lines, problems + token_problems, meta, model)
