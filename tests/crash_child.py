"""Child process of tests/test_crash_safety.py: run one turn, SIGKILL ourselves mid-way.

Usage (environment, set by the test)::

    DATABASE_URL=<the test database>  CRASH_SESSION=<session id>
    CRASH_AT=<n>  CRASH_WHEN=before|after  CRASH_JOURNAL=<path>
    python -m tests.crash_child

Runs one user turn through `Runner` on the Django store, with an agent that yields an
assistant tool call (carrying a state delta), its tool result and a final answer. Writes
to the store are counted in the order the runner makes them (docs/runtime.md §3): 1 interrupt
running turns, 2 begin turn, 3 user event, 4-6 agent events, 7 finalize. The process
kills itself with SIGKILL just before write `CRASH_AT` starts (`before`) or just after it
committed (`after`) -- no clean-up, no connection close, like a crashed worker.

Every write that returned is journalled first (one JSON line, fsynced) so the parent
knows exactly what was committed before the kill: ``{"n": 3, "write": "append_event",
"event": <stored Event as JSON>}``. With CRASH_AT=0 the turn runs to its end and the
process exits 0.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentops.settings")
django.setup()

from agentops.runtime import (  # noqa: E402  (Django must be set up first)
    Content,
    Event,
    Role,
    Runner,
    ToolCall,
    ToolResponse,
    Turn,
    TurnOutcome,
    TurnReason,
)
from sessions_app.store import DjangoSessionService  # noqa: E402

#: The store writes of one turn, in the order the runner makes them.
WRITES = ("interrupt_running_turns", "begin_turn", "append_event", "finalize_turn")
#: Number of writes in one turn of `agent` below.
WRITES_PER_TURN = 7


_T = TypeVar("_T")


class CrashingService(DjangoSessionService):
    """The Django store, counting writes and SIGKILLing the process at one of them."""

    def __init__(self, crash_at: int, when: str, journal: str) -> None:
        super().__init__()
        self.crash_at, self.when, self.journal, self.count = crash_at, when, journal, 0

    def _kill(self) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    async def _write(
        self, name: str, call: Awaitable[_T], record: Callable[[_T], dict[str, Any]]
    ) -> _T:
        self.count += 1
        n = self.count
        if n == self.crash_at and self.when == "before":
            self._kill()
        result = await call
        with open(self.journal, "a", encoding="utf-8") as out:
            out.write(json.dumps({"n": n, "write": name, **record(result)}) + "\n")
            out.flush()
            os.fsync(out.fileno())
        if n == self.crash_at and self.when == "after":
            self._kill()
        return result

    async def interrupt_running_turns(
        self, session_id: str, reason: TurnReason, *, only: Sequence[str] | None = None
    ) -> list[Turn]:
        return await self._write(
            "interrupt_running_turns",
            super().interrupt_running_turns(session_id, reason, only=only),
            lambda turns: {"turns": [t.id for t in turns]},
        )

    async def begin_turn(self, session_id: str, turn: Turn) -> Turn:
        return await self._write(
            "begin_turn", super().begin_turn(session_id, turn), lambda t: {"turn": t.id}
        )

    async def append_event(self, event: Event) -> Event:
        return await self._write(
            "append_event",
            super().append_event(event),
            lambda e: {"event": e.model_dump(mode="json")},
        )

    async def finalize_turn(self, turn_id: str, outcome: TurnOutcome) -> Turn:
        return await self._write(
            "finalize_turn", super().finalize_turn(turn_id, outcome), lambda t: {"turn": t.id}
        )


async def agent(context: list[Event]) -> AsyncIterator[Event]:
    """A tool call (with a state delta), its durable result, then the answer."""
    call_id = f"call_{len(context)}"
    yield Event(
        author="bot",
        content=Content(
            role=Role.ASSISTANT, tool_calls=(ToolCall(id=call_id, name="lookup", arguments={}),)
        ),
        state_delta={f"looked_up_{len(context)}": True},
    )
    yield Event(
        author="tool",
        content=Content(
            role=Role.TOOL,
            tool_response=ToolResponse(tool_call_id=call_id, name="lookup", result={"v": 42}),
        ),
    )
    yield Event(author="bot", content=Content(role=Role.ASSISTANT, text="done"))


async def main() -> None:
    service = CrashingService(
        int(os.environ.get("CRASH_AT", "0")),
        os.environ.get("CRASH_WHEN", "before"),
        os.environ["CRASH_JOURNAL"],
    )
    async for _ in Runner(agent, service).run(os.environ["CRASH_SESSION"], "crash me"):
        pass


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
