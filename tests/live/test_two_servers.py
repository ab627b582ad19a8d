"""Two daphne processes on the Redis channel layer and one database: a turn started through
one server is watched through the other, and stopped through the other."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx
import pytest
import websockets
from django.contrib.auth.models import User
from websockets.asyncio.client import ClientConnection

from sessions_app import live
from sessions_app.models import Event, Turn
from tests.factories import make_session
from tests.live.helpers import DaphneServer, recv_frame, session_cookie

REDIS_URL = os.environ.get("REDIS_URL", "")

pytestmark = [
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not REDIS_URL, reason="needs REDIS_URL (two processes share the layer)"),
]


async def _post(
    server: DaphneServer, cookie: str, path: str, data: dict[str, str]
) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=server.url, headers={"Cookie": cookie}) as client:
        page = await client.get(path.rsplit("/", 2)[0] + "/")  # the session page sets csrftoken
        token = page.cookies.get("csrftoken") or client.cookies.get("csrftoken")
        assert token, page.status_code
        response = await client.post(
            path,
            data=data,
            headers={
                "Accept": "application/json",
                "X-CSRFToken": token,
                "Cookie": f"{cookie}; csrftoken={token}",
            },
        )
        assert response.status_code == 202, response.text
        answer: dict[str, Any] = response.json()
        return answer


async def _watch_until_turn_ends(
    ws: ClientConnection, turn_id: str, seen: list[dict[str, Any]]
) -> dict[str, Any]:
    async with asyncio.timeout(30):
        while True:
            message = await recv_frame(ws)
            seen.append(message)
            kind, status = message["kind"], message.get("status")
            if kind == "turn" and message["turn_id"] == turn_id and status != "running":
                return message


def test_turn_run_in_one_server_is_watched_through_the_other(
    admin_user: User, operator_user: User
) -> None:
    make_session("s-two", turns=1)
    after = live.last_event_id("s-two")
    admin, operator = session_cookie(admin_user), session_cookie(operator_user)

    async def scenario(a: DaphneServer, b: DaphneServer) -> tuple[list[dict[str, Any]], str, str]:
        url = f"ws://127.0.0.1:{b.port}/ws/sessions/s-two/?after={after}"
        headers = {"Cookie": operator, "Origin": b.url}
        async with websockets.connect(url, additional_headers=headers) as ws:
            assert (await recv_frame(ws))["kind"] == "hello"
            seen: list[dict[str, Any]] = []
            started = await _post(a, admin, "/sessions/s-two/run/", {"message": "hello from a"})
            ended = await _watch_until_turn_ends(ws, started["turn_id"], seen)
            assert ended["status"] == "completed"
            # Stop through B a turn that runs in A.
            hanging = await _post(a, admin, "/sessions/s-two/run/", {"message": "hang there"})
            while True:
                message = await recv_frame(ws, 30)
                if message["kind"] == "partial":
                    break
            await _post(b, admin, "/sessions/s-two/stop/", {})
            stopped = await _watch_until_turn_ends(ws, hanging["turn_id"], [])
            assert (stopped["status"], stopped["reason"]) == ("interrupted", "canceled")
            return seen, started["turn_id"], hanging["turn_id"]

    with DaphneServer({"REDIS_URL": REDIS_URL}) as a, DaphneServer({"REDIS_URL": REDIS_URL}) as b:
        seen, turn_id, hanging_id = asyncio.run(scenario(a, b))

    stored = list(Event.objects.filter(turn_id=turn_id).order_by("id").values_list("id", flat=True))
    received = [m["event_id"] for m in seen if m["kind"] == "event"]
    assert len(stored) > 10 and received == stored  # every complete event once, in order
    assert any(m["kind"] == "partial" for m in seen)
    assert Turn.objects.get(pk=hanging_id).reason == "canceled"
