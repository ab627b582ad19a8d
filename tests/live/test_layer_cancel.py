"""A cancelled channel-layer receive() ends, wherever the cancel lands, so a consumer ends
as soon as its client disconnects (and a run's stop-request listener when the run ends).

On Python 3.11 redis-py sends every command through `asyncio.wait_for` when a socket
timeout is set, and that wait_for swallows a cancellation arriving just after the send
finished (CPython gh-86296): the cancelled receive() went on popping from Redis, so each
WebsocketCommunicator.disconnect() ran into its 1 s limit and `live.run_turn` could hang
in its listener's stop. The settings leave the socket timeout off (agentops/settings.py).
"""

from __future__ import annotations

import asyncio
import os

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.contrib.auth.models import User

from tests.factories import make_session
from tests.live.helpers import communicator, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.redis
@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL")
async def test_a_cancelled_redis_receive_always_ends() -> None:
    layer = get_channel_layer()
    stuck = 0
    # Cancel at each of the first 13 loop steps of a receive (lock, EVAL, BZPOPMIN,
    # reconnect after the previous cancel closed the connection), three times over.
    for spins in range(39):
        task = asyncio.ensure_future(layer.receive(await layer.new_channel()))
        for _ in range(spins % 13):
            await asyncio.sleep(0)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=2)
        if not done:
            stuck += 1
            task.cancel()  # a second cancel gets through; don't leave it popping
            await asyncio.wait({task})
    assert stuck == 0, f"{stuck} of 39 cancelled receives kept running"


async def test_each_consumer_ends_by_itself_when_its_client_disconnects(
    operator_user: User,
) -> None:
    await sync_to_async(make_session)("s-leave")
    cookie = await sync_to_async(session_cookie)(operator_user)
    watchers = [communicator("s-leave", cookie) for _ in range(10)]
    for comm in watchers:
        connected, code = await comm.connect()
        assert connected, code
    try:
        for comm in watchers:
            await comm.send_input({"type": "websocket.disconnect", "code": 1000})
            # disconnect() cancels a consumer still running after 1 s: look before that.
            done, _ = await asyncio.wait({comm.future}, timeout=5)
            assert done, "the consumer kept running after its client disconnected"
            await comm.wait()  # raises what the consumer raised, if anything
    finally:
        for comm in watchers:
            if not comm.future.done():
                await comm.disconnect()
