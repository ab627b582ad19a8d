"""Session service and turn store contracts (docs/runtime.md §2), against every registered store."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agentops.runtime import (
    Content,
    Event,
    EventNotFoundError,
    InvalidEventError,
    InvalidOutcomeError,
    InvalidTurnError,
    Role,
    Turn,
    TurnFailure,
    TurnNotFoundError,
    TurnOutcome,
    TurnReason,
    TurnStateConflictError,
    TurnStatus,
    TurnStore,
)

from .conftest import StoreHarness
from .helpers import T0


async def test_append_assigns_growing_ids_timestamps_and_merges_state(store: StoreHarness) -> None:
    service = store.service
    session = await service.create_session("app", "u", state={"a": 1})
    assert await service.get_session("nope") is None
    first = await service.append_event(
        Event(
            session_id=session.id, content=Content(role=Role.USER, text="x"), state_delta={"b": 2}
        )
    )
    second = await service.append_event(
        Event(
            session_id=session.id, content=Content(role=Role.USER, text="y"), state_delta={"a": 3}
        )
    )
    assert 0 < first.id < second.id
    assert first.created_at is not None and first.created_at.utcoffset() == timedelta(0)
    reloaded = await service.get_session(session.id)
    assert reloaded is not None and reloaded.state == {"a": 3, "b": 2}
    with pytest.raises(InvalidEventError):
        await service.append_event(
            Event(session_id=session.id, partial=True, content=Content(role=Role.ASSISTANT))
        )


async def test_soft_deleted_events_are_not_listed(store: StoreHarness) -> None:
    service = store.service
    session = await service.create_session("app", "u")
    kept = await service.append_event(Event(session_id=session.id, content=Content(role=Role.USER)))
    gone = await service.append_event(Event(session_id=session.id, content=Content(role=Role.USER)))
    await service.delete_event(session.id, gone.id)
    assert [e.id for e in await service.list_events(session.id)] == [kept.id]
    with pytest.raises(EventNotFoundError):
        await service.delete_event(session.id, gone.id)


@pytest.mark.turn_store
async def test_begin_rejects_bad_turns(durable_store: StoreHarness) -> None:
    ts = durable_store.service
    assert isinstance(ts, TurnStore)  # the durable kinds are turn stores
    session = await ts.create_session("app", "u")
    ok = Turn(id="t1", session_id=session.id, started_at=T0)
    await ts.begin_turn(session.id, ok)
    bad = [
        ok.model_copy(update={"id": ""}),
        ok.model_copy(update={"id": "t2", "session_id": "other"}),
        ok.model_copy(update={"id": "t3", "status": TurnStatus.COMPLETED}),
        ok,
    ]
    for turn in bad:
        with pytest.raises(InvalidTurnError):
            await ts.begin_turn(session.id, turn)


@pytest.mark.turn_store
async def test_finalize_only_running_to_terminal(durable_store: StoreHarness) -> None:
    ts = durable_store.service
    assert isinstance(ts, TurnStore)  # the durable kinds are turn stores
    session = await ts.create_session("app", "u")
    await ts.begin_turn(session.id, Turn(id="t1", session_id=session.id, started_at=T0))
    with pytest.raises(InvalidOutcomeError):
        await ts.finalize_turn("t1", TurnOutcome(status=TurnStatus.FAILED))
    failure = TurnFailure(code="agent_error", stage="agent")
    done = await ts.finalize_turn(
        "t1", TurnOutcome(status=TurnStatus.FAILED, reason=TurnReason.AGENT_ERROR, failure=failure)
    )
    assert done.status is TurnStatus.FAILED and done.finished_at is not None
    assert done.failure == failure
    with pytest.raises(TurnStateConflictError) as conflict:
        await ts.finalize_turn("t1", TurnOutcome(status=TurnStatus.COMPLETED))
    assert (conflict.value.turn_id, conflict.value.status) == ("t1", "failed")
    with pytest.raises(TurnNotFoundError) as missing:
        await ts.finalize_turn("nope", TurnOutcome(status=TurnStatus.COMPLETED))
    assert missing.value.turn_id == "nope"
    assert await ts.get_turn("nope") is None


@pytest.mark.turn_store
async def test_list_turns_by_start_then_id_and_interrupt_running(
    durable_store: StoreHarness,
) -> None:
    ts = durable_store.service
    assert isinstance(ts, TurnStore)  # the durable kinds are turn stores
    session = await ts.create_session("app", "u")
    for turn_id, minute in (("b", 0), ("a", 0), ("c", -1)):
        await ts.begin_turn(
            session.id,
            Turn(id=turn_id, session_id=session.id, started_at=T0 + timedelta(minutes=minute)),
        )
    await ts.finalize_turn("a", TurnOutcome(status=TurnStatus.COMPLETED))
    assert [t.id for t in await ts.list_turns(session.id)] == ["c", "a", "b"]
    changed = await ts.interrupt_running_turns(session.id, TurnReason.ABANDONED)
    assert sorted(t.id for t in changed) == ["b", "c"]
    statuses = {t.id: (t.status, t.reason) for t in await ts.list_turns(session.id)}
    assert statuses["a"] == (TurnStatus.COMPLETED, TurnReason.NONE)
    assert statuses["b"] == (TurnStatus.INTERRUPTED, TurnReason.ABANDONED)
