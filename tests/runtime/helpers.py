"""Builders and scripted agents shared by the runtime tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from agentops.runtime import (
    Content,
    Event,
    Role,
    Runner,
    ToolCall,
    ToolResponse,
    Turn,
    TurnFailure,
    TurnReason,
    TurnStatus,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def call(call_id: str, name: str = "lookup", **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def user(text: str = "hi", *, turn: str = "", id: int = 0, session: str = "s") -> Event:
    return Event(
        id=id, session_id=session, turn_id=turn, author="user",
        content=Content(role=Role.USER, text=text),
    )  # fmt: skip


def assistant(
    text: str = "ok",
    *,
    calls: Sequence[ToolCall] = (),
    turn: str = "",
    id: int = 0,
    session: str = "s",
    partial: bool = False,
) -> Event:
    return Event(
        id=id,
        session_id=session,
        turn_id=turn,
        author="bot",
        partial=partial,
        content=Content(role=Role.ASSISTANT, text=text, tool_calls=tuple(calls)),
    )


def result(
    call_id: str, *, turn: str = "", id: int = 0, session: str = "s", plain: bool = False
) -> Event:
    if plain:
        content = Content(role=Role.TOOL, text="42", tool_call_id=call_id)
    else:
        content = Content(
            role=Role.TOOL,
            tool_response=ToolResponse(tool_call_id=call_id, name="lookup", result={"v": 42}),
        )
    return Event(id=id, session_id=session, turn_id=turn, author="tool", content=content)


def turn(
    turn_id: str,
    status: TurnStatus,
    *,
    reason: TurnReason = TurnReason.NONE,
    failure: TurnFailure | None = None,
    session: str = "s",
    minute: int = 0,
) -> Turn:
    return Turn(
        id=turn_id,
        session_id=session,
        status=status,
        reason=reason,
        failure=failure,
        started_at=T0 + timedelta(minutes=minute),
        finished_at=None
        if status is TurnStatus.RUNNING
        else T0 + timedelta(minutes=minute, seconds=1),
    )


@dataclass
class ScriptedAgent:
    """Yields `steps` in order: Events are yielded, exceptions raised. Records contexts."""

    steps: Sequence[Event | BaseException] = ()
    contexts: list[list[Event]] = field(default_factory=list)
    closed: bool = False

    async def run(self, context: list[Event]) -> AsyncIterator[Event]:
        self.contexts.append(list(context))
        try:
            for step in self.steps:
                if isinstance(step, BaseException):
                    raise step
                yield step
        finally:
            self.closed = True

    @property
    def calls(self) -> int:
        return len(self.contexts)


async def drain(
    runner: Runner, session_id: str, user_input: Any = "hi", **kwargs: Any
) -> tuple[list[Event], Exception | None]:
    """Run one turn to its end: (yielded events, raised error or None)."""
    yielded: list[Event] = []
    try:
        async for event in runner.run(session_id, user_input, **kwargs):
            yielded.append(event)
    except Exception as error:
        return yielded, error
    return yielded, None


def texts(events: Sequence[Event]) -> list[str]:
    return [event.content.text for event in events]


def roles(events: Sequence[Event]) -> list[str]:
    return [event.content.role.value for event in events]
