"""`watch_transcripts --to`: a Claude Code transcript growing on a laptop is sent through
the API to a dashboard (a daphne subprocess) and watched live there."""

from __future__ import annotations

import asyncio
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
import websockets
from django.contrib.auth.models import User

from sessions_app.api.keys import create_key
from sessions_app.ingest import import_file
from sessions_app.ingest.tail import TranscriptTail
from sessions_app.ingest.tail_remote import RemoteSink, remote_turn_id
from sessions_app.models import Event, ImportedFile, Session, Turn
from tests.live.helpers import DaphneServer, recv_frame, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)

CLAUDE = "claude-code/agentcmd__full-session-three.jsonl"


def _facts(turn_id: Any = str) -> dict[str, Any]:
    return {
        "sessions": Session.objects.count(),
        # The transcript's own times, as a one-shot import keeps them.
        "turns": sorted(
            (turn_id(t.id), t.status, t.reason, t.started_at, t.finished_at)
            for t in Turn.objects.all()
        ),
        "events": [
            (role, text, [(c["id"], c["name"], c["arguments"]) for c in calls], finish, at)
            for role, text, calls, finish, at in Event.objects.order_by("id").values_list(
                "role", "text", "tool_calls", "finish_reason", "created_at"
            )
        ],
    }


class Watcher(threading.Thread):
    """A websocket client in its own thread, collecting the session's live frames."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.url, self.headers = url, headers
        self.frames: list[dict[str, Any]] = []
        self.ready = threading.Event()
        self.stop = threading.Event()

    def run(self) -> None:
        asyncio.run(self._watch())

    async def _watch(self) -> None:
        async with websockets.connect(self.url, additional_headers=self.headers) as ws:
            while not self.stop.is_set():
                try:
                    got = await recv_frame(ws, 0.2)
                except TimeoutError:
                    continue
                if got["kind"] == "hello":
                    self.ready.set()
                else:
                    self.frames.append(got)


def test_growing_transcript_reaches_a_remote_dashboard_live(
    corpus: Path, tmp_path: Path, operator_user: User
) -> None:
    source = corpus / CLAUDE
    target = tmp_path / source.name
    shutil.copy(source, target)
    assert import_file(target).status == "imported"
    expected = _facts(remote_turn_id)
    sid = Session.objects.get().id
    Session.objects.all().delete()
    ImportedFile.objects.all().delete()
    target.unlink()
    lines = source.read_bytes().splitlines(keepends=True)
    key = create_key("laptop").key
    cookie = session_cookie(operator_user)
    with DaphneServer() as server:
        sink = RemoteSink(server.url, key)
        tail = TranscriptTail([str(tmp_path)], sink, idle_seconds=5)
        target.write_bytes(b"".join(lines[:3]))
        tail.poll(0)
        watcher = Watcher(
            f"ws://127.0.0.1:{server.port}/ws/sessions/{sid}/?after=0",
            {"Cookie": cookie, "Origin": server.url},
        )
        watcher.start()
        assert watcher.ready.wait(30)
        now = 1.0
        for line in lines[3:]:
            with target.open("ab") as handle:
                handle.write(line)
            tail.poll(now)
            now += 1
        tail.poll(now + 10)  # idle: outcomes sent
        sink.close()
        deadline = now + 100
        while len([f for f in watcher.frames if f["kind"] == "event"]) < 20 and deadline > now:
            threading.Event().wait(0.2)
            deadline -= 0.2
        threading.Event().wait(1)
        watcher.stop.set()
        watcher.join(10)
    assert _facts() == expected
    stored = list(Event.objects.order_by("id").values_list("id", flat=True))
    received = [f["event_id"] for f in watcher.frames if f["kind"] == "event"]
    assert received == stored  # caught up, then live, each once and in order
    statuses = [f["status"] for f in watcher.frames if f["kind"] == "turn"]
    assert "running" in statuses and statuses[-1] == "interrupted"
