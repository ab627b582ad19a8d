"""A Runner with `RemoteSessionService` in another OS process records through one server
process while a watcher on ANOTHER server process sees every stored event and the turn's
status change: PostgreSQL + the Redis channel layer, as a team deploys it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

import pytest
import websockets
from django.contrib.auth.models import User
from django.db import connection

from sessions_app.api.keys import create_key
from sessions_app.models import Event, Turn
from tests.api.test_remote_runner import _frames_until_turn_ends
from tests.factories import make_session
from tests.live.helpers import ROOT, DaphneServer, recv_frame, session_cookie

REDIS_URL = os.environ.get("REDIS_URL", "")
POSTGRES = os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))

pytestmark = [
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not (REDIS_URL and POSTGRES), reason="needs DATABASE_URL (PostgreSQL) and REDIS_URL"
    ),
]


def test_remote_runner_is_watched_through_the_other_server(operator_user: User) -> None:
    assert connection.vendor == "postgresql"
    make_session("s-two", turns=0)
    key = create_key("remote-two").key
    cookie = session_cookie(operator_user)
    env = {"REDIS_URL": REDIS_URL}

    async def scenario(writer: DaphneServer, watcher: DaphneServer) -> list[dict[str, Any]]:
        url = f"ws://127.0.0.1:{watcher.port}/ws/sessions/s-two/?after=0"
        headers = {"Cookie": cookie, "Origin": watcher.url}
        async with websockets.connect(url, additional_headers=headers) as ws:
            assert (await recv_frame(ws))["kind"] == "hello"
            seen: list[dict[str, Any]] = []
            child_env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
            child = subprocess.Popen(
                [sys.executable, "-m", "tests.api.remote_runner_child", writer.url, key,
                 "s-two", "complete"],
                cwd=ROOT, env=child_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True,
            )  # fmt: skip
            ended = await _frames_until_turn_ends(ws, seen)
            out, _ = child.communicate(timeout=60)
            assert ended["status"] == "completed" and "DONE" in out, out
            return seen

    with DaphneServer(env) as writer, DaphneServer(env) as watcher:
        seen = asyncio.run(scenario(writer, watcher))

    turn = Turn.objects.get(session_id="s-two")
    stored = list(Event.objects.filter(turn_id=turn.id).order_by("id").values_list("id", flat=True))
    received = [m["event_id"] for m in seen if m["kind"] == "event"]
    assert received == stored and len(stored) == 4
    statuses = [m["status"] for m in seen if m["kind"] == "turn"]
    assert statuses == ["running", "completed"]
