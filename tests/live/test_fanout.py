"""Watchers never slow the runner: the store posts to an outbox and goes on, each process
subscribes once per session however many sockets watch it, a process that fell behind
sends fewer and fuller messages, and a watcher that missed messages or fell too far behind
is told to resume from the database (closed 4429)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from agentops.runtime.model import Content, Event, Role
from sessions_app import live
from sessions_app.live import fanout, groups
from sessions_app.live.consumer import CLOSE_BEHIND
from sessions_app.live.fanout import Batch
from sessions_app.live.groups import group_name
from sessions_app.live.watcher import WatcherFrames
from sessions_app.models import Event as EventRow
from tests.factories import make_session
from tests.live.helpers import (
    communicator,
    frame,
    frames_of,
    receive_until,
    session_cookie,
    turn_ended,
)

SID = "s-fanout"


def _partial(text: str, after_id: int = 1, turn_id: str = "t1") -> dict[str, Any]:
    partial = {"turn_id": turn_id, "role": "assistant", "author": "bot", "delta": text,
               "reasoning": "", "tool_calls": [], "after_id": after_id}  # fmt: skip
    return {"type": "live.partial", "partial": partial}


def _cancel() -> dict[str, Any]:
    return {"type": "turn.cancel", "session_id": SID, "turn_id": "t1"}


def test_a_batch_in_time_goes_to_a_watcher_in_one_message_frame_by_frame() -> None:
    batch = Batch([_partial("a"), _partial("b"), _cancel()])
    [message] = WatcherFrames(SID).messages(batch)
    assert [frame(one)["kind"] for one in frames_of(message)] == ["partial", "partial", "cancel"]
    assert 'id="stream-text-t1">a</div>' in message  # the fragments are not joined


def test_a_batch_behind_joins_a_turns_fragments_in_one_message() -> None:
    batch = Batch([_partial("a"), _partial("b"), _partial("c"), _cancel()], behind=True)
    [message] = WatcherFrames(SID).messages(batch)
    assert message.count('id="live-state"') == 2  # the joined fragments, then the cancel
    assert 'id="stream-text-t1">abc</div>' in message


def test_frames_are_made_once_per_batch_for_watchers_at_the_same_position() -> None:
    batch = Batch([_partial("a"), _cancel()])
    first, second = WatcherFrames(SID), WatcherFrames(SID)
    assert all(a is b for a, b in zip(first.frames(batch), second.frames(batch), strict=True))


class _Recording:
    """A watcher that notes when it was served."""

    def __init__(self, name: int, log: list[str], wake: asyncio.Future[None] | None) -> None:
        self.name, self.log, self.wake = name, log, wake

    async def take(self, batch: Batch) -> None:
        self.log.append(f"take {self.name}")
        if self.wake is not None:  # as a turn's timer firing meanwhile
            asyncio.get_running_loop().call_soon(self.wake.set_result, None)

    async def resume_from_database(self) -> None:
        self.log.append(f"resume {self.name}")


async def test_a_task_woken_while_watchers_are_served_runs_before_the_next_slice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fanout, "SLICE_SECONDS", 0.0, raising=False)  # a slice per watcher
    log: list[str] = []
    wake: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def turn() -> None:
        await wake
        log.append("turn")

    feed = fanout.Feed(SID)
    for name in range(5):
        feed.watchers[_Recording(name, log, wake if name == 0 else None)] = None
    woken = asyncio.create_task(turn())
    feed.accept(_cancel())
    await woken
    while feed.serving is not None:
        await asyncio.sleep(0)
    assert log == ["take 0", "turn", "take 1", "take 2", "take 3", "take 4"]


@pytest.fixture
def cookie(operator_user: User) -> str:
    make_session(SID, turns=1)
    return session_cookie(operator_user)


async def _watch(cookie: str) -> WebsocketCommunicator:
    comm = communicator(SID, cookie, after=0)
    connected, code = await comm.connect()
    assert connected, code
    await receive_until(comm, lambda m: m["kind"] == "hello")
    return comm


@pytest.mark.django_db(transaction=True)
async def test_one_subscription_per_process_however_many_sockets(
    cookie: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    layer = get_channel_layer()
    joined: list[str] = []
    group_add = layer.group_add

    async def counting_group_add(group: str, channel: str) -> None:
        joined.append(group)
        await group_add(group, channel)

    monkeypatch.setattr(layer, "group_add", counting_group_add)
    watchers = [await _watch(cookie) for _ in range(5)]
    try:
        assert joined.count(group_name(SID)) == 1  # the feed, not one per socket
        await live.run_turn(SID, "hi", agent=_agent(3), listen_for_cancel=False)
        for comm in watchers:
            assert turn_ended((await receive_until(comm, turn_ended))[-1])
    finally:
        for comm in watchers:
            await comm.disconnect()


def _agent(count: int) -> Any:
    async def agent(context: list[Event]) -> AsyncIterator[Event]:
        for index in range(count):
            yield Event(author="bot", content=Content(role=Role.ASSISTANT, text=f"n{index}"))

    return agent


@pytest.mark.django_db(transaction=True)
async def test_the_runner_does_not_wait_for_the_channel_layer(
    cookie: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    released = asyncio.Event()
    sent: list[dict[str, Any]] = []

    async def stuck_layer(session_id: str, message: dict[str, Any]) -> None:
        await released.wait()
        sent.append(message)

    monkeypatch.setattr(groups, "broadcast", stuck_layer)
    run = asyncio.create_task(live.run_turn(SID, "go", agent=_agent(20)))
    count = sync_to_async(lambda: EventRow.objects.filter(session_id=SID, author="bot").count())
    for _ in range(200):
        if await count() == 20:
            break
        await asyncio.sleep(0.05)
    # Every event is stored while the layer has not taken a single message.
    assert await count() == 20 and sent == [] and not run.done()
    released.set()
    await run  # the run flushes its outbox before it returns
    stored = [m for one in sent for m in one.get("messages", [one]) if m["type"] == "live.event"]
    assert len(stored) == 21  # the user message and the agent's 20, in order, numbered
    assert [m["event"]["id"] for m in stored] == sorted(m["event"]["id"] for m in stored)
    seqs = [m["seq"] for one in sent for m in one.get("messages", [one])]
    assert seqs == list(range(1, len(seqs) + 1))


@pytest.mark.django_db(transaction=True)
async def test_a_gap_in_an_outboxs_numbers_makes_watchers_resume(cookie: str) -> None:
    comm = await _watch(cookie)
    try:
        layer = get_channel_layer()
        for seq in (1, 3):  # message 2 was lost (a channel over capacity drops silently)
            await layer.group_send(group_name(SID), {**_cancel(), "origin": "o", "seq": seq})
        assert (await receive_until(comm, lambda m: True))[0]["kind"] == "cancel"
        assert await comm.receive_output(timeout=5) == {"type": "websocket.close",
                                                        "code": CLOSE_BEHIND}  # fmt: skip
    finally:
        await comm.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_watcher_too_far_behind_resumes_from_the_database(
    cookie: str, settings: Any
) -> None:
    settings.AGENTOPS_WATCHER_BACKLOG = 2
    comm = await _watch(cookie)
    try:
        batch = {"type": "live.batch", "messages": [_cancel(), _cancel(), _cancel()]}
        await get_channel_layer().group_send(group_name(SID), batch)
        assert await comm.receive_output(timeout=5) == {"type": "websocket.close",
                                                        "code": CLOSE_BEHIND}  # fmt: skip
        assert await comm.receive_nothing(timeout=0.3)
    finally:
        await comm.disconnect()
