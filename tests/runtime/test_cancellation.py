"""Cancellation and deadline rules of a turn's clean-up (docs/runtime.md §3 "Failing a turn",
"Rollback", "Clean-up writes"), on every store kind.

Hangs and gates are injected with `FaultyService` (tests/runtime/faults.py); bounds are
small (`cleanup_timeout` of a fraction of a second) and every wait is itself bounded by a
generous `asyncio.timeout`, so a broken rule fails the test instead of hanging it. No test
asserts a wall-clock time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from agentops.runtime import (
    Event,
    Runner,
    Turn,
    TurnReason,
    TurnStatus,
    TurnStore,
    cleanup_errors,
)
from agentops.runtime.cleanup import is_deadline

from .conftest import StoreHarness
from .faults import FaultyService, Gate, hang
from .helpers import T0, assistant, drain

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

#: Generous outer bound for anything that must end (never asserted as a time).
BOUND = 20.0


async def new_session(harness: StoreHarness) -> str:
    return (await harness.service.create_session("app", "user-1")).id


async def turns_of(harness: StoreHarness, session_id: str) -> list[Turn]:
    return await cast(TurnStore, harness.service).list_turns(session_id)


def hanging_agent(started: asyncio.Event, events: int = 1) -> Any:
    async def agent(context: list[Event]) -> AsyncIterator[Event]:
        for index in range(events):
            yield assistant(f"step {index}")
        started.set()
        await asyncio.Event().wait()
        yield assistant("never")

    return agent


def raising_agent(error: BaseException, events: int = 1) -> Any:
    async def agent(context: list[Event]) -> AsyncIterator[Event]:
        for index in range(events):
            yield assistant(f"step {index}")
        raise error

    return agent


# -- deadlines seen through chains and groups -------------------------------------------


def test_is_deadline_sees_through_cause_context_and_groups() -> None:
    try:
        try:
            raise TimeoutError("provider read timed out")
        except TimeoutError:
            raise ValueError("retry failed") from None
    except ValueError as error:
        implicit = error  # __cause__ suppressed, __context__ still the TimeoutError
    explicit = RuntimeError("wrapped")
    explicit.__cause__ = TimeoutError()
    nested = ExceptionGroup("outer", [ValueError(), ExceptionGroup("inner", [explicit])])
    assert all(map(is_deadline, (TimeoutError(), implicit, explicit, nested)))
    assert not is_deadline(ExceptionGroup("g", [ValueError(), KeyError()]))
    assert not is_deadline(RuntimeError("plain"))


@pytest.mark.turn_store
async def test_wrapped_timeout_interrupts_turn_as_deadline(durable_store: StoreHarness) -> None:
    sid = await new_session(durable_store)
    wrapped = RuntimeError("the provider call failed")
    wrapped.__cause__ = TimeoutError("read timed out")
    _, error = await drain(Runner(raising_agent(wrapped), durable_store.service), sid)
    assert error is wrapped  # the cause itself is raised
    [turn] = await turns_of(durable_store, sid)
    assert (turn.status, turn.reason, turn.failure) == (
        TurnStatus.INTERRUPTED, TurnReason.DEADLINE_EXCEEDED, None,
    )  # fmt: skip


@pytest.mark.turn_store
async def test_timeout_in_taskgroup_exception_group_is_a_deadline(
    durable_store: StoreHarness,
) -> None:
    sid = await new_session(durable_store)

    async def slow_tool() -> None:
        async with asyncio.timeout(0.01):
            await asyncio.Event().wait()

    async def fan_out(context: list[Event]) -> AsyncIterator[Event]:
        yield assistant("calling two tools")
        async with asyncio.TaskGroup() as group:
            group.create_task(slow_tool())
            group.create_task(asyncio.sleep(0))
        yield assistant("never")

    yielded, error = await drain(Runner(fan_out, durable_store.service), sid)
    assert isinstance(error, ExceptionGroup) and len(yielded) == 1
    [turn] = await turns_of(durable_store, sid)
    assert (turn.status, turn.reason) == (TurnStatus.INTERRUPTED, TurnReason.DEADLINE_EXCEEDED)


@pytest.mark.turn_store
async def test_error_without_timeout_in_chain_still_fails_as_agent_error(
    durable_store: StoreHarness,
) -> None:
    sid = await new_session(durable_store)
    group = ExceptionGroup("tools failed", [ValueError("bad"), KeyError("k")])
    await drain(Runner(raising_agent(group), durable_store.service), sid)
    [turn] = await turns_of(durable_store, sid)
    assert (turn.status, turn.reason) == (TurnStatus.FAILED, TurnReason.AGENT_ERROR)


# -- a cancellation during clean-up: waited for, then raised -----------------------------


async def test_cancel_during_consumer_stop_cleanup_is_raised_after_it(
    store: StoreHarness,
) -> None:
    sid = await new_session(store)
    gate = Gate()
    write = "finalize_turn" if store.durable else "delete_event"
    service = FaultyService(store.service, {write: gate})
    started = asyncio.Event()
    runner = Runner(hanging_agent(started, events=2), service, cleanup_timeout=BOUND)

    async def consume_one_then_stop() -> None:
        run = runner.run(sid, "hi")
        async with contextlib.aclosing(run) as events:
            async for _event in events:
                break  # the caller stops: aclosing runs the consumer-stop clean-up

    async with asyncio.timeout(BOUND):
        task = asyncio.create_task(consume_one_then_stop())
        await gate.entered.wait()
        task.cancel()
        await asyncio.sleep(0.01)
        assert not task.done()  # the clean-up goes on despite the cancellation
        gate.release()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert task.cancelled()  # not swallowed
    if store.durable:
        [turn] = await turns_of(store, sid)
        assert (turn.status, turn.reason) == (TurnStatus.INTERRUPTED, TurnReason.CONSUMER_STOPPED)
    else:
        assert await store.service.list_events(sid) == []


async def test_second_cancel_during_cleanup_leaves_nothing_half_done(store: StoreHarness) -> None:
    """Legacy: a second cancel during the rollback does not stop it half-way (all the
    turn's events are deleted). Durable: the turn is still recorded canceled."""
    sid = await new_session(store)
    gate = Gate()
    write = "finalize_turn" if store.durable else "delete_event"
    service = FaultyService(store.service, {write: gate})
    started = asyncio.Event()
    runner = Runner(hanging_agent(started, events=3), service, cleanup_timeout=BOUND)
    async with asyncio.timeout(BOUND):
        task = asyncio.create_task(drain(runner, sid))
        await started.wait()
        task.cancel()  # first cancel: the turn fails, clean-up starts
        await gate.entered.wait()
        task.cancel()  # second cancel, in the middle of the clean-up
        await asyncio.sleep(0.01)
        gate.release()
        with pytest.raises(asyncio.CancelledError):
            await task
    if store.durable:
        [turn] = await turns_of(store, sid)
        assert (turn.status, turn.reason) == (TurnStatus.INTERRUPTED, TurnReason.CANCELED)
        assert len(await store.service.list_events(sid)) == 4
    else:
        assert service.calls["delete_event"] == 4  # user event + 3 agent events
        assert await store.service.list_events(sid) == []


@pytest.mark.turn_store
async def test_cancel_during_step3_interrupt_finishes_it_then_raises(
    locking_store: StoreHarness,
) -> None:
    sid = await new_session(locking_store)
    inner = cast(TurnStore, locking_store.service)
    await inner.begin_turn(sid, Turn(id="turn_crashed", session_id=sid, started_at=T0))
    gate = Gate()
    service = FaultyService(locking_store.service, {"interrupt_running_turns": gate})
    runner = Runner(raising_agent(ValueError("unused"), events=0), service, cleanup_timeout=BOUND)
    async with asyncio.timeout(BOUND):
        task = asyncio.create_task(drain(runner, sid))
        await gate.entered.wait()
        task.cancel()
        await asyncio.sleep(0.01)
        gate.release()
        with pytest.raises(asyncio.CancelledError):
            await task
    [turn] = await turns_of(locking_store, sid)  # no new turn began
    assert (turn.id, turn.status, turn.reason) == (
        "turn_crashed", TurnStatus.INTERRUPTED, TurnReason.ABANDONED,
    )  # fmt: skip


@pytest.mark.turn_store
async def test_cancel_while_the_turn_begins_records_it_canceled(
    durable_store: StoreHarness,
) -> None:
    """The store may commit the begin after the cancel arrived: the turn is then recorded
    interrupted/canceled, never left running."""
    sid = await new_session(durable_store)
    gate = Gate()
    service = FaultyService(durable_store.service, {"begin_turn": gate})
    runner = Runner(raising_agent(ValueError("unused"), events=0), service, cleanup_timeout=BOUND)
    async with asyncio.timeout(BOUND):
        task = asyncio.create_task(drain(runner, sid))
        await gate.entered.wait()
        task.cancel()
        await asyncio.sleep(0.01)
        gate.release()
        with pytest.raises(asyncio.CancelledError):
            await task
    [turn] = await turns_of(durable_store, sid)
    assert (turn.status, turn.reason) == (TurnStatus.INTERRUPTED, TurnReason.CANCELED)
    assert await durable_store.service.list_events(sid) == []


# -- bounds ------------------------------------------------------------------------------


@pytest.mark.turn_store
async def test_hung_store_during_step3_interrupt_is_bounded(locking_store: StoreHarness) -> None:
    sid = await new_session(locking_store)
    service = FaultyService(locking_store.service, {"interrupt_running_turns": hang})
    runner = Runner(raising_agent(ValueError("unused"), events=0), service, cleanup_timeout=0.2)
    async with asyncio.timeout(BOUND):
        _, error = await drain(runner, sid)
    assert isinstance(error, TimeoutError)
    assert service.calls.get("begin_turn", 0) == 0  # nothing was begun
    assert await turns_of(locking_store, sid) == []


async def test_rollback_deletes_share_one_deadline(legacy_store: StoreHarness) -> None:
    """With a hung store, a per-write bound would try all 5 deletes (5 x the bound); one
    deadline for the whole rollback tries the first, then gives up on the rest."""
    sid = await new_session(legacy_store)
    service = FaultyService(legacy_store.service, {"delete_event": hang})
    runner = Runner(
        raising_agent(ValueError("agent broke"), events=4), service, cleanup_timeout=0.2
    )
    async with asyncio.timeout(BOUND):
        _, error = await drain(runner, sid)
    assert isinstance(error, ValueError)
    assert service.calls["delete_event"] == 1
    [group] = cleanup_errors(error)
    assert isinstance(group, ExceptionGroup)
    assert [type(e) for e in group.exceptions] == [TimeoutError, TimeoutError]
    assert "4 deletes left" in str(group.exceptions[1])


@pytest.mark.turn_store
async def test_hung_finalize_is_bounded_and_attached(durable_store: StoreHarness) -> None:
    sid = await new_session(durable_store)
    service = FaultyService(durable_store.service, {"finalize_turn": hang})
    runner = Runner(raising_agent(ValueError("agent broke")), service, cleanup_timeout=0.2)
    async with asyncio.timeout(BOUND):
        _, error = await drain(runner, sid)
    assert isinstance(error, ValueError)
    assert [type(e) for e in cleanup_errors(error)] == [TimeoutError]
