"""The live tail's remote sink: tailed transcripts into a dashboard's HTTP API.

`RemoteSink` (``watch_transcripts --to URL --api-key KEY``) sends each tailed session
through `agentops.client` (docs/interfaces.md, "HTTP API v1"): the session is created (or
found), each turn is begun, its events are sent in batches with client keys, and it is
finalized with the outcome the import rules give, so the remote dashboard's watchers see
a teammate's coding-agent session live.

What differs from the local sink, because the API stores runtime events:

- turn ids are ``<session id>:turn-NNNN`` (a URL path segment cannot hold the ``/`` of
  the local ``<session id>/turn-NNNN``); event and turn times are the server's;
- an event is sent once it can no longer change: while the latest turn is running its
  last event is held back (Claude Code writes one assistant message as several lines);
- client keys are ``<position>-<hash of the event's values>``, so a restarted watcher
  sends the file again and the server stores nothing twice; an event that still changed
  after it was sent, or a turn whose outcome changed after it was finalized, is logged
  (the API does not rewrite stored history).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agentops.client import RemoteSessionService, RemoteStoreError
from agentops.runtime import errors
from sessions_app.ingest.parsed import ParsedSession, ParsedTurn, ParseResult
from sessions_app.ingest.tail import FileState, Tracked
from sessions_app.ingest.writer import event_rows
from sessions_app.store import EVENT_INSERT_COLUMNS
from sessions_app.store.rows import event_from_values

logger = logging.getLogger(__name__)

__all__ = ["RemoteSink", "remote_turn_id"]

#: Events per POST (the API takes up to 1000).
BATCH = 500
# `created_at`: the transcript's own time (the dashboard keeps it, as an import does).
_SENT_FIELDS = {
    "turn_id",
    "author",
    "content",
    "finish_reason",
    "usage",
    "state_delta",
    "created_at",
}


def remote_turn_id(turn_id: str) -> str:
    """The id a tailed turn has on a remote dashboard (`/` -> `:`)."""
    return turn_id.replace("/", ":")


def _q(value: str) -> str:
    return quote(value, safe="")


class RemoteSink:
    """Send tailed sessions to `base_url`'s API with `api_key` (`TranscriptTail`'s sink)."""

    def __init__(self, base_url: str, api_key: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.service = RemoteSessionService(base_url, api_key)

    def close(self) -> None:
        """Close the HTTP connections and the event loop."""
        self.loop.run_until_complete(self.service.aclose())
        self.loop.close()

    def held_whole(self, path: Path, state: FileState) -> bool:
        """Never: a restarted watcher sends every file again (client keys make that safe)."""
        return False

    def sync(self, path: Path, tracked: Tracked, result: ParseResult, whole: bool) -> int:
        """Send what changed; returns how many events were sent. A session the server
        refuses (e.g. an id it holds for another app) is logged and skipped."""
        if whole:
            tracked.memo.clear()
        sent = 0
        for parsed in result.sessions:
            memo = tracked.memo.setdefault(parsed.id, {"created": False, "keys": [], "turns": {}})
            try:
                sent += self.loop.run_until_complete(self._session(parsed, memo))
            except (RemoteStoreError, errors.AgentOpsRuntimeError) as refused:
                logger.warning("%s: session %s: %s", path, parsed.id, refused)
        return sent

    async def _session(self, parsed: ParsedSession, memo: dict[str, Any]) -> int:
        http = self.service.http
        if not memo["created"]:
            body = {
                "app_name": parsed.app_name or parsed.source_format,
                "user_id": parsed.user_id,
                "session_id": parsed.id,
                "state": {k: v for k, v in parsed.state.items() if k != "todos"},
            }
            await http.request("POST", "/sessions", json=body, ok=(200, 201))
            memo["created"] = True
        items = self._items(parsed, memo)
        by_turn: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        for position, item in items:
            by_turn.setdefault(item["turn_id"], []).append((position, item))
        sent = 0
        for turn in parsed.turns:
            tid = remote_turn_id(turn.id)
            await self._begin(parsed.id, turn, memo)
            pending = by_turn.get(tid, [])
            for start in range(0, len(pending), BATCH):
                batch = pending[start : start + BATCH]
                path = f"/sessions/{_q(parsed.id)}/events"
                await http.request("POST", path, json={"events": [i for _, i in batch]})
                memo["keys"].extend(item["client_key"] for _, item in batch)
                sent += len(batch)
            await self._finalize(turn, memo)
        return sent

    @staticmethod
    def _items(parsed: ParsedSession, memo: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
        """The events not sent yet, as API batch items (position, item)."""
        keys: list[str] = memo["keys"]
        rows = list(event_rows(parsed.id, parsed.events))
        last = parsed.turns[-1] if parsed.turns else None
        if last is not None and last.status == "running" and rows:
            rows = rows[:-1]  # the last event may still grow (see the module)
        items: list[tuple[int, dict[str, Any]]] = []
        for position, row in enumerate(rows):
            key = f"{position}-{hashlib.sha256(repr(row).encode()).hexdigest()[:24]}"
            if position < len(keys):
                if keys[position] != key and memo.setdefault("warned", position) == position:
                    logger.warning(
                        "session %s: event %d changed after it was sent", parsed.id, position + 1
                    )
                continue
            values = dict(zip(EVENT_INSERT_COLUMNS, row, strict=True))
            values.update(id=0, turn_id=remote_turn_id(values["turn_id"]))
            event = event_from_values(values)
            item = event.model_dump(mode="json", include=_SENT_FIELDS)
            item["client_key"] = key
            items.append((position, item))
        return items

    async def _begin(self, session_id: str, turn: ParsedTurn, memo: dict[str, Any]) -> None:
        tid = remote_turn_id(turn.id)
        if tid in memo["turns"]:
            return
        body = {"turn_id": tid, "started_at": turn.started_at.isoformat()}
        path = f"/sessions/{_q(session_id)}/turns"
        status, answer, _ = await self.service.http.request("POST", path, json=body, ok=(200, 201))
        memo["turns"][tid] = answer.get("status", "running") if status != 404 else "running"

    async def _finalize(self, turn: ParsedTurn, memo: dict[str, Any]) -> None:
        tid = remote_turn_id(turn.id)
        current = memo["turns"].get(tid)
        if turn.status == "running" or current == turn.status:
            return
        if current not in ("running", None):
            logger.warning("turn %s: outcome now %s, sent %s before", tid, turn.status, current)
            memo["turns"][tid] = turn.status
            return
        body: dict[str, Any] = {"status": turn.status, "reason": turn.reason}
        if turn.finished_at is not None:  # the transcript's time, as an import keeps it
            body["finished_at"] = turn.finished_at.isoformat()
        if turn.failure_code:
            body["failure"] = {"code": turn.failure_code, "stage": turn.failure_stage}
        try:
            await self.service.http.request("POST", f"/turns/{_q(tid)}/finalize", json=body)
        except errors.TurnStateConflictError:
            pass  # finalized already (a restarted watcher)
        memo["turns"][tid] = turn.status
