"""A runner in its own OS process, recording through the HTTP API (for test_remote_runner).

``python -m tests.api.remote_runner_child URL KEY SESSION MODE``: runs one turn of SESSION
with the runtime's `Runner` on `RemoteSessionService`. MODE ``complete``: the agent streams
a fragment, then stores three messages; ``hang``: it stores one message, then waits
forever (the test kills the process). Prints ``EVENT <id>`` for every stored event and
``DONE`` at the end. Imports no Django.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

from agentops.client import RemoteSessionService
from agentops.runtime import Runner
from agentops.runtime.model import Content, Event, FinishReason, Role


def make_agent(mode: str):  # type: ignore[no-untyped-def]
    async def agent(context: list[Event]) -> AsyncIterator[Event]:
        yield Event(author="bot", partial=True, content=Content(role=Role.ASSISTANT, text="thi"))
        for n in range(1 if mode == "hang" else 3):
            yield Event(
                author="bot",
                content=Content(role=Role.ASSISTANT, text=f"message {n}"),
                finish_reason=FinishReason.STOP,
            )
        if mode == "hang":
            await asyncio.sleep(3600)

    return agent


async def main(url: str, key: str, session_id: str, mode: str) -> None:
    async with RemoteSessionService(url, key, lease_ttl=2.0, lease_wait=1.0) as service:
        runner = Runner(make_agent(mode), service)
        async for event in runner.run(session_id, "hello from elsewhere"):
            if event.partial:
                await service.publish_partial(event)
            else:
                print(f"EVENT {event.id}", flush=True)
    print("DONE", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
