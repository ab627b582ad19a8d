"""A session service wrapper that injects hangs and gates into chosen store methods.

`FaultyService(inner)` behaves like `inner` (the same optional capabilities: it has
`begin_turn`, `run_lock`, ... exactly when `inner` has them, so the runner detects the
same semantics), except that before a method named in `hooks` runs, its hook is awaited.
`calls` counts the calls of every hooked method.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from agentops.runtime import Event, Session, SessionService

Hook = Callable[[], Awaitable[None]]


class Gate:
    """A hook that signals `entered` and waits for `release()` (or forever: `hang`)."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self._open = asyncio.Event()

    async def __call__(self) -> None:
        self.entered.set()
        await self._open.wait()

    def release(self) -> None:
        self._open.set()


async def hang() -> None:
    """A hook that never returns (a hung store); only a cancellation ends it."""
    await asyncio.Event().wait()


class FaultyService:
    """`inner` with `hooks` (method name -> async hook) awaited before those methods."""

    def __init__(self, inner: SessionService, hooks: dict[str, Hook] | None = None) -> None:
        self.inner = inner
        self.hooks: dict[str, Hook] = dict(hooks or {})
        self.calls: dict[str, int] = {}

    async def _before(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1
        hook = self.hooks.get(name)
        if hook is not None:
            await hook()

    async def create_session(
        self,
        app_name: str,
        user_id: str = "",
        *,
        session_id: str | None = None,
        state: dict[str, Any] | None = None,
    ) -> Session:
        await self._before("create_session")
        return await self.inner.create_session(
            app_name, user_id, session_id=session_id, state=state
        )

    async def get_session(self, session_id: str) -> Session | None:
        await self._before("get_session")
        return await self.inner.get_session(session_id)

    async def list_events(self, session_id: str) -> list[Event]:
        await self._before("list_events")
        return await self.inner.list_events(session_id)

    async def append_event(self, event: Event) -> Event:
        await self._before("append_event")
        return await self.inner.append_event(event)

    async def delete_event(self, session_id: str, event_id: int) -> None:
        await self._before("delete_event")
        await self.inner.delete_event(session_id, event_id)

    def __getattr__(self, name: str) -> Any:
        # Turn store and run lock methods: present exactly when the inner store has them.
        attribute = getattr(self.inner, name)
        if name.startswith("_") or name == "run_lock" or not callable(attribute):
            return attribute

        async def hooked(*args: Any, **kwargs: Any) -> Any:
            await self._before(name)
            return await attribute(*args, **kwargs)

        return hooked
