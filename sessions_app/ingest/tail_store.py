"""The live tail's local sink: tailed transcripts into this database, watchers told at once.

`LocalSink.sync` writes, in ONE transaction per file change, only what a re-parse of the
file changed: new events (bulk insert, ids in conversation order); events whose values
changed (updated in place, keeping id and place; rare, since the last event of a running
turn, which may still grow, is written only once a later one exists); new and changed
turns; the session's title, times and resume status; and the file's `ImportedFile`
record (so a later one-shot import of the same bytes is a no-op). After the commit,
`LiveSessionService` broadcasts each new event and each changed turn to the session
page's watchers. A file read whole (first seen, or rewritten) goes through the one-shot
import's own `store_result`. `start_with` runs the tail inside a server process
(AGENTOPS_WATCH_PATHS).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from pathlib import Path
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.db import transaction

from sessions_app import models
from sessions_app.ingest.errors import ImportRefusedError
from sessions_app.ingest.files import gc_paused, store_result
from sessions_app.ingest.parsed import ParsedSession, ParseResult
from sessions_app.ingest.replace import plan_replacement
from sessions_app.ingest.tail import FileState, Tracked, TranscriptTail
from sessions_app.ingest.writer import (
    delete_sessions,
    event_rows,
    insert_rows,
    stored_path,
    turn_rows,
    write_parsed_session,
)
from sessions_app.live import LiveSessionService
from sessions_app.store import EVENT_INSERT_COLUMNS, TURN_COLUMNS, refresh_resume_status
from sessions_app.store.rows import event_from_row

logger = logging.getLogger(__name__)

__all__ = ["LocalSink", "start_with"]

#: Seconds between the in-server watcher's passes.
SERVER_POLL_SECONDS = 1.0


class _Rewrite(Exception):
    """The new parse does not extend what is stored (fewer events or turns)."""


#: Where `event_rows` puts the source records (`raw`, the largest value): the fingerprint
#: takes how many there are (a Claude Code message merged from one more line has one more).
_RAW = EVENT_INSERT_COLUMNS.index("raw")


def _fingerprint(row: tuple[Any, ...]) -> int:
    """A hash of an event row's values, its raw records counted (this process only)."""
    raw = row[_RAW]
    return hash(repr((*row[:_RAW], len(raw) if isinstance(raw, list) else 1, *row[_RAW + 1 :])))


def _memo(parsed: ParsedSession, ids: list[int]) -> dict[str, Any]:
    rows = list(event_rows(parsed.id, parsed.events))
    return {
        "fps": [_fingerprint(r) for r in rows],
        "ids": ids,
        "turns": {r[0]: r for r in turn_rows(parsed.id, parsed.turns)},
        "session": _session_values(parsed),
    }


def _session_values(parsed: ParsedSession) -> dict[str, Any]:
    """The session row's values a tailed file can change (a summary record retitles)."""
    state = {k: v for k, v in parsed.state.items() if k != "todos"}
    return {"title": parsed.title, "updated_at": parsed.updated_at, "state": state}


def _event_ids(session_id: str, after: int = 0) -> list[int]:
    rows = models.Event.objects.filter(session_id=session_id, id__gt=after).order_by("id")
    return list(rows.values_list("id", flat=True))


class LocalSink:
    """Write tailed sessions into this database (`TranscriptTail`'s sink) and broadcast."""

    def __init__(self) -> None:
        self.live = LiveSessionService()

    def held_whole(self, path: Path, state: FileState) -> bool:
        """Whether `state`'s bytes of `path` are imported (its `ImportedFile` record) and
        every session it held is still stored, none with a turn still shown running."""
        record = models.ImportedFile.objects.filter(
            sha256=state.sha256, path=stored_path(str(path))
        ).first()
        if record is None:
            return False
        stored = models.Session.objects.filter(id__in=state.session_ids).count()
        running = models.Turn.objects.filter(session_id__in=state.session_ids, status="running")
        return stored == len(state.session_ids) and not running.exists()

    def sync(self, path: Path, tracked: Tracked, result: ParseResult, whole: bool) -> int:
        """Store what changed (see the module); returns how many events were written.
        A session the import rules refuse (an id stored from another source) is logged
        and skipped."""
        try:
            with gc_paused():
                if whole:
                    return self._whole(path, tracked, result)
                try:
                    return self._changes(path, tracked, result)
                except _Rewrite:
                    return self._whole(path, tracked, result)
        except ImportRefusedError as refused:
            logger.warning("%s", refused)
            tracked.memo.clear()
            return 0

    def _whole(self, path: Path, tracked: Tracked, result: ParseResult) -> int:
        here = stored_path(str(path))
        with transaction.atomic():
            # A rewritten file replaces what this file stored before, whatever it held.
            mine = models.Session.objects.filter(source_path=here)
            previous = list(mine.exclude(source_format="runtime").values_list("id", flat=True))
            delete_sessions(previous)
            store_result(path, tracked.state.sha256, result, strict=False, replace=False)
        tracked.memo.clear()
        for parsed in result.sessions:
            tracked.memo[parsed.id] = _memo(parsed, _event_ids(parsed.id))
            if parsed.turns:
                async_to_sync(self.live.announce_turn)(parsed.turns[-1].id)
        return sum(len(s.events) for s in result.sessions)

    def _changes(self, path: Path, tracked: Tracked, result: ParseResult) -> int:
        new_events: list[int] = []
        new_turns: list[str] = []
        changed_turns: list[str] = []
        with transaction.atomic():
            for parsed in result.sessions:
                memo = tracked.memo.get(parsed.id)
                if memo is None:  # a session that appeared in the file
                    plan_replacement(path, [parsed], False)
                    write_parsed_session(parsed, str(path))
                    tracked.memo[parsed.id] = _memo(parsed, _event_ids(parsed.id))
                    new_events.extend(tracked.memo[parsed.id]["ids"])
                    new_turns.extend(t.id for t in parsed.turns)
                    continue
                added, begun, changed = self._session_changes(parsed, memo)
                new_events.extend(added)
                new_turns.extend(begun)
                changed_turns.extend(changed)
            self._record_file(path, tracked, result)
        # A new turn reaches watchers before its events (which are added into its article:
        # sent before it, they would have nowhere to go), a changed one after them.
        for turn_id in new_turns:
            async_to_sync(self.live.announce_turn)(turn_id)
        for row in models.Event.objects.filter(id__in=new_events).order_by("id"):
            async_to_sync(self.live.announce_event)(event_from_row(row))
        for turn_id in changed_turns:
            async_to_sync(self.live.announce_turn)(turn_id)
        return len(new_events)

    @staticmethod
    def _session_changes(
        parsed: ParsedSession, memo: dict[str, Any]
    ) -> tuple[list[int], list[str], list[str]]:
        """Write one session's changes; returns (new event ids, new turn ids, changed
        turn ids)."""
        sid = parsed.id
        rows = list(event_rows(sid, parsed.events))
        fps = [_fingerprint(r) for r in rows]
        old, ids = memo["fps"], memo["ids"]
        turns = {r[0]: r for r in turn_rows(sid, parsed.turns)}
        if len(fps) < len(old) or not set(memo["turns"]) <= set(turns):
            raise _Rewrite
        for index in range(len(old)):
            if fps[index] != old[index]:
                values = dict(zip(EVENT_INSERT_COLUMNS, rows[index], strict=True))
                models.Event.objects.filter(pk=ids[index]).update(**values)
        # While the latest turn runs, its last event may still grow (Claude Code writes
        # one message as several lines): it is written once a later one exists.
        running = bool(parsed.turns) and parsed.turns[-1].status == "running"
        limit = max(len(old), len(rows) - 1 if running else len(rows))
        insert_rows(models.Event, EVENT_INSERT_COLUMNS, rows[len(old) : limit])
        added = _event_ids(sid, max(ids, default=0)) if limit > len(old) else []
        fps = fps[:limit]
        new_turns = [r for tid, r in turns.items() if tid not in memo["turns"]]
        insert_rows(models.Turn, TURN_COLUMNS, new_turns)
        changed = [tid for tid, r in turns.items() if memo["turns"].get(tid, r) != r]
        for tid in changed:
            values = dict(zip(TURN_COLUMNS, turns[tid], strict=True))
            models.Turn.objects.filter(pk=tid).update(**values)
        session = _session_values(parsed)
        if added or changed or new_turns or fps != old or session != memo.get("session"):
            models.Session.objects.filter(pk=sid).update(**session)
            refresh_resume_status(sid)
        memo.update(fps=fps, ids=ids + added, turns=turns, session=session)
        return added, [r[0] for r in new_turns], changed

    @staticmethod
    def _record_file(path: Path, tracked: Tracked, result: ParseResult) -> None:
        """The file's `ImportedFile` record now describes what was read of it."""
        here = stored_path(str(path))
        models.ImportedFile.objects.filter(path=here).delete()
        if not models.ImportedFile.objects.filter(sha256=tracked.state.sha256).exists():
            models.ImportedFile.objects.create(
                sha256=tracked.state.sha256,
                path=here,
                source_format=result.source_format,
                session_ids=[s.id for s in result.sessions],
            )


async def watch_forever(paths: list[str], state_path: Path) -> None:
    """Follow `paths` into this database from inside a server process, one pass every
    `SERVER_POLL_SECONDS` (in a worker thread; its broadcasts reach this process's
    watchers even on the in-memory channel layer). Errors are logged, never raised."""
    tail = TranscriptTail(
        paths, LocalSink(), idle_seconds=settings.AGENTOPS_WATCH_IDLE_SECONDS,
        state_path=state_path,
    )  # fmt: skip
    while True:
        try:
            await sync_to_async(tail.poll, thread_sensitive=False)()
        except Exception:
            logger.warning("watching transcripts failed", exc_info=True)
        await asyncio.sleep(SERVER_POLL_SECONDS)


def start_with(application: Any) -> Any:
    """`application` wrapped to start `watch_forever` on AGENTOPS_WATCH_PATHS once, on
    the first ASGI call (daphne has no lifespan events), as the live demo starts."""
    state: dict[str, asyncio.Task[None]] = {}
    paths = list(settings.AGENTOPS_WATCH_PATHS)
    state_path = Path(settings.BASE_DIR) / ".local" / "watch_state.json"

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if "task" not in state and scope.get("type") in {"http", "websocket"}:
            state["task"] = asyncio.create_task(
                watch_forever(paths, state_path), name="agentops-watch",
                context=contextvars.Context(),
            )  # fmt: skip
        await application(scope, receive, send)

    return app
