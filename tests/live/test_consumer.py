"""The live-session websocket (sessions_app.live.consumer) with WebsocketCommunicator."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from agentops.runtime.model import Content, Event, Role, ToolCall
from sessions_app import live
from sessions_app.live.consumer import CLOSE_FORBIDDEN, CLOSE_NOT_FOUND
from sessions_app.models import Event as EventRow
from sessions_app.models import Turn
from tests.factories import make_session
from tests.live.helpers import (
    communicator,
    receive_frame,
    receive_until,
    scripted_agent,
    session_cookie,
    stream_text,
    turn_ended,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def operator_cookie(operator_user: User) -> str:
    return session_cookie(operator_user)


@pytest.fixture
def watched(db: None) -> str:
    make_session("s-live", turns=1)
    return "s-live"


async def _connect(comm: WebsocketCommunicator) -> WebsocketCommunicator:
    connected, code = await comm.connect()
    assert connected, code
    return comm


def _kinds(messages: list[dict[str, Any]]) -> list[str]:
    return [m["kind"] for m in messages]


async def test_every_watcher_gets_partials_and_completes_in_order(
    watched: str, operator_cookie: str
) -> None:
    after = await sync_to_async(live.last_event_id)(watched)
    watchers = [
        await _connect(communicator(watched, operator_cookie, after=after)) for _ in range(2)
    ]
    try:
        for comm in watchers:
            assert (await receive_frame(comm))["kind"] == "hello"
        await live.run_turn(watched, "hi", agent=scripted_agent("Hello there, watcher.", pieces=3))
        for comm in watchers:
            messages = await receive_until(comm, turn_ended)
            assert _kinds(messages) == [
                "turn", "event", "partial", "partial", "partial", "event", "turn",
            ]  # fmt: skip
            begun, user, *partials, answer, ended = messages
            assert begun["status"] == "running"
            assert 'data-status="running"' in begun["html"]
            assert user["role"] == "user" and "<p>hi</p>" in user["html"]
            assert "".join(stream_text(p) for p in partials) == "Hello there, watcher."
            assert all(p["after_id"] == user["event_id"] for p in partials)
            assert answer["event_id"] > user["event_id"]
            assert f'id="event-{answer["event_id"]}"' in answer["html"]
            assert ended["status"] == "completed"
            assert "badge status-completed" in ended["html"]
    finally:
        for comm in watchers:
            await comm.disconnect()


async def test_reconnect_with_last_id_gets_exactly_the_missed_events(
    watched: str, operator_cookie: str
) -> None:
    comm = await _connect(communicator(watched, operator_cookie, after=0))
    try:
        first = await receive_until(comm, lambda m: m["kind"] == "hello")
        last_seen = first[-1]["last_id"]
        assert last_seen == await sync_to_async(live.last_event_id)(watched)
    finally:
        await comm.disconnect()
    await live.run_turn(watched, "while you were away", agent=scripted_agent("Missed me?"))
    missed = await sync_to_async(
        lambda: list(
            EventRow.objects.filter(session_id=watched, id__gt=last_seen)
            .order_by("id")
            .values_list("id", flat=True)
        )
    )()
    assert len(missed) == 2
    comm = await _connect(communicator(watched, operator_cookie, after=last_seen))
    try:
        messages = await receive_until(comm, lambda m: m["kind"] == "hello")
        assert [m["event_id"] for m in messages if m["kind"] == "event"] == missed
        turns = [m for m in messages if m["kind"] == "turn"]
        assert [t["status"] for t in turns] == ["completed"]
        assert messages[-1]["last_id"] == missed[-1]
        assert await comm.receive_nothing(timeout=0.2)
    finally:
        await comm.disconnect()


async def test_resume_message_and_live_traffic_are_not_duplicated(
    watched: str, operator_cookie: str
) -> None:
    comm = await _connect(communicator(watched, operator_cookie, after=0))
    try:
        await receive_until(comm, lambda m: m["kind"] == "hello")
        await live.run_turn(watched, "one", agent=scripted_agent("One."))
        live_ids = [
            m["event_id"] for m in await receive_until(comm, turn_ended) if m["kind"] == "event"
        ]
        await comm.send_json_to({"type": "resume", "after": live_ids[0]})
        replay = await receive_until(comm, lambda m: m["kind"] == "hello")
        assert [m["event_id"] for m in replay if m["kind"] == "event"] == live_ids[1:]
    finally:
        await comm.disconnect()


async def test_tool_result_carries_its_call_rendered_with_the_result(
    watched: str, operator_cookie: str
) -> None:
    async def agent(context: list[Event]) -> AsyncIterator[Event]:
        call = ToolCall(id="c1", name="lookup", arguments={"q": "x"})
        yield Event(content=Content(role=Role.ASSISTANT, tool_calls=(call,)))
        yield Event(content=Content(role=Role.TOOL, tool_call_id="c1", text="found it"))

    comm = await _connect(communicator(watched, operator_cookie))
    try:
        await live.run_turn(watched, "look", agent=agent)
        events = [m for m in await receive_until(comm, turn_ended) if m["kind"] == "event"]
        _user, call, result = events
        assert "pair_id" not in call and "running…" in call["html"]  # in flight
        assert result["pair_id"] == call["event_id"]
        # The call is shown again, in place, with its result folded in.
        assert f'id="event-{call["event_id"]}" hx-swap-oob="true"' in result["html"]
        assert "found it" in result["html"] and "no result" not in result["html"]
    finally:
        await comm.disconnect()


async def test_watcher_of_another_session_gets_nothing(watched: str, operator_cookie: str) -> None:
    await sync_to_async(make_session)("s-other")
    comm = await _connect(communicator("s-other", operator_cookie, after=0))
    try:
        await receive_until(comm, lambda m: m["kind"] == "hello")
        await live.run_turn(watched, "hi", agent=scripted_agent())
        assert await comm.receive_nothing(timeout=0.5)
    finally:
        await comm.disconnect()


async def test_origin_not_in_allowed_hosts_is_refused(watched: str, operator_cookie: str) -> None:
    comm = communicator(watched, operator_cookie, origin="http://evil.example")
    connected, _ = await comm.connect()
    assert not connected
    await comm.disconnect()


@pytest.mark.parametrize("who", ["anonymous", "outsider"])
async def test_anonymous_and_outsider_are_refused_4403(
    watched: str, who: str, outsider_user: User
) -> None:
    cookie = "" if who == "anonymous" else await sync_to_async(session_cookie)(outsider_user)
    comm = communicator(watched, cookie)
    connected, code = await comm.connect()
    assert (connected, code) == (False, CLOSE_FORBIDDEN)
    await comm.disconnect()


async def test_unknown_session_is_refused_4404(operator_cookie: str) -> None:
    comm = communicator("no-such-session", operator_cookie)
    connected, code = await comm.connect()
    assert (connected, code) == (False, CLOSE_NOT_FOUND)
    await comm.disconnect()


async def test_stop_cancels_a_hanging_turn_as_interrupted_canceled(
    watched: str, operator_cookie: str
) -> None:
    comm = await _connect(communicator(watched, operator_cookie))
    try:
        from agentops.agents.demo import DemoAgent
        from agentops.runtime.memory import InMemorySessionService, InMemoryTodoStore

        agent = DemoAgent(todo_store=InMemoryTodoStore(InMemorySessionService()), delay=0)
        handle = await live.start_turn(watched, "please hang", agent=agent)
        assert handle.turn_id and live.running_turn_ids(watched) == [handle.turn_id]
        await receive_until(comm, lambda m: m["kind"] == "partial")
        assert await live.request_stop(watched) == 1
        with pytest.raises(asyncio.CancelledError):
            await handle.task
        messages = await receive_until(comm, turn_ended)
        assert "cancel" in _kinds(messages)
        turn = await sync_to_async(Turn.objects.get)(pk=handle.turn_id)
        assert (turn.status, turn.reason) == ("interrupted", "canceled")
        assert messages[-1]["reason"] == "canceled"
        assert live.running_turn_ids(watched) == []
    finally:
        await comm.disconnect()
