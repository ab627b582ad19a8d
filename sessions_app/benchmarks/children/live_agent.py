"""`bench live`'s agent, run by the daphne server under test (``AGENTOPS_AGENT=
sessions_app.benchmarks.children.live_agent.make_agent``).

The user message says what to yield: ``bench steps=6 partials=9 pace=0.05``: `steps`
times, `partials` partial events and then one complete event, `pace` seconds apart (a
model streaming about 1/pace fragments a second). Each fragment's text and each complete
event's text carry ``t=<time.monotonic()>`` taken as it is yielded; the clock is the
machine's, so a watcher in another process on this machine measures how long each took to
reach it.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from agentops.runtime.model import Content, Event, FinishReason, Role

PARAMETER = re.compile(r"(steps|partials|pace)=([0-9.]+)")


def stamp() -> str:
    """``t=<seconds on the machine's monotonic clock>`` (what watchers parse)."""
    return f"t={time.monotonic():.6f}"


def _plan(context: list[Event]) -> tuple[int, int, float]:
    text = next((e.content.text for e in reversed(context) if e.content.role is Role.USER), "")
    found = dict(PARAMETER.findall(text))
    return int(found.get("steps", 6)), int(found.get("partials", 9)), float(found.get("pace", 0.05))


def make_agent(*, todo_store: Any = None) -> Any:
    """The agent function (the todo store is not used)."""

    async def agent(context: list[Event]) -> AsyncIterator[Event]:
        steps, partials, pace = _plan(context)
        for step in range(steps):
            for _ in range(partials):
                content = Content(role=Role.ASSISTANT, text=f"{stamp()} ")
                yield Event(author="bench", partial=True, content=content)
                await asyncio.sleep(pace)
            yield Event(
                author="bench",
                content=Content(role=Role.ASSISTANT, text=f"{stamp()} step {step}"),
                finish_reason=FinishReason.STOP if step == steps - 1 else FinishReason.NONE,
            )
            await asyncio.sleep(pace)

    return agent
