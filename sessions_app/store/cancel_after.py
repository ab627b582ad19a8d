"""A store write that goes on to its end when its caller is cancelled meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["cancel_after"]

_T = TypeVar("_T")


async def cancel_after(step: Awaitable[_T]) -> _T:
    """Await `step` to its end even if the caller is cancelled meanwhile. Not cancelled:
    its result or error. Cancelled: when `step` succeeded, return its result and cancel
    the caller again (delivered at its next await); when it failed, raise the
    cancellation. For a write that goes on without a cancelled caller (`begin_turn`)."""
    inner = asyncio.ensure_future(step)
    cancelled = False
    while not inner.done():
        try:
            await asyncio.wait({inner})
        except asyncio.CancelledError:
            cancelled = True
    if not cancelled:
        return inner.result()
    if inner.cancelled() or inner.exception() is not None:
        raise asyncio.CancelledError
    task = asyncio.current_task()
    if task is not None:
        # Same cancellation count, one delivery pending (asyncio.timeout reads the count).
        task.uncancel()
        task.cancel()
    return inner.result()
