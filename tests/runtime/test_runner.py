"""Runner.run (docs/runtime.md §3): the runner acceptance cases of docs/runtime.md §8.

Tests taking `store` run against every registered store kind; `durable_store` tests need
a turn store (marked `turn_store`); `legacy_store` tests need a store without one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import pytest

from agentops.runtime import (
    Content,
    ContentPart,
    Event,
    FailureStage,
    Role,
    Runner,
    SessionNotFoundError,
    ToolExecutionUnknownError,
    Turn,
    TurnFailure,
    TurnReason,
    TurnStatus,
    cleanup_errors,
)
from agentops.runtime.model import ContentPartType
from agentops.runtime.projection import ProjectionInput

from .conftest import StoreHarness
from .helpers import T0, ScriptedAgent, assistant, call, drain, result, roles, texts

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


class ProviderError(Exception):
    """A provider error that knows its safe failure."""

    def turn_failure(self) -> TurnFailure:
        return TurnFailure(code="provider_rate_limited", message="The provider rate-limited us.")


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait until `condition()` holds (polling), so tests do not depend on store speed."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


async def new_session(harness: StoreHarness) -> str:
    session = await harness.service.create_session("app", "user-1")
    return session.id


async def stored(harness: StoreHarness, session_id: str) -> list[Event]:
    return await harness.service.list_events(session_id)


async def only_turn(harness: StoreHarness, session_id: str, index: int = -1) -> Turn:
    turns: list[Turn] = await harness.service.list_turns(session_id)  # type: ignore[attr-defined]
    return turns[index]


async def test_history_and_user_message_reach_agent(store: StoreHarness) -> None:
    sid = await new_session(store)
    agent = ScriptedAgent([assistant("hello")])
    runner = Runner(agent, store.service)
    await drain(runner, sid, "first")
    await drain(runner, sid, "second")
    assert [len(c) for c in agent.contexts] == [1, 3]
    assert texts(agent.contexts[1]) == ["first", "hello", "second"]
    assert roles(agent.contexts[1]) == ["user", "assistant", "user"]


async def test_several_agent_messages_stored_with_ids_and_timestamps(store: StoreHarness) -> None:
    sid = await new_session(store)
    runner = Runner(ScriptedAgent([assistant("a"), assistant("b"), assistant("c")]), store.service)
    yielded, error = await drain(runner, sid)
    assert error is None
    assert [e.id > 0 for e in yielded] == [True] * 3
    assert all(e.created_at is not None and e.updated_at is not None for e in yielded)
    events = await stored(store, sid)
    assert texts(events) == ["hi", "a", "b", "c"]
    assert events[0].author == "user" and len({e.turn_id for e in events}) == 1
    assert [e.id for e in events[1:]] == [e.id for e in yielded]


@pytest.mark.turn_store
async def test_agent_error_fails_turn_with_generic_failure(durable_store: StoreHarness) -> None:
    sid = await new_session(durable_store)
    runner = Runner(ScriptedAgent([RuntimeError("secret token abc123")]), durable_store.service)
    _, error = await drain(runner, sid)
    assert isinstance(error, RuntimeError)  # the original cause, not a wrapper
    assert len(await stored(durable_store, sid)) == 1
    turn = await only_turn(durable_store, sid)
    assert (turn.status, turn.reason) == (TurnStatus.FAILED, TurnReason.AGENT_ERROR)
    assert turn.failure == TurnFailure(code="agent_error", message="", stage="agent")


@pytest.mark.turn_store
async def test_provider_error_carries_its_own_safe_message(durable_store: StoreHarness) -> None:
    sid = await new_session(durable_store)
    runner = Runner(ScriptedAgent([ProviderError("raw upstream body")]), durable_store.service)
    _, error = await drain(runner, sid)
    assert isinstance(error, ProviderError)
    turn = await only_turn(durable_store, sid)
    assert turn.failure == TurnFailure(
        code="provider_rate_limited", message="The provider rate-limited us.", stage="agent"
    )


@pytest.mark.turn_store
async def test_custom_classifier_used(durable_store: StoreHarness) -> None:
    sid = await new_session(durable_store)
    seen: list[tuple[type, FailureStage]] = []

    def classifier(exc: BaseException, stage: FailureStage) -> TurnFailure | None:
        seen.append((type(exc), stage))
        return TurnFailure(code="custom.code", message="custom", stage="provider")

    runner = Runner(ScriptedAgent([KeyError("k")]), durable_store.service, classifier=classifier)
    await drain(runner, sid)
    assert seen == [(KeyError, FailureStage.AGENT)]
    turn = await only_turn(durable_store, sid)
    assert turn.failure == TurnFailure(code="custom.code", message="custom", stage="provider")


@pytest.mark.turn_store
async def test_classifier_none_restores_default_and_may_return_no_failure(
    durable_store: StoreHarness,
) -> None:
    sid = await new_session(durable_store)
    runner = Runner(ScriptedAgent([KeyError("k")]), durable_store.service, classifier=None)
    await drain(runner, sid)
    assert (await only_turn(durable_store, sid)).failure is not None
    runner = Runner(
        ScriptedAgent([KeyError("k")]), durable_store.service, classifier=lambda e, s: None
    )
    await drain(runner, sid)
    turn = await only_turn(durable_store, sid)
    assert (turn.status, turn.failure) == (TurnStatus.FAILED, None)


@pytest.mark.turn_store
async def test_invalid_failure_makes_finalize_fail_and_is_attached(
    durable_store: StoreHarness,
) -> None:
    sid = await new_session(durable_store)
    runner = Runner(
        ScriptedAgent([KeyError("k")]),
        durable_store.service,
        classifier=lambda e, s: TurnFailure(code="Not A Code!", stage="agent"),
    )
    _, error = await drain(runner, sid)
    assert isinstance(error, KeyError)
    assert any("InvalidOutcomeError" in note for note in error.__notes__)
    assert [type(e).__name__ for e in cleanup_errors(error)] == ["InvalidOutcomeError"]
    assert (await only_turn(durable_store, sid)).status is TurnStatus.RUNNING


async def test_legacy_store_rolls_back_failed_turn(legacy_store: StoreHarness) -> None:
    sid = await new_session(legacy_store)
    runner = Runner(ScriptedAgent([assistant("a"), ValueError("x")]), legacy_store.service)
    yielded, error = await drain(runner, sid)
    assert isinstance(error, ValueError) and len(yielded) == 1
    assert await stored(legacy_store, sid) == []


async def test_legacy_rollback_collects_every_delete_error(legacy_store: StoreHarness) -> None:
    sid = await new_session(legacy_store)
    service = legacy_store.service
    deleted: list[int] = []

    async def failing_delete(session_id: str, event_id: int) -> None:
        deleted.append(event_id)
        raise OSError(f"cannot delete {event_id}")

    service.delete_event = failing_delete  # type: ignore[method-assign]
    runner = Runner(ScriptedAgent([assistant("a"), ValueError("x")]), service)
    _, error = await drain(runner, sid)
    assert isinstance(error, ValueError)
    assert deleted == sorted(deleted, reverse=True) and len(deleted) == 2  # newest first
    [group] = cleanup_errors(error)
    assert isinstance(group, ExceptionGroup) and len(group.exceptions) == 2


@pytest.mark.turn_store
async def test_retry_after_failed_turn_gets_notice(durable_store: StoreHarness) -> None:
    sid = await new_session(durable_store)
    await drain(
        Runner(ScriptedAgent([assistant("half"), ProviderError()]), durable_store.service),
        sid,
        "q1",
    )
    retry = ScriptedAgent([assistant("answer")])
    _, error = await drain(Runner(retry, durable_store.service), sid, "q2")
    assert error is None
    [context] = retry.contexts
    assert roles(context) == ["user", "assistant", "user", "user"]
    notice = context[2]
    assert (notice.id, notice.author) == (0, "runner")
    assert "provider_rate_limited" in notice.content.text
    assert "The provider rate-limited us." not in notice.content.text
    events = await stored(durable_store, sid)
    assert len(events) == 4 and all(e.author != "runner" for e in events)


@pytest.mark.turn_store
async def test_abandoned_running_turn_recovered_when_lock_held(locking_store: StoreHarness) -> None:
    sid = await new_session(locking_store)
    service = locking_store.service
    crashed = Turn(id="turn_crashed", session_id=sid, started_at=T0)
    await service.begin_turn(sid, crashed)  # type: ignore[attr-defined]
    await service.append_event(
        Event(session_id=sid, turn_id=crashed.id, content=Content(role=Role.USER, text="lost"))
    )
    agent = ScriptedAgent([assistant("ok")])
    await drain(Runner(agent, service), sid)
    old = await service.get_turn(crashed.id)  # type: ignore[attr-defined]
    assert (old.status, old.reason) == (TurnStatus.INTERRUPTED, TurnReason.ABANDONED)
    [context] = agent.contexts
    assert [e.author for e in context] == ["", "runner", "user"]
    assert "abandoned" in context[1].content.text


@pytest.mark.turn_store
async def test_events_yielded_before_agent_error_are_kept(durable_store: StoreHarness) -> None:
    sid = await new_session(durable_store)
    agent = ScriptedAgent([assistant("a"), assistant("b"), ValueError("x")])
    yielded, error = await drain(Runner(agent, durable_store.service), sid)
    assert isinstance(error, ValueError)
    assert texts(await stored(durable_store, sid)) == ["hi", "a", "b"]
    assert [e.id for e in yielded] == [e.id for e in (await stored(durable_store, sid))[1:]]


@pytest.mark.turn_store
async def test_caller_break_after_first_event_interrupts_turn(durable_store: StoreHarness) -> None:
    sid = await new_session(durable_store)
    agent = ScriptedAgent([assistant("a"), assistant("b"), assistant("c")])
    async with contextlib.aclosing(Runner(agent, durable_store.service).run(sid, "hi")) as run:
        async for _event in run:
            break
    assert texts(await stored(durable_store, sid)) == ["hi", "a"]
    turn = await only_turn(durable_store, sid)
    assert (turn.status, turn.reason) == (TurnStatus.INTERRUPTED, TurnReason.CONSUMER_STOPPED)
    assert agent.closed


async def test_caller_break_in_legacy_store_rolls_back(legacy_store: StoreHarness) -> None:
    sid = await new_session(legacy_store)
    agent = ScriptedAgent([assistant("a"), assistant("b")])
    async with contextlib.aclosing(Runner(agent, legacy_store.service).run(sid, "hi")) as run:
        async for _event in run:
            break
    assert await stored(legacy_store, sid) == []


async def test_no_agent_messages_still_stores_user_event(store: StoreHarness) -> None:
    sid = await new_session(store)
    yielded, error = await drain(Runner(ScriptedAgent([]), store.service), sid, "alone")
    assert (yielded, error) == ([], None)
    assert texts(await stored(store, sid)) == ["alone"]


async def test_partial_events_forwarded_with_ids_and_never_stored(store: StoreHarness) -> None:
    sid = await new_session(store)
    agent = ScriptedAgent(
        [assistant("He", partial=True), assistant("Hello", partial=True), assistant("Hello!")]
    )
    yielded, _ = await drain(Runner(agent, store.service), sid)
    assert [(e.partial, e.id == 0) for e in yielded] == [(True, True), (True, True), (False, False)]
    assert all(e.session_id == sid and e.turn_id == yielded[-1].turn_id for e in yielded)
    assert texts(await stored(store, sid)) == ["hi", "Hello!"]


async def test_archived_history_excluded(store: StoreHarness) -> None:
    sid = await new_session(store)
    runner = Runner(ScriptedAgent([assistant("r")]), store.service)
    await drain(runner, sid, "old")
    await store.archive(sid, [e.id for e in await stored(store, sid)])
    agent = ScriptedAgent([])
    await drain(Runner(agent, store.service), sid, "new")
    assert texts(agent.contexts[0]) == ["new"]


async def test_missing_session_raises_session_not_found(store: StoreHarness) -> None:
    agent = ScriptedAgent([])
    _, error = await drain(Runner(agent, store.service), "no-such-session")
    assert isinstance(error, SessionNotFoundError) and error.session_id == "no-such-session"
    assert agent.calls == 0


@pytest.mark.turn_store
async def test_two_runs_of_one_session_serialise(locking_store: StoreHarness) -> None:
    sid = await new_session(locking_store)
    release = asyncio.Event()
    order: list[str] = []

    async def slow(context: list[Event]) -> AsyncIterator[Event]:
        order.append(f"start {context[-1].content.text}")
        if context[-1].content.text == "one":
            await release.wait()
        yield assistant(f"done {context[-1].content.text}")
        order.append(f"end {context[-1].content.text}")

    runner = Runner(slow, locking_store.service)
    first = asyncio.create_task(drain(runner, sid, "one"))
    await until(lambda: order == ["start one"])  # the first run holds the lock
    second = asyncio.create_task(drain(runner, sid, "two"))
    # Give the second run ample time to (wrongly) get past the lock; a database store's
    # writes take milliseconds each.
    await asyncio.sleep(0.2)
    assert order == ["start one"]
    release.set()
    await asyncio.gather(first, second)
    assert order == ["start one", "end one", "start two", "end two"]
    assert texts(await stored(locking_store, sid)) == ["one", "done one", "two", "done two"]


@pytest.mark.turn_store
async def test_cancelled_lock_waiter_creates_no_turn(locking_store: StoreHarness) -> None:
    sid = await new_session(locking_store)
    release = asyncio.Event()

    started = asyncio.Event()

    async def blocking(context: list[Event]) -> AsyncIterator[Event]:
        started.set()
        await release.wait()
        yield assistant("done")

    runner = Runner(blocking, locking_store.service)
    first = asyncio.create_task(drain(runner, sid, "one"))
    await asyncio.wait_for(started.wait(), 10)  # the first run holds the lock
    waiter = asyncio.create_task(drain(runner, sid, "two"))
    await asyncio.sleep(0.2)  # the waiter is now waiting for the lock
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    release.set()
    await first
    turns = await locking_store.service.list_turns(sid)  # type: ignore[attr-defined]
    assert [t.status for t in turns] == [TurnStatus.COMPLETED]


async def test_multimodal_input_stored(store: StoreHarness) -> None:
    sid = await new_session(store)
    content = Content(
        role=Role.ASSISTANT,  # forced to user by the runner
        parts=(
            ContentPart(type=ContentPartType.TEXT, text="what is this?"),
            ContentPart(
                type=ContentPartType.IMAGE_BASE64,
                image_base64="iVBORw0KGgo=",
                mime_type="image/png",
            ),
        ),
    )
    await drain(Runner(ScriptedAgent([]), store.service), sid, content)
    [event] = await stored(store, sid)
    assert event.content.role == "user" and event.author == "user"
    assert event.content.parts == content.parts


@pytest.mark.turn_store
async def test_dangling_call_refuses_next_run(durable_store: StoreHarness) -> None:
    sid = await new_session(durable_store)
    calls = [call("c1"), call("c2")]
    first = ScriptedAgent([assistant(calls=calls), result("c1")])
    await drain(Runner(first, durable_store.service), sid)
    before = await stored(durable_store, sid)
    assert (await only_turn(durable_store, sid)).status is TurnStatus.COMPLETED

    second = ScriptedAgent([assistant("never")])
    yielded, error = await drain(Runner(second, durable_store.service), sid, "again")
    assert yielded == [] and second.calls == 0
    assert isinstance(error, ToolExecutionUnknownError)
    assert (error.session_id, error.turn_id, error.event_id) == (
        sid,
        before[1].turn_id,
        before[1].id,
    )
    assert error.call_ids == ["c2"]
    assert await stored(durable_store, sid) == before
    refused = await only_turn(durable_store, sid)
    assert (refused.status, refused.reason) == (TurnStatus.FAILED, TurnReason.AGENT_ERROR)
    assert refused.failure is not None
    assert (refused.failure.code, refused.failure.stage) == ("tool_execution_unknown", "tool")


async def test_dangling_call_refused_before_anything_is_stored(store: StoreHarness) -> None:
    sid = await new_session(store)
    await store.service.append_event(assistant(calls=[call("c1")], session=sid))
    agent = ScriptedAgent([])
    _, error = await drain(Runner(agent, store.service), sid)
    assert isinstance(error, ToolExecutionUnknownError) and agent.calls == 0
    assert len(await stored(store, sid)) == 1


@pytest.mark.turn_store
async def test_caller_stops_after_tool_call_next_run_gets_notice(
    durable_store: StoreHarness,
) -> None:
    sid = await new_session(durable_store)
    first = ScriptedAgent([assistant(calls=[call("c1")]), result("c1")])
    async with contextlib.aclosing(Runner(first, durable_store.service).run(sid, "one")) as run:
        async for _event in run:
            break
    second = ScriptedAgent([])
    _, error = await drain(Runner(second, durable_store.service), sid, "two")
    assert error is None
    [context] = second.contexts
    assert [e.author for e in context] == ["user", "runner", "user"]
    assert texts(context)[0] == "one" and texts(context)[2] == "two"
    assert "consumer_stopped" in context[1].content.text


@pytest.mark.turn_store
async def test_durable_results_present_agent_gets_all_five_messages(
    durable_store: StoreHarness,
) -> None:
    sid = await new_session(durable_store)
    first = ScriptedAgent([assistant(calls=[call("c1")]), result("c1"), assistant("the answer")])
    await drain(Runner(first, durable_store.service), sid)
    second = ScriptedAgent([])
    await drain(Runner(second, durable_store.service), sid, "thanks")
    assert roles(second.contexts[0]) == ["user", "assistant", "tool", "assistant", "user"]


@pytest.mark.turn_store
async def test_timeout_interrupts_turn_with_deadline_exceeded(durable_store: StoreHarness) -> None:
    sid = await new_session(durable_store)

    async def sleepy(context: list[Event]) -> AsyncIterator[Event]:
        yield assistant("started")
        await asyncio.sleep(10)
        yield assistant("never")

    # The deadline also covers taking the run lock and the first writes: on PostgreSQL
    # under load that is tens of milliseconds, so leave room (the agent sleeps 10 s).
    yielded, error = await drain(Runner(sleepy, durable_store.service), sid, timeout=1.0)
    assert isinstance(error, TimeoutError) and len(yielded) == 1
    turn = await only_turn(durable_store, sid)
    assert (turn.status, turn.reason, turn.failure) == (
        TurnStatus.INTERRUPTED, TurnReason.DEADLINE_EXCEEDED, None,
    )  # fmt: skip
    assert len(await stored(durable_store, sid)) == 2


@pytest.mark.turn_store
async def test_cancellation_interrupts_turn_as_canceled(durable_store: StoreHarness) -> None:
    sid = await new_session(durable_store)
    started = asyncio.Event()

    async def hanging(context: list[Event]) -> AsyncIterator[Event]:
        yield assistant("started")
        started.set()
        await asyncio.sleep(10)
        yield assistant("never")

    task = asyncio.create_task(drain(Runner(hanging, durable_store.service), sid))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    turn = await only_turn(durable_store, sid)
    assert (turn.status, turn.reason) == (TurnStatus.INTERRUPTED, TurnReason.CANCELED)
    assert len(await stored(durable_store, sid)) == 2


async def test_cancellation_in_legacy_store_still_rolls_back(legacy_store: StoreHarness) -> None:
    sid = await new_session(legacy_store)
    started = asyncio.Event()

    async def hanging(context: list[Event]) -> AsyncIterator[Event]:
        yield assistant("started")
        started.set()
        await asyncio.sleep(10)
        yield assistant("never")

    task = asyncio.create_task(drain(Runner(hanging, legacy_store.service), sid))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await stored(legacy_store, sid) == []


@pytest.mark.turn_store
async def test_store_failure_fails_turn_at_persistence_stage(durable_store: StoreHarness) -> None:
    sid = await new_session(durable_store)
    service = durable_store.service
    original = service.append_event
    count = 0

    async def flaky_append(event: Event) -> Event:
        nonlocal count
        count += 1
        if count == 2:
            raise OSError("disk full")
        return await original(event)

    service.append_event = flaky_append  # type: ignore[method-assign]
    _, error = await drain(Runner(ScriptedAgent([assistant("a")]), service), sid)
    assert isinstance(error, OSError)
    turn = await only_turn(durable_store, sid)
    assert turn.failure == TurnFailure(code="persistence_error", message="", stage="persistence")


async def test_custom_projector_output_is_validated(store: StoreHarness) -> None:
    sid = await new_session(store)

    def projector(projection_input: ProjectionInput) -> list[Event]:
        return [assistant(calls=[call("made-up")], session=sid)]

    agent = ScriptedAgent([])
    _, error = await drain(Runner(agent, store.service, projector=projector), sid)
    assert isinstance(error, ToolExecutionUnknownError) and agent.calls == 0
    assert await stored(store, sid) == []


async def test_agent_function_and_agent_yielding_an_exception(store: StoreHarness) -> None:
    sid = await new_session(store)

    async def agent(context: list[Event]) -> AsyncIterator[Event | BaseException]:
        yield assistant("a")
        yield LookupError("yielded, not raised")

    _, error = await drain(Runner(agent, store.service, projector=None), sid)
    assert isinstance(error, LookupError)


async def test_agent_events_are_stamped_and_state_delta_merged(store: StoreHarness) -> None:
    sid = await new_session(store)
    event = assistant("x", session="someone-else", turn="forged").model_copy(
        update={"state_delta": {"mood": "good"}}
    )
    yielded, _ = await drain(Runner(ScriptedAgent([event]), store.service), sid)
    assert yielded[0].session_id == sid and yielded[0].turn_id != "forged"
    session = await store.service.get_session(sid)
    assert session is not None and session.state == {"mood": "good"}


@pytest.mark.turn_store
async def test_error_thrown_in_by_consumer_fails_turn_at_consumer_stage(
    durable_store: StoreHarness,
) -> None:
    sid = await new_session(durable_store)
    agent = ScriptedAgent([assistant("a"), assistant("b")])
    run = Runner(agent, durable_store.service).run(sid, "hi")
    await anext(run)
    with pytest.raises(ConnectionResetError):
        await run.athrow(ConnectionResetError("socket gone"))
    turn = await only_turn(durable_store, sid)
    assert turn.failure == TurnFailure(code="consumer_error", message="", stage="consumer")
    assert agent.closed


async def test_object_with_synchronous_project_method_is_accepted(store: StoreHarness) -> None:
    sid = await new_session(store)

    class KeepNothing:
        def project(self, projection_input: ProjectionInput) -> list[Event]:
            return []

    await drain(Runner(ScriptedAgent([]), store.service), sid, "one")
    agent = ScriptedAgent([])
    await drain(Runner(agent, store.service, projector=KeepNothing()), sid, "two")  # type: ignore[arg-type]
    assert texts(agent.contexts[0]) == ["two"]
