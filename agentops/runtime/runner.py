"""The runner: one user turn against a stateless agent and a session service, or a turn that
continues the session without a new user message (docs/runtime.md §3).

An *agent* is either

- a callable ``agent(context: list[Event]) -> AsyncIterator[Event]`` (typically an
  ``async def`` generator function), or
- an object with a method ``run(context: list[Event]) -> AsyncIterator[Event]``.

`context` is the projected history (docs/runtime.md §4) followed by the stored user event (a
continuation, `Runner.resume`: the projected history alone, ending with tool results); the
agent owns that list. It yields events: complete ones (``partial=False``) are stored and
forwarded, partial ones (streaming fragments) are forwarded only. The runner stamps the
session and turn ids on everything the agent yields. An agent fails by raising (or by
yielding an exception instance, which is treated the same way). To be safe to store and
show, an agent error should provide its own failure via ``turn_failure()`` (docs/runtime.md §6).

Consumers should close the generator deterministically when they stop early, e.g.::

    async with contextlib.aclosing(runner.run(session_id, "hi")) as events:
        async for event in events:
            ...

(A bare ``break`` also works, but then the turn is finalised only when the garbage
collector closes the generator.)
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import math
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

from agentops.runtime.cleanup import CleanupScope, attach_errors, cleanup_errors, outcome_for
from agentops.runtime.errors import SessionNotFoundError
from agentops.runtime.failures import FailureClassifier, default_failure_classifier
from agentops.runtime.ids import new_id
from agentops.runtime.model import Content, Event, Role, utc_now
from agentops.runtime.projection import ProjectionInput, Projector, as_projector
from agentops.runtime.protocol import validate_continuation, validate_tool_protocol
from agentops.runtime.session import (
    FailureStage,
    RunLock,
    Session,
    SessionService,
    Turn,
    TurnOutcome,
    TurnReason,
    TurnStatus,
    TurnStore,
)

__all__ = ["Agent", "AgentLike", "Runner", "cleanup_errors"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Agent(Protocol):
    """An object whose ``run(context)`` yields the turn's events (see module docstring)."""

    def run(self, context: list[Event]) -> AsyncIterator[Event | BaseException]:
        """Yield events for `context` (projected history + the new user event; for a
        continuation, `Runner.resume`, the projected history ending with tool results)."""
        ...


AgentFunc = Callable[[list[Event]], AsyncIterator[Event | BaseException]]
#: What `Runner` accepts as an agent: an `Agent` object or an agent function.
AgentLike = Agent | AgentFunc


@dataclass
class _Run:
    session: Session
    turn_id: str
    run_id: str = field(default_factory=lambda: new_id("run"))
    stored_ids: list[int] = field(default_factory=list)
    #: Where an error now would come from (docs/runtime.md §3 "Failing a turn").
    stage: FailureStage = FailureStage.PERSISTENCE


class Runner:
    """Runs user turns of `agent` against `session_service` (docs/runtime.md §3).

    - `projector`: a `Projector`, a function ``(ProjectionInput) -> events`` (sync or
      async), or None for the default projector (docs/runtime.md §4).
    - `classifier`: ``(exception, stage) -> TurnFailure | None``, or None for
      `default_failure_classifier` (docs/runtime.md §6).
    - `cleanup_timeout`: seconds all the clean-up writes of one turn (finalize, or every
      rollback delete) may take together; the step-3 interrupt and closing the agent get
      the same bound each. Clean-up runs to its end even when the run is cancelled, then
      the cancellation is raised (docs/runtime.md §3 "Clean-up writes").

    Capabilities of the service are detected once: a `TurnStore` gives durable turns, a
    `RunLock` serialises runs of one session; without a turn store failed turns are rolled
    back (legacy semantics).
    """

    def __init__(
        self,
        agent: AgentLike,
        session_service: SessionService,
        *,
        projector: Projector | Callable[[ProjectionInput], Any] | None = None,
        classifier: FailureClassifier | None = None,
        cleanup_timeout: float = 5.0,
    ) -> None:
        run = getattr(agent, "run", None)
        if callable(run):
            self._agent_fn = cast(AgentFunc, run)
        elif callable(agent):
            self._agent_fn = agent
        else:
            raise TypeError(f"not an agent: {type(agent).__name__}")
        self.agent = agent
        self.session_service = session_service
        self.projector: Projector = as_projector(projector)
        self.classifier: FailureClassifier = classifier or default_failure_classifier
        self.cleanup_timeout = cleanup_timeout
        self._turn_store = session_service if isinstance(session_service, TurnStore) else None
        self._run_lock = session_service if isinstance(session_service, RunLock) else None
        self._background: set[asyncio.Task[Any]] = set()

    def run(
        self,
        session_id: str,
        user_input: Content | str,
        *,
        timeout: float | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Run one user turn; yield the turn's events as they come (docs/runtime.md §3).

        `user_input`: text or a `Content` (its role is forced to user). `timeout`:
        optional seconds for the whole run; when it passes, `TimeoutError` is raised and
        the turn is recorded interrupted/deadline_exceeded.

        Yields stored copies of complete events (id > 0) and partial events (id 0).
        Raises `SessionNotFoundError`; `ToolExecutionUnknownError` (before the user input
        is stored or the agent called) when history has unanswered tool calls; otherwise
        the original error of the agent or store, with clean-up errors attached
        (`cleanup_errors`, notes). Closing the generator early records the turn
        interrupted/consumer_stopped (no turn store: rolls it back) and never raises.
        """
        return self._turn(session_id, self._user_content(user_input), timeout)

    def resume(
        self, session_id: str, *, timeout: float | None = None
    ) -> AsyncGenerator[Event, None]:
        """Run a turn that continues the session without a new user message
        (docs/runtime.md §3 "Continuing a turn"): the projected history must end with the
        results of its last assistant event's tool calls (for example a person's decision
        on a call awaiting them), and the agent gets that history as its context.

        The steps are those of `run`, except that the facts are read, projected and
        checked before the turn begins, and no user event is stored. Raises
        `SessionNotFoundError`; `ToolExecutionUnknownError` or `NothingToContinueError`
        (before a turn is begun: nothing is stored, the agent is not called); otherwise as
        `run`.
        """
        return self._turn(session_id, None, timeout)

    async def _turn(
        self, session_id: str, content: Content | None, timeout: float | None
    ) -> AsyncGenerator[Event, None]:
        """One turn: a user turn storing `content`, or a continuation when it is None.
        The one generator the caller iterates and closes (`run` and `resume` return it)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        async with AsyncExitStack() as stack:
            session = await self._load_and_lock(session_id, stack)
            store = self._turn_store
            run = _Run(session=session, turn_id=new_id("turn"))
            logger.debug("run %s: turn %s of session %s", run.run_id, run.turn_id, session_id)
            if store is not None and self._run_lock is not None:
                # The lock is ours, so any running turn belongs to a dead process.
                await self._recover_abandoned(store, session_id)
            context: list[Event] | None = None
            if content is None:
                # A continuation reads and checks its context before it begins a turn: one
                # that cannot continue leaves nothing behind.
                context = await self._context(run, deadline)
                validate_continuation(session_id, context)
            if store is not None:
                await self._begin(store, run, deadline)
            agent_iter: AsyncIterator[Event | BaseException] | None = None
            try:
                if context is None:
                    context = await self._context(run, deadline)
                if content is not None:
                    run.stage = FailureStage.PERSISTENCE
                    user_event = await self._bounded(
                        self.session_service.append_event(
                            Event(
                                session_id=session_id,
                                turn_id=run.turn_id,
                                author="user",
                                content=content,
                            )
                        ),
                        deadline,
                    )
                    run.stored_ids.append(user_event.id)
                    context.append(user_event)
                run.stage = FailureStage.AGENT
                agent_iter = await self._start_agent(context)
                while True:
                    run.stage = FailureStage.AGENT
                    try:
                        item = await self._bounded(anext(agent_iter), deadline)
                    except StopAsyncIteration:
                        break
                    if isinstance(item, BaseException):
                        raise item
                    stamped = item.model_copy(
                        update={"session_id": session_id, "turn_id": run.turn_id}
                    )
                    if stamped.partial:
                        run.stage = FailureStage.CONSUMER
                        yield stamped.model_copy(update={"id": 0})
                        continue
                    run.stage = FailureStage.PERSISTENCE
                    stored = await self._bounded(
                        self.session_service.append_event(stamped), deadline
                    )
                    run.stored_ids.append(stored.id)
                    run.stage = FailureStage.CONSUMER
                    yield stored
            except GeneratorExit:
                await self._consumer_stopped(run, agent_iter)
                raise
            except BaseException as cause:
                await self._fail(run, cause, run.stage, agent_iter)
                raise
            await self._finish(run, agent_iter)

    async def _context(self, run: _Run, deadline: float | None) -> list[Event]:
        """docs/runtime.md §3 steps 5-7: read the facts, project them, check the tool
        protocol of the result; `run.stage` says where an error came from."""
        session_id = run.session.id
        run.stage = FailureStage.PERSISTENCE
        events = await self._bounded(self.session_service.list_events(session_id), deadline)
        turns: list[Turn] = []
        if self._turn_store is not None:
            turns = await self._bounded(self._turn_store.list_turns(session_id), deadline)
        run.stage = FailureStage.AGENT
        projected: Any = self.projector.project(ProjectionInput(turns=turns, events=events))
        if inspect.isawaitable(projected):  # tolerate a synchronous project()
            projected = await self._bounded(projected, deadline)
        context = list(projected)
        run.stage = FailureStage.TOOL
        validate_tool_protocol(context)
        return context

    # -- steps -----------------------------------------------------------------------

    @staticmethod
    def _user_content(user_input: Content | str) -> Content:
        if isinstance(user_input, str):
            return Content(role=Role.USER, text=user_input)
        if user_input.role is Role.USER:
            return user_input
        return user_input.model_copy(update={"role": Role.USER})

    async def _load_and_lock(self, session_id: str, stack: AsyncExitStack) -> Session:
        """docs/runtime.md §3 step 2: load; with a lock, lock the key and load again until
        stable."""
        session = await self.session_service.get_session(session_id)
        if session is None:
            raise SessionNotFoundError(session_id)
        if self._run_lock is None:
            return session
        while True:
            key = (session.app_name, session.user_id, session.id)
            inner = AsyncExitStack()
            await inner.enter_async_context(self._run_lock.run_lock(*key))
            try:
                reloaded = await self.session_service.get_session(session_id)
            except BaseException:
                await inner.aclose()
                raise
            if reloaded is None:
                await inner.aclose()
                raise SessionNotFoundError(session_id)
            if (reloaded.app_name, reloaded.user_id, reloaded.id) == key:
                stack.push_async_exit(inner)
                return reloaded
            await inner.aclose()
            session = reloaded

    async def _start_agent(self, context: list[Event]) -> AsyncIterator[Event | BaseException]:
        result: Any = self._agent_fn(context)
        if inspect.isawaitable(result) and not hasattr(result, "__anext__"):
            result = await result
        if not hasattr(result, "__anext__"):
            raise TypeError(f"agent returned {type(result).__name__}, not an async iterator")
        return cast(AsyncIterator[Event | BaseException], result)

    @staticmethod
    async def _bounded(awaitable: Awaitable[T], deadline: float | None) -> T:
        if deadline is None:
            return await awaitable
        async with asyncio.timeout_at(deadline):
            return await awaitable

    def _scope(self) -> CleanupScope:
        return CleanupScope(self.cleanup_timeout, self._background)

    async def _recover_abandoned(self, store: TurnStore, session_id: str) -> None:
        """docs/runtime.md §3 step 3, a clean-up write: bounded by `cleanup_timeout`, not
        stopped by a cancellation (which is raised once it is over)."""
        scope = self._scope()
        try:
            await scope.run(
                functools.partial(store.interrupt_running_turns, session_id, TurnReason.ABANDONED)
            )
        except BaseException as error:
            scope.reraise_cancel(error)
            raise
        scope.reraise_cancel()

    async def _begin(self, store: TurnStore, run: _Run, deadline: float | None) -> None:
        """docs/runtime.md §3 step 4, bounded by the run's deadline. A cancellation that
        arrives meanwhile does not stop the write (the store may have committed it): the
        begun turn is then recorded interrupted/canceled and the cancellation raised."""
        turn = Turn(id=run.turn_id, session_id=run.session.id, started_at=utc_now())
        scope = self._scope()
        try:
            until = math.inf if deadline is None else deadline
            await scope.settle(store.begin_turn(run.session.id, turn), deadline=until)
        except BaseException as error:
            scope.reraise_cancel(error)
            raise
        if scope.cancelled:
            cause = asyncio.CancelledError("cancelled while the turn began")
            await self._fail(run, cause, FailureStage.PERSISTENCE, None)
            raise cause

    async def _close_agent(
        self, agent_iter: AsyncIterator[Any] | None, scope: CleanupScope
    ) -> None:
        """Close the agent's iterator, bounded by `cleanup_timeout` of its own (before the
        writes' deadline starts); errors are logged."""
        aclose = getattr(agent_iter, "aclose", None)
        if aclose is None:
            return
        deadline = asyncio.get_running_loop().time() + self.cleanup_timeout
        try:
            await scope.settle(aclose(), deadline=deadline)
        except Exception:
            logger.warning("closing the agent failed", exc_info=True)

    async def _finish(self, run: _Run, agent_iter: AsyncIterator[Any] | None) -> None:
        """docs/runtime.md §3 step 10: record the turn completed; errors are raised."""
        scope = self._scope()
        await self._close_agent(agent_iter, scope)
        if self._turn_store is not None:
            outcome = TurnOutcome(status=TurnStatus.COMPLETED)
            try:
                await scope.run(
                    functools.partial(self._turn_store.finalize_turn, run.turn_id, outcome)
                )
            except BaseException as error:
                scope.reraise_cancel(error)
                raise
        scope.reraise_cancel()

    async def _consumer_stopped(self, run: _Run, agent_iter: AsyncIterator[Any] | None) -> None:
        """docs/runtime.md §3 step 9: the caller stopped; record it. Errors are only logged;
        a cancellation that arrives meanwhile is raised once the clean-up is over."""
        scope = self._scope()
        await self._close_agent(agent_iter, scope)
        errors: list[BaseException] = []
        if self._turn_store is not None:
            outcome = TurnOutcome(status=TurnStatus.INTERRUPTED, reason=TurnReason.CONSUMER_STOPPED)
            try:
                await scope.run(
                    functools.partial(self._turn_store.finalize_turn, run.turn_id, outcome)
                )
            except Exception as error:
                errors.append(error)
        else:
            errors = await self._rollback(run, scope)
        for problem in errors:
            logger.warning("recording consumer stop of turn %s failed: %r", run.turn_id, problem)
        scope.reraise_cancel()

    async def _fail(
        self,
        run: _Run,
        cause: BaseException,
        stage: FailureStage,
        agent_iter: AsyncIterator[Any] | None,
    ) -> None:
        """Record a failed turn (docs/runtime.md §3 "Failing a turn"); attach clean-up errors
        to `cause`. Raises `asyncio.CancelledError` (from `cause`) when a cancellation arrived
        during the clean-up; otherwise returns and the caller re-raises `cause`."""
        scope = self._scope()
        await self._close_agent(agent_iter, scope)
        if self._turn_store is None:
            attach_errors(
                cause, await self._rollback(run, scope), f"rollback of turn {run.turn_id}"
            )
        else:
            errors: list[BaseException] = []
            outcome = outcome_for(cause, stage, self.classifier, errors)
            try:
                await scope.run(
                    functools.partial(self._turn_store.finalize_turn, run.turn_id, outcome)
                )
            except Exception as error:
                errors.append(error)
            attach_errors(cause, errors, f"finalizing turn {run.turn_id}")
        scope.reraise_cancel(cause)

    async def _rollback(self, run: _Run, scope: CleanupScope) -> list[BaseException]:
        """Delete the turn's stored events newest first, all within the scope's one
        deadline; return every delete error as one exception group (none: [])."""
        errors: list[Exception] = []
        pending = list(reversed(run.stored_ids))
        for done, event_id in enumerate(pending):
            try:
                await scope.run(
                    functools.partial(self.session_service.delete_event, run.session.id, event_id)
                )
            except Exception as error:
                errors.append(error)
            left = len(pending) - done - 1
            if left and scope.expired:
                errors.append(TimeoutError(f"clean-up deadline passed with {left} deletes left"))
                break
        if errors:
            return [ExceptionGroup(f"rollback of turn {run.turn_id} failed", errors)]
        return []
