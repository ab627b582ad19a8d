"""An agent for tests that run turns in other OS processes (server, `manage.py run_turn`).

``AGENTOPS_AGENT=tests.live.gated_agent.make_agent``. Each turn stores a first assistant
event naming its process, then waits until the file ``release`` exists in the directory
AGENTOPS_TEST_GATE (when set), then stores STEPS more events a little apart: a second run
that broke in would interleave its events with these.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from agentops.runtime.model import Content, Event, FinishReason, Role

#: Events stored after the gate opens.
STEPS = 4


def _said(text: str, *, last: bool = False) -> Event:
    event = Event(author="gated", content=Content(role=Role.ASSISTANT, text=text))
    return event.model_copy(update={"finish_reason": FinishReason.STOP}) if last else event


def make_agent(*, todo_store: Any = None) -> Callable[[list[Event]], AsyncIterator[Event]]:
    """The gated agent (module docstring); `todo_store` is unused."""

    async def agent(context: list[Event]) -> AsyncIterator[Event]:
        pid = os.getpid()
        yield _said(f"first from {pid}")
        gate = os.environ.get("AGENTOPS_TEST_GATE", "")
        while gate and not (Path(gate) / "release").exists():
            await asyncio.sleep(0.02)
        for step in range(STEPS):
            await asyncio.sleep(0.02)
            yield _said(f"step {step} from {pid}", last=step == STEPS - 1)

    return agent
