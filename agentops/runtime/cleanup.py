"""Clean-up of a turn under cancellation and deadlines (docs/runtime.md §3 "Clean-up writes").

- `CleanupScope`: the clean-up of one turn. Its writes share **one** deadline, each runs
  in its own task that a cancellation of the caller does not stop, and a cancellation that
  arrives meanwhile is remembered and re-raised once the clean-up is over
  (`CleanupScope.reraise_cancel`): never swallowed, never half-done.
- `outcome_for`: the outcome recorded for the cause of a failed turn (docs/runtime.md §3
  "Failing a turn"); a `TimeoutError` anywhere in the cause's chain or groups is a deadline.
- `cleanup_errors` / `attach_errors`: clean-up errors carried by the raised cause.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from agentops.runtime.failures import FailureClassifier, iter_exception_chain
from agentops.runtime.session import (
    FailureStage,
    TurnFailure,
    TurnOutcome,
    TurnReason,
    TurnStatus,
)

__all__ = [
    "CleanupScope",
    "attach_errors",
    "cleanup_errors",
    "is_deadline",
    "outcome_for",
]

T = TypeVar("T")

#: Attribute under which clean-up errors are attached to the raised exception.
_CLEANUP_ATTR = "__agentops_cleanup_errors__"

#: Extra seconds the scope waits, past its deadline, for a write that ignored the bound
#: (a store that swallows the cancellation); then the write is abandoned.
_GRACE = 0.05


def cleanup_errors(exc: BaseException) -> tuple[BaseException, ...]:
    """Errors of clean-up writes (finalize, rollback deletes) attached to `exc` by a run.

    The run raises the original cause; these are also summarised in its notes.
    """
    return tuple(getattr(exc, _CLEANUP_ATTR, ()))


def attach_errors(exc: BaseException, errors: Sequence[BaseException], what: str) -> None:
    """Attach `errors` to `exc` (`cleanup_errors`) and add one note per error naming `what`."""
    if not errors:
        return
    try:
        setattr(exc, _CLEANUP_ATTR, (*cleanup_errors(exc), *errors))
    except (AttributeError, TypeError):  # exotic exceptions without a __dict__
        pass
    for error in errors:
        exc.add_note(f"agentops: {what} failed: {type(error).__name__}: {error}")


def is_deadline(exc: BaseException) -> bool:
    """True when a `TimeoutError` is `exc` or anywhere in its chain: exception-group members
    (a TaskGroup's `ExceptionGroup`), `__cause__` and `__context__` (docs/runtime.md §3)."""
    return any(isinstance(link, TimeoutError) for link in iter_exception_chain(exc))


def outcome_for(
    cause: BaseException,
    stage: FailureStage,
    classifier: FailureClassifier,
    errors: list[BaseException],
) -> TurnOutcome:
    """The outcome recorded for a turn failed by `cause` at `stage` (docs/runtime.md §3).

    A cancellation of the run itself -> interrupted/canceled; a deadline anywhere in the
    chain (`is_deadline`) -> interrupted/deadline_exceeded; anything else -> failed/agent_error
    with ``classifier(cause, stage)``. A classifier that raises leaves the failure empty and
    its error is appended to `errors`.
    """
    if isinstance(cause, asyncio.CancelledError):
        return TurnOutcome(status=TurnStatus.INTERRUPTED, reason=TurnReason.CANCELED)
    if is_deadline(cause):
        return TurnOutcome(status=TurnStatus.INTERRUPTED, reason=TurnReason.DEADLINE_EXCEEDED)
    failure: TurnFailure | None = None
    try:
        failure = classifier(cause, stage)
    except Exception as error:
        errors.append(error)
    return TurnOutcome(status=TurnStatus.FAILED, reason=TurnReason.AGENT_ERROR, failure=failure)


class CleanupScope:
    """The clean-up of one turn (docs/runtime.md §3 "Clean-up writes").

    `timeout`: seconds for **all** the scope's writes together: the deadline is fixed when
    the first write starts (`start`), not per write. `background`: a set that keeps the
    write tasks referenced until they end.

    Each write runs in a task of its own, bounded by the deadline. A cancellation of the
    caller while it waits does not stop the write: the scope keeps waiting (at most until
    the deadline) and remembers the cancellation in `cancelled`; `reraise_cancel` raises it
    when the clean-up is over. A cancelled run therefore never leaves a clean-up half-done
    (unless the deadline passes), and its cancellation is never swallowed.
    """

    def __init__(self, timeout: float, background: set[asyncio.Task[Any]]) -> None:
        self.timeout = timeout
        self.deadline: float | None = None
        self.cancelled = False
        self._background = background

    def start(self) -> float:
        """Fix the deadline (now + timeout) unless it is already set; return it."""
        if self.deadline is None:
            self.deadline = asyncio.get_running_loop().time() + self.timeout
        return self.deadline

    @property
    def expired(self) -> bool:
        """True once the deadline is set and has passed."""
        return self.deadline is not None and asyncio.get_running_loop().time() >= self.deadline

    async def settle(self, awaitable: Awaitable[T], *, deadline: float | None = None) -> T:
        """Await `awaitable` in its own task, bounded by `deadline` (default: the scope's),
        whatever cancellations the caller receives meanwhile (they are recorded).

        Returns its result; raises its error, or `TimeoutError` when the deadline passes
        first (the write is then cancelled).
        """
        loop = asyncio.get_running_loop()
        until = self.start() if deadline is None else deadline  # math.inf: no bound
        if loop.time() >= until:
            _close(awaitable)
            raise TimeoutError("clean-up deadline passed before the write started")
        task: asyncio.Task[T] = loop.create_task(_bounded_at(awaitable, until))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        while not task.done():
            left = None if math.isinf(until) else max(until - loop.time(), 0.0) + _GRACE
            try:
                await asyncio.wait({task}, timeout=left)
            except asyncio.CancelledError:
                self.cancelled = True
                continue
            if not task.done():  # the write ignored its bound: abandon it
                task.cancel()
                raise TimeoutError("clean-up write did not stop at its deadline")
        if task.cancelled():  # cancelled by someone else: an error of this write, not ours
            raise RuntimeError("clean-up write was cancelled")
        return task.result()

    async def run(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """`settle(make())` with the scope's deadline; `make` is not called once it passed."""
        if self.expired:
            raise TimeoutError("clean-up deadline passed before the write started")
        return await self.settle(make())

    def reraise_cancel(self, cause: BaseException | None = None) -> None:
        """Raise `asyncio.CancelledError` if a cancellation arrived during the clean-up.

        When `cause` is itself a cancellation it is raised instead (the caller's own).
        """
        if not self.cancelled:
            return
        if isinstance(cause, asyncio.CancelledError):
            raise cause
        raise asyncio.CancelledError("cancelled during the turn's clean-up") from cause


async def _bounded_at(awaitable: Awaitable[T], deadline: float) -> T:
    if math.isinf(deadline):
        return await awaitable
    async with asyncio.timeout_at(deadline):
        return await awaitable


def _close(awaitable: Awaitable[Any]) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):  # a coroutine never awaited: close it to avoid a RuntimeWarning
        close()
