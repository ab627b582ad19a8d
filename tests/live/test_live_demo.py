"""The demo loop stands aside for people (a first user could hardly send a message on
demo-live: the next demo turn began one second after a stop)."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import TypedDict, Unpack

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from sessions_app import live
from sessions_app.live import demo_live as live_demo
from sessions_app.models import Turn
from tests.factories import make_session

pytestmark = pytest.mark.django_db(transaction=True)


class _LoopOptions(TypedDict, total=False):
    """Options passed on to `keep_demo_live`."""

    turns: int | None
    hold_off: float


async def _run_loop_until_turns(
    session_id: str, count: int, **options: Unpack[_LoopOptions]
) -> list[Turn]:
    """Run the demo loop until the session has `count` turns, then stop the loop (the
    slow demo turns need not finish); returns the turns in start order."""
    loop = asyncio.create_task(live_demo.keep_demo_live(session_id, pause=0, **options))
    try:
        async with asyncio.timeout(30):
            while await Turn.objects.filter(session_id=session_id).acount() < count:
                await asyncio.sleep(0.05)
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
    return [t async for t in Turn.objects.filter(session_id=session_id).order_by("started_at")]


async def test_after_a_stop_the_demo_waits_before_its_next_turn() -> None:
    async def stop_the_first_turn() -> None:
        async with asyncio.timeout(20):
            while not await Turn.objects.filter(session_id="s-aside").aexists():
                await asyncio.sleep(0.05)
        await live.request_stop("s-aside")

    first, second = (
        await asyncio.gather(
            _run_loop_until_turns("s-aside", 2, hold_off=1.0), stop_the_first_turn()
        )
    )[0]
    assert (first.status, first.reason) == ("interrupted", "canceled")
    assert first.finished_at is not None
    assert (second.started_at - first.finished_at).total_seconds() >= 1.0


async def test_a_persons_turn_is_waited_for_and_then_hold_off_seconds_more() -> None:
    await sync_to_async(make_session)("s-person", turns=1, statuses=["running"])
    person = await Turn.objects.aget(session_id="s-person")

    async def finish_the_persons_turn() -> None:
        await asyncio.sleep(0.5)
        await Turn.objects.filter(pk=person.pk).aupdate(
            status="completed", finished_at=timezone.now()
        )

    turns = (
        await asyncio.gather(
            _run_loop_until_turns("s-person", 2, hold_off=0.5), finish_the_persons_turn()
        )
    )[0]
    finished, demo = turns
    assert finished.pk == person.pk and finished.status == "completed"
    assert finished.finished_at is not None
    assert demo.started_at - finished.finished_at >= timedelta(seconds=0.5)
