"""A Runner in another OS process records through the API and is watched live; killing
it mid-turn leaves its turn interrupted/abandoned once its lease expires.

The dashboard runs as a daphne subprocess (SQLite file, in-memory channel layer: the
server that receives a write broadcasts it); the runner is `tests.api.remote_runner_child`;
the watcher is a real websocket client signed in as an operator.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from typing import Any

import pytest
import websockets
from django.contrib.auth.models import User

from sessions_app.api.keys import create_key
from sessions_app.models import Event, Turn
from tests.factories import make_session
from tests.live.helpers import ROOT, DaphneServer, recv_frame, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)


def _runner(server: DaphneServer, key: str, session_id: str, mode: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.api.remote_runner_child", server.url, key, session_id, mode],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


async def _frames_until_turn_ends(ws: Any, seen: list[dict[str, Any]]) -> dict[str, Any]:
    async with asyncio.timeout(60):
        while True:
            message = await recv_frame(ws)
            seen.append(message)
            if message["kind"] == "turn" and message["status"] != "running":
                return message


def test_remote_runner_is_watched_live_and_a_killed_one_is_abandoned(
    operator_user: User,
) -> None:
    make_session("s-remote", turns=0)
    key = create_key("remote-runner").key
    cookie = session_cookie(operator_user)

    async def scenario(server: DaphneServer) -> tuple[list[dict[str, Any]], ...]:
        url = f"ws://127.0.0.1:{server.port}/ws/sessions/s-remote/?after=0"
        headers = {"Cookie": cookie, "Origin": server.url}
        async with websockets.connect(url, additional_headers=headers) as ws:
            assert (await recv_frame(ws))["kind"] == "hello"
            completed: list[dict[str, Any]] = []
            child = _runner(server, key, "s-remote", "complete")
            ended = await _frames_until_turn_ends(ws, completed)
            out, _ = child.communicate(timeout=30)
            assert ended["status"] == "completed" and "DONE" in out, out
            # A runner killed mid-turn: its lease (2 s) expires, the server abandons the turn.
            killed: list[dict[str, Any]] = []
            child = _runner(server, key, "s-remote", "hang")
            assert child.stdout is not None
            line = await asyncio.to_thread(child.stdout.readline)
            assert line.startswith("EVENT"), line
            child.send_signal(signal.SIGKILL)
            child.wait(10)
            abandoned = await _frames_until_turn_ends(ws, killed)
            assert (abandoned["status"], abandoned["reason"]) == ("interrupted", "abandoned")
            # The next run proceeds.
            after: list[dict[str, Any]] = []
            child = _runner(server, key, "s-remote", "complete")
            assert (await _frames_until_turn_ends(ws, after))["status"] == "completed"
            child.communicate(timeout=30)
            return completed, killed, after

    with DaphneServer() as server:
        completed, killed, _after = asyncio.run(scenario(server))

    turns = list(Turn.objects.filter(session_id="s-remote").order_by("started_at"))
    assert [(t.status, t.reason) for t in turns] == [
        ("completed", ""), ("interrupted", "abandoned"), ("completed", ""),
    ]  # fmt: skip
    assert turns[0].status_note == "via api key remote-runner"
    stored = list(
        Event.objects.filter(turn_id=turns[0].id).order_by("id").values_list("id", flat=True)
    )
    received = [m["event_id"] for m in completed if m["kind"] == "event"]
    assert len(stored) == 4 and received == stored  # the user's and the agent's three, in order
    assert any(m["kind"] == "partial" for m in completed)
    statuses = [m["status"] for m in completed if m["kind"] == "turn"]
    assert statuses == ["running", "completed"]
    assert [m["event_id"] for m in killed if m["kind"] == "event"] == list(
        Event.objects.filter(turn_id=turns[1].id).order_by("id").values_list("id", flat=True)
    )


def test_run_turn_command_records_through_the_api() -> None:
    make_session("s-cmd", turns=0)
    key = create_key("cli").key
    with DaphneServer() as server:
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
        env["DATABASE_URL"] = "sqlite:////nonexistent/only-the-server-has-the-data.sqlite3"
        run = subprocess.run(
            [sys.executable, "manage.py", "run_turn", "s-cmd", "hello", "--to", server.url,
             "--api-key", key],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        refused = subprocess.run(
            [sys.executable, "manage.py", "run_turn", "s-cmd", "hello", "--to",
             "http://127.0.0.1:9", "--api-key", key],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    turn = Turn.objects.get(session_id="s-cmd")
    assert f"turn {turn.id}: completed" in run.stdout
    assert (
        turn.status_note == "via api key cli" and Event.objects.filter(turn_id=turn.id).count() > 1
    )
    assert refused.returncode == 2 and "unreachable" in refused.stderr
