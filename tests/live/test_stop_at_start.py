"""A stop that arrives while a turn is being begun ends it interrupted/canceled, never left
running for the next run to record abandoned (the demo turn stopped as it started).

The window: `begin_turn` writes the row in a worker thread, which a cancellation does not
stop, then broadcasts it; a cancellation delivered meanwhile used to leave a recorded turn
that the runner never finalised. Each test puts the cancellation exactly in that window
with a hook, not with sleeps."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async

from agentops.runtime.session import Turn as RuntimeTurn
from sessions_app import live
from sessions_app.models import Event, Turn
from tests.factories import make_session
from tests.live.helpers import scripted_agent

pytestmark = pytest.mark.django_db(transaction=True)


class _Hooked(live.LiveSessionService):
    """The live store, knowing the task that runs the turn (for hooks to cancel it)."""

    run_task: asyncio.Task[None]
    loop: asyncio.AbstractEventLoop


async def _run_and_expect_cancel(session_id: str, service: _Hooked) -> Turn:
    service.loop = asyncio.get_running_loop()
    run = asyncio.create_task(
        live.run_turn(session_id, "plan", agent=scripted_agent(), service=service)
    )
    service.run_task = run
    with pytest.raises(asyncio.CancelledError):
        await run
    return await Turn.objects.aget(session_id=session_id)


async def test_a_stop_while_the_new_turn_is_announced_ends_it_canceled() -> None:
    await sync_to_async(make_session)("s-announce", turns=0)
    service = _Hooked()
    # on_begin runs after the row is written and before it is broadcast and returned.

    def stop(turn: RuntimeTurn) -> None:
        service.run_task.cancel()

    service.on_begin = stop

    turn = await _run_and_expect_cancel("s-announce", service)

    assert (turn.status, turn.reason) == ("interrupted", "canceled")
    assert turn.finished_at is not None
    # The agent never ran: the stop came first.
    assert await Event.objects.filter(turn_id=turn.id, role="assistant").acount() == 0


class _CancelDuringWrite(_Hooked):
    """Cancels the run from inside the begin write (worker thread), and lets the write
    commit only once the cancellation has been requested on the loop."""

    def _begin_turn(self, session_id: str, turn: RuntimeTurn) -> RuntimeTurn:
        requested = threading.Event()

        def cancel() -> None:
            self.run_task.cancel()
            requested.set()

        self.loop.call_soon_threadsafe(cancel)
        assert requested.wait(10)
        return super()._begin_turn(session_id, turn)


async def test_a_stop_while_the_turn_row_is_written_ends_it_canceled() -> None:
    await sync_to_async(make_session)("s-write", turns=0)
    service = _CancelDuringWrite()

    turn = await _run_and_expect_cancel("s-write", service)

    assert (turn.status, turn.reason) == ("interrupted", "canceled")
    # The next run finds nothing to abandon and completes.
    await live.run_turn("s-write", "again", agent=scripted_agent(), listen_for_cancel=False)
    statuses = [(t.status, t.reason) async for t in Turn.objects.filter(session_id="s-write")]
    assert statuses == [("interrupted", "canceled"), ("completed", "")]
