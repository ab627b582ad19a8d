"""On a channel layer of one process (the in-memory default), what another process writes
reaches the server's watchers anyway (`sessions_app.live.elsewhere`): `run_turn` run beside
the server, without `--to`, is watched live; the server's own writes cause no resume."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
import websockets
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone

from sessions_app.live import elsewhere
from sessions_app.models import Event, Session, Turn
from tests.factories import make_session
from tests.live.helpers import (
    ROOT,
    DaphneServer,
    database_url_for_servers,
    recv_frame,
    session_cookie,
)

pytestmark = pytest.mark.django_db(transaction=True)

RESUME = 4429  # the consumer's "resume from the database" close code


class FakeFeed:
    """A feed as `elsewhere.poll_other_writers` sees it."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.newest_event_id = 0
        self.received = 0
        self.resumes = 0

    def resume_all(self) -> None:
        self.resumes += 1


def _write_event(session_id: str, text: str) -> int:
    now = timezone.now()
    event = Event.objects.create(
        session_id=session_id, author="user", role="user", text=text, created_at=now,
        updated_at=now,
    )  # fmt: skip
    Session.objects.filter(pk=session_id).update(updated_at=now)
    return event.pk


@override_settings(AGENTOPS_LIVE_POLL_MS=40)
def test_a_write_no_message_announced_makes_the_watchers_resume() -> None:
    make_session("s-poll", turns=1)
    feed = FakeFeed("s-poll")

    async def scenario() -> tuple[int, int, int]:
        poller = asyncio.create_task(elsewhere.poll_other_writers(feed))
        await asyncio.sleep(0.2)
        quiet = feed.resumes
        # A write of this process: its message arrives through the layer at once.
        for n in range(5):
            feed.newest_event_id = await asyncio.to_thread(_write_event, "s-poll", f"here {n}")
            feed.received += 1
            await asyncio.sleep(0.03)
        await asyncio.sleep(0.2)
        own = feed.resumes
        # Another process's write: nothing arrives through the layer.
        await asyncio.to_thread(_write_event, "s-poll", "elsewhere")
        await asyncio.sleep(0.3)
        poller.cancel()
        return quiet, own, feed.resumes

    quiet, own, after_other = asyncio.run(scenario())
    assert (quiet, own) == (0, 0)
    assert after_other == 1
    assert feed.newest_event_id == Event.objects.filter(session_id="s-poll").latest("id").pk


@override_settings(AGENTOPS_LIVE_POLL_MS=40)
def test_a_turn_finalised_elsewhere_makes_the_watchers_resume() -> None:
    make_session("s-fin", turns=1, statuses=["running"])
    feed = FakeFeed("s-fin")

    async def scenario() -> int:
        poller = asyncio.create_task(elsewhere.poll_other_writers(feed))
        await asyncio.sleep(0.15)

        def finalise() -> None:
            now = timezone.now() + timedelta(seconds=1)
            Turn.objects.filter(session_id="s-fin").update(status="completed", finished_at=now)
            Session.objects.filter(pk="s-fin").update(updated_at=now)

        await asyncio.to_thread(finalise)
        await asyncio.sleep(0.3)
        poller.cancel()
        return feed.resumes

    assert asyncio.run(scenario()) == 1


def test_run_turn_beside_the_server_is_watched_live(operator_user: User) -> None:
    make_session("s-beside", turns=0)
    cookie = session_cookie(operator_user)
    env = {**os.environ, "DATABASE_URL": database_url_for_servers(), "REDIS_URL": ""}
    env.pop("DJANGO_SETTINGS_MODULE", None)

    async def scenario(server: DaphneServer) -> tuple[list[dict[str, Any]], int]:
        seen: list[dict[str, Any]] = []
        last, resumes, child = 0, 0, None
        async with asyncio.timeout(90):
            while True:
                url = f"ws://127.0.0.1:{server.port}/ws/sessions/s-beside/?after={last}"
                headers = {"Cookie": cookie, "Origin": server.url}
                try:
                    async with websockets.connect(url, additional_headers=headers) as ws:
                        if child is None:
                            assert (await recv_frame(ws))["kind"] == "hello"
                            child = subprocess.Popen(
                                [sys.executable, "manage.py", "run_turn", "s-beside",
                                 "plan my day"],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL,
                            )  # fmt: skip
                        done = False
                        while True:
                            message = await recv_frame(ws)
                            seen.append(message)
                            if message["kind"] == "event":
                                last = max(last, message["event_id"])
                            if message["kind"] == "turn" and message["status"] == "completed":
                                done = True  # a catch-up sends turns first, then events
                            if done and message["kind"] == "hello":
                                assert child.wait(30) == 0
                                return seen, resumes
                except websockets.ConnectionClosed as closed:
                    assert closed.rcvd is not None and closed.rcvd.code == RESUME, closed
                    resumes += 1

    with DaphneServer({"REDIS_URL": "", "AGENTOPS_LIVE_POLL_MS": "300"}) as server:
        seen, resumes = asyncio.run(scenario(server))

    stored = list(
        Event.objects.filter(session_id="s-beside").order_by("id").values_list("id", flat=True)
    )
    received = sorted({m["event_id"] for m in seen if m["kind"] == "event"})
    assert stored and received == stored
    assert resumes >= 1
