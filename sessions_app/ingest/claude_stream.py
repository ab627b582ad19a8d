"""A Claude Code file read twice, so that its sessions can be written while they are
parsed (`ingest.streaming`), with exactly the sessions `formats.claude_code` gives.

The first reading (`read_claude_stream`) keeps what needs the whole file and none of its
content: the problems (every skipped line), the tree of uuids (`claude_tree.Tree`: which
branch is active, which records a rewind abandoned, which sub-agent a sidechain line
belongs to), the calls that started sub-agents, compaction boundaries and summaries
(`ClaudeCode.note`), the sessions in order with their last record, and the last line of
each API message (`message.id`: its lines merge into one event, whatever comes between,
so that event is settled only past its last line). The second reading (`pieces`) feeds
each usable record to its session's `_Conversation` and hands on, a batch at a time, the
events no later line can change, with the turns that closed (`streamed.SessionStream`).
Memory holds the tree (a few hundred bytes per line), call ids, and the events not yet
settled: one batch, or more while an API message's lines are far apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from sessions_app.ingest.claude_tree import read_records
from sessions_app.ingest.formats.claude_code import SESSION_FIELDS, ClaudeFile, _Conversation
from sessions_app.ingest.parsed import ImportProblem, ParsedEvent, ParsedSession, ParsedTurn
from sessions_app.ingest.reading import SourceLines
from sessions_app.ingest.streamed import BATCH_EVENTS, SessionStream
from sessions_app.models import Session

__all__ = ["BATCH_EVENTS", "ClaudeStream", "StreamedPart", "read_claude_stream"]


@dataclass(slots=True)
class StreamedPart:
    """One session of the file: its key (`ClaudeFile.key`), its last record's line and
    uuid, and, once the second reading starts, its conversation and stream."""

    key: str
    last_line: int
    leaf: str
    conversation: _Conversation | None = None
    stream: SessionStream | None = None
    scanned: int = 0


@dataclass
class ClaudeStream:
    """A Claude Code file after its first reading (see the module doc): a
    `streaming.FileStream`."""

    source_format: ClassVar[str] = Session.SourceFormat.CLAUDE_CODE
    path: Path
    lines: SourceLines
    shape: ClaudeFile
    problems: list[ImportProblem]
    parts: dict[str, StreamedPart]
    message_ends: dict[str, int]
    headers: list[ParsedSession] = field(default_factory=list)

    def start(self) -> None:
        """Set up every session's conversation and stream; `headers` are their first
        header (id, app, format: written before any event, completed by `finals`)."""
        facts = self.lines.facts
        for part in self.parts.values():
            conversation = self.shape.conversation(part.key)
            conversation.start(part.leaf)
            part.conversation = conversation
            part.stream = SessionStream(conversation.builder, facts)
            self.headers.append(part.stream.header("", SESSION_FIELDS))

    def _settled(self, part: StreamedPart, line: int) -> int:
        """How many of the part's held events, from the first, no line after `line` can
        change: all but an API message's event whose lines go on later."""
        assert part.conversation is not None
        held = part.conversation.builder.held
        messages = part.conversation.messages
        ends = self.message_ends
        while part.scanned < len(held):
            event = held[part.scanned][0]
            if event.role == "assistant":
                key = (event.source_id, event.archived_at is None)
                if messages.get(key) is event:
                    if ends.get(event.source_id, 0) > line:
                        break
                    del messages[key]
            part.scanned += 1
        return part.scanned

    @property
    def streams(self) -> list[SessionStream]:
        """Each session's stream, in the order of `headers` (once `start` ran)."""
        return [part.stream for part in self.parts.values() if part.stream is not None]

    def pieces(self) -> Iterator[tuple[SessionStream, list[ParsedEvent], list[ParsedTurn]]]:
        """(session, events, turns) to store, in order, a batch at a time: the second
        reading (see the module doc). Every event and turn of every session comes out."""
        skip = {problem.line for problem in self.problems}
        parts = self.parts
        for number, at, record in read_records(str(self.path), self.lines, [], skip=skip):
            if at is None:
                continue
            part = parts[self.shape.key(record)]
            assert part.conversation is not None and part.stream is not None
            part.conversation.record(number, at, record)
            if (count := self._settled(part, number)) >= BATCH_EVENTS:
                part.scanned = 0
                yield part.stream, *part.stream.hand_on(count)
        for part in parts.values():
            assert part.conversation is not None and part.stream is not None
            part.conversation.finish()
            part.conversation.messages.clear()
            part.scanned = 0
            yield part.stream, *part.stream.hand_on_rest()

    def finals(self) -> list[tuple[SessionStream, ParsedSession]]:
        """Each session's final header (title, times, todo list, parent links), once
        `pieces` has run to the end."""
        out = []
        for part in self.parts.values():
            assert part.conversation is not None and part.stream is not None
            title = self.shape.title(part.key, part.conversation, part.leaf)
            parsed = part.stream.header(title, SESSION_FIELDS)
            out.append((part.stream, self.shape.link(part.key, parsed)))
        return out


def read_claude_stream(path: Path) -> ClaudeStream | None:
    """The first reading of the Claude Code file `path` (see the module doc); None when
    it holds no usable record (the whole parse refuses it, saying why)."""
    lines = SourceLines(path)
    problems: list[ImportProblem] = []
    shape = ClaudeFile(path)
    ends: dict[str, int] = {}
    first_keys: dict[str, tuple[int, int, str]] = {}  # key -> (first line, last, leaf)
    sidechains: list[tuple[int, str, dict[str, Any]]] = []
    for number, at, record in read_records(str(path), lines, problems):
        shape.note(at, record)
        if at is None:
            continue
        uuid = str(record.get("uuid") or "")
        if record["type"] == "assistant":
            ends[str(record["message"].get("id") or uuid)] = number
        agent = record.get("agentId")
        if record.get("isSidechain") is True and not (isinstance(agent, str) and agent):
            # Its session depends on the whole tree (`sidechain_agents`): known at the end.
            sidechains.append((number, uuid, {"isSidechain": True, "uuid": uuid}))
            continue
        _note_part(first_keys, shape.key(record), number, uuid)
    if not first_keys and not sidechains:
        return None
    shape.close()
    for number, uuid, stub in sidechains:
        _note_part(first_keys, shape.key(stub), number, uuid)
    order = sorted(first_keys.items(), key=lambda item: item[1][0])
    parts = {key: StreamedPart(key, last, leaf) for key, (_first, last, leaf) in order}
    return ClaudeStream(path, lines, shape, problems, parts, ends)


def _note_part(parts: dict[str, tuple[int, int, str]], key: str, number: int, uuid: str) -> None:
    first = parts.get(key)
    if first is None:
        parts[key] = (number, number, uuid)
    elif number > first[1]:
        parts[key] = (first[0], number, uuid)
