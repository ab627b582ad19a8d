"""Live tail of transcript folders: `manage.py watch_transcripts` (docs/interfaces.md).

`TranscriptTail` polls Claude Code (``~/.claude/projects``) and Codex CLI
(``~/.codex/sessions``) folders and files. Per file it keeps, in memory, how far it has
read (`Tracked.read_to`) and the lines read so far, each decoded once when its bytes
arrived (`reading.DecodedLines`; a line still being written waits in `Tracked.pending`
for its newline). A change reads only the bytes appended since (and `CHECK_BYTES` at the
file's start and just before them, the rewrite check); nothing is read or decoded again.
The format's own parser then runs over the decoded lines (`ingest.files.parse_file`: one
parser, the same turn rules and redaction as a one-shot import), because a later record
can change earlier results (a rewind archives a branch, a summary retitles, results held
back for their calls are placed later, a compaction counts what came before); that pass
is pure Python over objects in memory, and redaction, the costly part of a parse, runs
only on texts that are new since the last pass (`redaction.core.RedactionMemo`). A
*sink* then writes only what changed: `tail_store.LocalSink` (this database, broadcast
to the session page's watchers) or `tail_remote.RemoteSink` (a dashboard's HTTP API).

A file whose inode changed, that shrank below what was read, or whose first bytes or
last bytes read changed was rewritten: it is read and imported whole again.

While a file grows its session's latest turn is shown *running* (`shown_turns`), unless
the transcript already says how it ended (a failure, an interrupt marker, a question to
the user, or a final assistant answer); once the file has been idle for `idle_seconds`
the turn gets the outcome the import rules give (docs/concepts.md: a transcript that ends
inside a tool call is interrupted/abandoned), so a tailed file ends with exactly what a
one-shot `import_sessions` of it stores.

Offsets are kept in a JSON state file (default ``.local/watch_state.json``), so a restarted
watcher skips files it already holds whole (same inode, size and content hash).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sessions_app.ingest.errors import ImportRefusedError, UnknownFormatError
from sessions_app.ingest.files import parse_file
from sessions_app.ingest.parsed import ParsedSession, ParsedTurn, ParseResult
from sessions_app.ingest.reading import DecodedLines
from sessions_app.ingest.redaction.core import RedactionMemo, remembering

logger = logging.getLogger(__name__)

#: Formats the tail follows (JSON Lines that only grow).
TAILED_FORMATS = ("claude_code", "codex_cli")
#: How many leading bytes identify a file's content in the state file (`FileState.head`).
HEAD_BYTES = 4096
#: Bytes compared, on each growth, at the file's start and just before the new bytes: a
#: file whose bytes there changed was rewritten.
CHECK_BYTES = 64
#: Turn outcomes a transcript states itself: shown at once, even while the file grows.
_STATED = {
    ("failed", "agent_error"),
    ("interrupted", "canceled"),
    ("interrupted", "consumer_stopped"),
}


@dataclass(slots=True)
class FileState:
    """What the tail knows of one file (kept in the state file): its inode, the byte
    offset read up to (end of the last complete line), the sha256 of the first
    `HEAD_BYTES` and of all bytes read, the format and the session ids it held."""

    inode: int = 0
    offset: int = 0
    head: str = ""
    sha256: str = ""
    source_format: str = ""
    session_ids: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Tracked:
    """A file followed in this process: its state, its lines read so far (decoded once,
    `reading.DecodedLines`), when it last grew (monotonic seconds), whether its last sync
    showed a running turn, whether it was found held whole at start-up (`held`: its lines
    not read), the running sha256 of its complete lines, what the sink keeps of it
    (`memo`, sink-specific), how far it was read (`read_to`; `pending`: the bytes of a
    line still waiting for its newline; `ended`: taken as the last line once idle), its
    first bytes and the last ones read (the rewrite check) and the texts its parses
    redacted (`redaction`)."""

    state: FileState
    lines: DecodedLines = field(default_factory=DecodedLines)
    grew_at: float = 0.0
    running: bool = False
    held: bool = False
    digest: Any = None
    memo: dict[str, Any] = field(default_factory=dict)
    read_to: int = 0
    pending: bytes = b""
    first: bytes = b""
    last: bytes = b""
    redaction: RedactionMemo = field(default_factory=RedactionMemo)
    ended: bool = False


class Sink(Protocol):
    """Where a tailed file's sessions go."""

    def sync(self, path: Path, tracked: Tracked, result: ParseResult, whole: bool) -> int:
        """Store what changed in `result`'s sessions (all of them when `whole`: a file
        read anew); returns how many events were written."""

    def held_whole(self, path: Path, state: FileState) -> bool:
        """Whether the destination already holds `state`'s content of `path` whole."""


def shown_turns(parsed: ParsedSession, active: bool) -> list[ParsedTurn]:
    """The turns of `parsed` as the tail shows them: while the file is `active` (grew
    within the idle time) the latest turn is running unless its outcome is stated
    (`_STATED`) or it ended in a final answer (last event an assistant `stop` with no open
    call, i.e. the import rules already give it `completed` without a note)."""
    turns = list(parsed.turns)
    if not active or not turns:
        return turns
    last = turns[-1]
    if (last.status, last.reason) in _STATED:
        return turns
    events = [e for e in parsed.events if e.turn_id == last.id and e.archived_at is None]
    answered = (
        last.status == "completed"
        and not last.status_note
        and bool(events)
        and events[-1].role == "assistant"
        and events[-1].finish_reason == "stop"
    )
    if answered:
        return turns
    running = dataclasses.replace(
        last, status="running", reason="", status_note="", failure_code="",
        failure_stage="", failure_message="", finished_at=None,
    )  # fmt: skip
    return [*turns[:-1], running]


class TranscriptTail:
    """Follow `paths` (files or folders) and hand each change to `sink`.

    `idle_seconds`: how long a file must stop growing before its latest turn gets its
    final outcome; `state_path`: the JSON state file (None: none kept).
    """

    def __init__(
        self, paths: list[str], sink: Sink, *, idle_seconds: float = 30.0,
        state_path: Path | None = None,
    ) -> None:  # fmt: skip
        self.paths = [Path(p).expanduser() for p in paths]
        self.sink = sink
        self.idle_seconds = idle_seconds
        self.state_path = state_path
        self.files: dict[str, Tracked] = {}
        self.saved = self._load_state()
        self.refused: dict[str, tuple[int, str]] = {}

    # -- state file ----------------------------------------------------------------------

    def _load_state(self) -> dict[str, FileState]:
        if self.state_path is None or not self.state_path.exists():
            return {}
        try:
            raw = json.loads(self.state_path.read_text(encoding="utf-8"))
            return {k: FileState(**v) for k, v in raw.get("files", {}).items()}
        except (ValueError, TypeError, AttributeError):
            logger.warning("ignoring unreadable watch state %s", self.state_path)
            return {}

    def save_state(self) -> None:
        """Write the state file (atomically: a temporary file renamed over it)."""
        if self.state_path is None:
            return
        states = {**self.saved, **{k: t.state for k, t in self.files.items()}}
        body = {"version": 1, "files": {k: dataclasses.asdict(v) for k, v in states.items()}}
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.state_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(body, indent=1), encoding="utf-8")
        os.replace(temporary, self.state_path)

    # -- polling -------------------------------------------------------------------------

    def candidates(self) -> list[Path]:
        """The *.jsonl files under the watched paths (missing paths are skipped: a folder
        may appear later)."""
        found: list[Path] = []
        for root in self.paths:
            if root.is_file():
                found.append(root)
            elif root.is_dir():
                found.extend(sorted(p for p in root.rglob("*.jsonl") if p.is_file()))
        return found

    def poll(self, now: float | None = None) -> int:
        """One pass over every file; returns the number of events written."""
        now = time.monotonic() if now is None else now
        written = 0
        for path in self.candidates():
            try:
                written += self._poll_file(path, now)
            except OSError as error:
                logger.warning("%s: %s", path, error)
        self.save_state()
        return written

    def run(self, poll_seconds: float = 1.0, max_iterations: int | None = None) -> None:
        """Poll every `poll_seconds` until interrupted (or `max_iterations` passes)."""
        done = 0
        while max_iterations is None or done < max_iterations:
            self.poll()
            done += 1
            if max_iterations is None or done < max_iterations:
                time.sleep(poll_seconds)

    def _poll_file(self, path: Path, now: float) -> int:
        key = str(path.resolve())
        stat = path.stat()
        tracked = self.files.get(key)
        whole = False
        if tracked is None:
            saved = self.saved.get(key)
            if saved and saved.inode == stat.st_ino and saved.offset == stat.st_size:
                if self.sink.held_whole(path, saved):
                    held = Tracked(saved, grew_at=-1e18, held=True, read_to=saved.offset)
                    self.files[key] = held
                    return 0
            tracked = self.files[key] = Tracked(FileState(inode=stat.st_ino))
            whole = True
        elif stat.st_ino != tracked.state.inode or stat.st_size < tracked.read_to:
            whole = True  # replaced, or truncated
        grew = False if whole else self._read_new(path, tracked, stat.st_size)
        if grew is None or (grew and tracked.held):
            # Rewritten (its first or last bytes read differ), or held whole at start-up
            # without its lines and now grown: read whole again.
            whole = True
        if whole:
            tracked = self.files[key] = Tracked(FileState(inode=stat.st_ino))
            grew = self._read_new(path, tracked, stat.st_size)
        if grew:
            tracked.grew_at = now
        active = now - tracked.grew_at < self.idle_seconds
        if not active and tracked.pending:
            grew = self._last_line(tracked)
        if not (grew or whole or tracked.running != active):
            return 0
        refusal = self.refused.get(key)
        if refusal is not None and refusal[0] == tracked.state.offset:
            return 0
        try:
            with remembering(tracked.redaction):
                result = parse_file(path, "auto", tracked.lines)
        except (UnknownFormatError, ImportRefusedError) as refused:
            # Not (yet) a transcript: perhaps only its header line so far. Tried again
            # when it grows.
            if refusal is None or refusal[1] != str(refused):
                logger.info("%s", refused)
            self.refused[key] = (tracked.state.offset, str(refused))
            return 0
        self.refused.pop(key, None)
        if result.source_format not in TAILED_FORMATS:
            self.refused[key] = (tracked.state.offset, "not a Claude Code or Codex transcript")
            return 0
        tracked.state.source_format = result.source_format
        tracked.state.session_ids = [s.id for s in result.sessions]
        tracked.running = active
        for parsed in result.sessions:
            parsed.turns = shown_turns(parsed, active)
        return self.sink.sync(path, tracked, result, whole or not tracked.memo)

    @staticmethod
    def _last_line(tracked: Tracked) -> bool:
        """An idle file's bytes after its last newline are its last line, as a one-shot
        import reads them (`ended`: if the file grows again it is read whole again)."""
        line, tracked.pending, tracked.ended = tracked.pending, b"", True
        tracked.digest = tracked.digest or hashlib.sha256()
        tracked.digest.update(line)
        tracked.state.sha256 = tracked.digest.hexdigest()
        tracked.state.offset += len(line)
        tracked.lines.extend(line + b"\n")
        return True

    @staticmethod
    def _read_new(path: Path, tracked: Tracked, size: int) -> bool | None:
        """Read the bytes appended after `tracked.read_to` and decode the complete lines
        among them (a line still being written stays in `pending` for its newline);
        returns whether any line was completed, or None when the file was rewritten (its
        first bytes, or the last ones read before, are not what they were)."""
        start = tracked.read_to
        if size <= start:
            return False
        if tracked.ended:
            return None
        back = min(CHECK_BYTES, start)
        with path.open("rb") as handle:
            if start:
                first = tracked.first[:CHECK_BYTES]
                if handle.read(len(first)) != first:
                    return None
                handle.seek(start - back)
            data = handle.read(size - start + back)
        if data[:back] != tracked.last[len(tracked.last) - back :]:
            return None
        new = data[back:]
        tracked.read_to = start + len(new)
        tracked.last = (tracked.last + new)[-CHECK_BYTES:]
        if len(tracked.first) < HEAD_BYTES:
            tracked.first += new[: HEAD_BYTES - len(tracked.first)]
        buffered = tracked.pending + new
        end = buffered.rfind(b"\n") + 1  # a line still being written waits for its newline
        tracked.pending = buffered[end:]
        if end == 0:
            return False
        chunk = buffered[:end]
        state = tracked.state
        if state.offset < HEAD_BYTES:
            state.head = hashlib.sha256(tracked.first[: state.offset + end]).hexdigest()
        if tracked.digest is None:
            tracked.digest = hashlib.sha256()
        tracked.digest.update(chunk)
        state.sha256 = tracked.digest.hexdigest()
        state.offset += end
        tracked.lines.extend(chunk)
        return True
