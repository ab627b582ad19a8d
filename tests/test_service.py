"""The Django session service: store semantics on SQLite and PostgreSQL (docs/runtime.md §2)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection

from agentops.runtime import errors
from agentops.runtime.model import Content, Event, Role
from agentops.runtime.session import Turn, TurnFailure, TurnOutcome, TurnReason, TurnStatus
from sessions_app import models
from sessions_app.store import DjangoSessionService

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def user_event(session_id: str, text: str, **extra: Any) -> Event:
    return Event(session_id=session_id, content=Content(role=Role.USER, text=text), **extra)


async def test_append_assigns_growing_ids_and_merges_state_delta() -> None:
    service = DjangoSessionService()
    session = await service.create_session("app", "u", session_id="s1", state={"a": 1})
    first = await service.append_event(user_event(session.id, "hi", state_delta={"b": 2}))
    second = await service.append_event(user_event(session.id, "again", state_delta={"a": 3}))
    assert 0 < first.id < second.id and first.created_at is not None
    stored = await service.get_session("s1")
    assert stored is not None and stored.state == {"a": 3, "b": 2}
    assert [e.content.text for e in await service.list_events("s1")] == ["hi", "again"]


async def test_partial_event_is_refused_and_unknown_session_raises() -> None:
    service = DjangoSessionService()
    await service.create_session("app", session_id="s1")
    with pytest.raises(errors.InvalidEventError):
        await service.append_event(user_event("s1", "x", partial=True))
    with pytest.raises(errors.SessionNotFoundError) as caught:
        await service.append_event(user_event("nope", "x"))
    assert caught.value.session_id == "nope"
    assert await service.get_session("nope") is None


async def test_soft_deleted_and_archived_events_leave_the_history() -> None:
    service = DjangoSessionService()
    await service.create_session("app", session_id="s1")
    kept = await service.append_event(user_event("s1", "kept"))
    gone = await service.append_event(user_event("s1", "gone"))
    archived = await service.append_event(user_event("s1", "archived"))
    await service.delete_event("s1", gone.id)
    await models.Event.objects.filter(pk=archived.id).aupdate(archived_at=T0)
    assert [e.id for e in await service.list_events("s1")] == [kept.id]
    with pytest.raises(errors.EventNotFoundError):
        await service.delete_event("s1", gone.id)


async def test_finalize_only_moves_running_to_terminal() -> None:
    service = DjangoSessionService()
    await service.create_session("app", session_id="s1")
    await service.begin_turn("s1", Turn(id="t1", session_id="s1", started_at=T0))
    failure = TurnFailure(code="provider_error", stage="provider", message="rate limited")
    done = await service.finalize_turn(
        "t1", TurnOutcome(status=TurnStatus.FAILED, reason=TurnReason.AGENT_ERROR, failure=failure)
    )
    assert done.status is TurnStatus.FAILED and done.failure == failure
    assert done.finished_at is not None
    with pytest.raises(errors.TurnStateConflictError) as caught:
        await service.finalize_turn("t1", TurnOutcome(status=TurnStatus.COMPLETED))
    assert caught.value.status == "failed"
    with pytest.raises(errors.TurnNotFoundError):
        await service.finalize_turn("nope", TurnOutcome(status=TurnStatus.COMPLETED))


async def test_begin_turn_rejects_bad_turns() -> None:
    service = DjangoSessionService()
    await service.create_session("app", session_id="s1")
    await service.begin_turn("s1", Turn(id="t1", session_id="s1", started_at=T0))
    for bad in (
        Turn(id="", session_id="s1", started_at=T0),
        Turn(id="t2", session_id="other", started_at=T0),
        Turn(id="t3", session_id="s1", status=TurnStatus.COMPLETED, started_at=T0),
        Turn(id="t1", session_id="s1", started_at=T0),
    ):
        with pytest.raises(errors.InvalidTurnError):
            await service.begin_turn("s1", bad)


async def test_concurrent_finalisers_exactly_one_wins() -> None:
    service = DjangoSessionService()
    await service.create_session("app", session_id="s1")
    await service.begin_turn("s1", Turn(id="t1", session_id="s1", started_at=T0))
    outcomes = [
        TurnOutcome(status=TurnStatus.COMPLETED),
        TurnOutcome(status=TurnStatus.INTERRUPTED, reason=TurnReason.CANCELED),
    ] * 4
    results = await asyncio.gather(
        *(service.finalize_turn("t1", o) for o in outcomes), return_exceptions=True
    )
    assert sum(isinstance(r, Turn) for r in results) == 1
    assert all(
        isinstance(r, errors.TurnStateConflictError) for r in results if not isinstance(r, Turn)
    )


async def test_turns_listed_in_timeline_order_and_running_ones_interrupted() -> None:
    service = DjangoSessionService()
    await service.create_session("app", session_id="s1")
    later = T0.replace(minute=5)
    await service.begin_turn("s1", Turn(id="b", session_id="s1", started_at=later))
    await service.begin_turn("s1", Turn(id="a2", session_id="s1", started_at=T0))
    await service.begin_turn("s1", Turn(id="a1", session_id="s1", started_at=T0))
    assert [t.id for t in await service.list_turns("s1")] == ["a1", "a2", "b"]
    interrupted = await service.interrupt_running_turns("s1", TurnReason.ABANDONED)
    assert {t.id for t in interrupted} == {"a1", "a2", "b"}
    assert all(t.reason is TurnReason.ABANDONED for t in await service.list_turns("s1"))


async def test_run_lock_serialises_one_session_and_a_cancelled_waiter_leaves() -> None:
    service = DjangoSessionService()
    order: list[str] = []

    async def hold(name: str, seconds: float) -> None:
        async with service.run_lock("app", "u", "s1"):
            order.append(f"{name}+")
            await asyncio.sleep(seconds)
            order.append(f"{name}-")

    first = asyncio.create_task(hold("a", 0.2))
    await asyncio.sleep(0.05)
    waiter = asyncio.create_task(hold("b", 0))
    await asyncio.sleep(0.05)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await asyncio.gather(first, hold("c", 0))
    assert order == ["a+", "a-", "c+", "c-"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs DATABASE_URL=postgres://...")
async def test_advisory_lock_released_when_holder_connection_dies() -> None:
    import psycopg

    from sessions_app.store import advisory_lock_key, postgres_conninfo

    key = advisory_lock_key("app", "u", "s1")
    holder = await psycopg.AsyncConnection.connect(postgres_conninfo(), autocommit=True)
    await holder.execute("SELECT pg_advisory_lock(%s)", (key,))
    service = DjangoSessionService()
    acquired = asyncio.Event()

    async def next_run() -> None:
        async with service.run_lock("app", "u", "s1"):
            acquired.set()

    waiting = asyncio.create_task(next_run())
    await asyncio.sleep(0.2)
    assert not acquired.is_set()
    await holder.close()  # the "crashed" holder's connection goes away
    await asyncio.wait_for(waiting, 5)
    assert acquired.is_set()


async def test_run_lock_is_shared_by_every_service_instance_of_the_process() -> None:
    first, second = DjangoSessionService(), DjangoSessionService()
    order: list[str] = []

    async def hold(service: DjangoSessionService, name: str, seconds: float) -> None:
        async with service.run_lock("app", "u", "s-shared"):
            order.append(f"{name}+")
            await asyncio.sleep(seconds)
            order.append(f"{name}-")

    await asyncio.gather(hold(first, "a", 0.1), hold(second, "b", 0))
    assert order in (["a+", "a-", "b+", "b-"], ["b+", "b-", "a+", "a-"])


def test_run_lock_serialises_runs_in_different_event_loops() -> None:
    import threading

    order: list[str] = []

    def run_in_own_loop(name: str, seconds: float) -> None:
        async def hold() -> None:
            async with DjangoSessionService().run_lock("app", "u", "s-loops"):
                order.append(f"{name}+")
                await asyncio.sleep(seconds)
                order.append(f"{name}-")

        asyncio.run(hold())

    threads = [threading.Thread(target=run_in_own_loop, args=(n, 0.05)) for n in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [entry[1] for entry in order] == ["+", "-"] * 3
