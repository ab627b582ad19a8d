"""Executing tool calls for the built-in agents: todo tools plus optional extra tools.

A tool result is always a complete tool event (role tool) carrying a `ToolResponse`:
the tool's JSON result, or ``error`` with a message meant for the model when the tool
raised a `TodoToolError` (a handled error, docs/runtime.md §1). Any other exception propagates
(the turn then fails, docs/runtime.md §3).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from agentops.runtime.model import Content, Event, Role, ToolCall, ToolResponse
from agentops.runtime.todos import TodoStore, TodoToolError, TodoTools

__all__ = ["ExtraTool", "ToolRunner", "session_id_of"]

#: An extra tool: ``async fn(arguments) -> JSON value``; raise `TodoToolError` (or any
#: `ValueError`) for an error the model should see.
ExtraTool = Callable[[Mapping[str, Any]], Awaitable[Any]]


def session_id_of(context: Sequence[Event]) -> str:
    """The session id of a turn's context: that of its last event (the stored user event).

    Raises ValueError for an empty context (the runner never passes one).
    """
    if not context:
        raise ValueError("an agent needs a context with at least the user event")
    return context[-1].session_id


class ToolRunner:
    """Runs tool calls against the todo tools of `todo_store` and `extra` tools.

    `author` is written on the tool events it makes (display only).
    """

    def __init__(
        self,
        todo_store: TodoStore,
        *,
        extra: Mapping[str, ExtraTool] | None = None,
        author: str = "tools",
    ) -> None:
        self.todos = TodoTools(todo_store)
        self.extra = dict(extra or {})
        self.author = author

    @property
    def names(self) -> list[str]:
        """Names of every tool this runner executes (todo tools first)."""
        return [spec.name for spec in self.todos.specs] + list(self.extra)

    async def run(self, session_id: str, call: ToolCall) -> Event:
        """Execute `call` and return its (unstored) tool result event.

        Unknown tool names and tool errors become a `ToolResponse` with ``error``.
        """
        try:
            if call.name in self.extra:
                value: Any = await self.extra[call.name](call.arguments)
            else:
                value = await self.todos.call(call.name, session_id, call.arguments)
        except (TodoToolError, ValueError) as error:
            response = ToolResponse(tool_call_id=call.id, name=call.name, error=str(error))
        else:
            response = ToolResponse(tool_call_id=call.id, name=call.name, result=value)
        return Event(
            author=self.author,
            content=Content(role=Role.TOOL, tool_response=response, tool_call_id=call.id),
        )
