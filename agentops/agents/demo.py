"""A scripted demo agent: streams text, plans with the todo tools, and can misbehave.

No model and no network: what it does depends on the words of the user message, so
every turn outcome of docs/runtime.md §2 can be shown live on the session page.

- default: writes a three-item plan with ``todos_write``, marks items in progress and
  completed with ``todos_update``, calls two harmless fake tools (``word_count``,
  ``utc_clock``), and streams an answer in fragments (partial events, then the complete
  event). Turn: completed.
- "fail": streams a little, then raises `DemoProviderError` (turn failed/agent_error,
  failure ``demo_provider_error`` at stage ``provider`` with a safe message).
- "hang": streams a little, then sleeps until cancelled (stopping the turn records it
  interrupted/canceled).
- "stop mid-tool": yields an assistant event with a tool call and then raises
  `DemoStoppedMidTool` before any result, so the call stays unanswered (turn failed,
  failure ``demo_stopped_mid_tool`` at stage ``tool``).
- "slow": like the default, but streams several paragraphs at a reading pace (each one
  stored when complete), for the always-running live demo.
- "deploy": asks to call the ``deploy`` tool, which needs a person's approval: the turn
  ends (completed) with the call awaiting a person (``Event.pending_call_ids``), and the
  session cannot resume until someone decides. The turn that continues after the decision
  (``Runner.resume``: the context ends with the decision as the call's result) runs the
  harmless fake deploy and reports it when it was approved, and says it did not deploy
  when it was rejected (docs/runtime.md §3 "Continuing a turn").

`delay` is the pause in seconds between two streamed fragments.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from typing import Any

from agentops.agents.tools import ToolRunner, session_id_of
from agentops.runtime.model import (
    Content,
    Event,
    FinishReason,
    Role,
    ToolCall,
    ToolResponse,
    Usage,
)
from agentops.runtime.session import TurnFailure
from agentops.runtime.todos import TodoStore

__all__ = ["DemoAgent", "DemoProviderError", "DemoStoppedMidTool", "make_agent"]

AUTHOR = "demo-agent"

_SLOW_PARAGRAPHS = (
    "This session never sleeps: a demo agent keeps a turn running so that you can watch "
    "text stream in, tool calls appear with their results, and the turn badge flip when "
    "the turn ends.",
    "Open this page in a second window: both windows receive the same fragments over the "
    "websocket, and a window that reconnects first catches up on every stored event it "
    "missed.",
    "Each paragraph is streamed as partial events, which are never stored, and then "
    "replaced by the complete event, which is stored and carries its id.",
    "When this turn completes, a new one starts a few seconds later.",
)


class DemoProviderError(RuntimeError):
    """The simulated provider failure of a "fail" turn (docs/runtime.md §6: provides its
    failure)."""

    def turn_failure(self) -> TurnFailure:
        """``demo_provider_error`` at stage provider, with a fixed safe message."""
        return TurnFailure(
            code="demo_provider_error",
            message="The demo provider refused the request (simulated failure).",
            stage="provider",
        )


class DemoStoppedMidTool(RuntimeError):
    """Raised right after a tool call was yielded, so the call never gets a result."""

    def turn_failure(self) -> TurnFailure:
        """``demo_stopped_mid_tool`` at stage tool, with a fixed safe message."""
        return TurnFailure(
            code="demo_stopped_mid_tool",
            message="The demo agent stopped while a tool call was in flight (simulated).",
            stage="tool",
        )


async def _word_count(arguments: Mapping[str, Any]) -> dict[str, int]:
    text = arguments.get("text")
    if not isinstance(text, str):
        raise ValueError("word_count needs a string 'text'")
    return {"words": len(text.split()), "characters": len(text)}


async def _utc_clock(arguments: Mapping[str, Any]) -> dict[str, str]:
    return {"utc": datetime.now(UTC).isoformat(timespec="seconds")}


#: The tool that needs a person's approval before it runs.
DEPLOY_TOOL = "deploy"


def _deploy(arguments: Mapping[str, Any]) -> dict[str, str]:
    """The fake deploy, run once approved: nothing happens, a release id is made up."""
    return {
        "service": str(arguments.get("service", "")),
        "environment": str(arguments.get("environment", "")),
        "release": f"rel-{uuid.uuid4().hex[:8]}",
        "deployed_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _decided_calls(context: list[Event]) -> list[tuple[ToolCall, ToolResponse | None]]:
    """The calls of the context's last assistant event, each with the result after it."""
    index = len(context) - 1
    while index >= 0 and context[index].content.role is Role.TOOL:
        index -= 1
    if index < 0:
        return []
    results = {e.content.answered_call_id: e.content.tool_response for e in context[index + 1 :]}
    return [(call, results.get(call.id)) for call in context[index].content.tool_calls]


def _continuation_text(call: ToolCall, response: ToolResponse | None) -> str:
    """What the agent says about `call` once `response` (a person's decision) answers it."""
    what = (
        f"**{call.arguments.get('service', '?')}** to **{call.arguments.get('environment', '?')}**"
    )
    if response is None or response.error is not None:
        why = response.error if response is not None else "no decision was recorded"
        return f"I did not deploy {what}: {why}"
    result = response.result if isinstance(response.result, dict) else {}
    if call.name == DEPLOY_TOOL and result.get("decision") == "approved":
        done = _deploy(call.arguments)
        by = result.get("by") or "a person"
        note = f" (note: {result['note']})" if result.get("note") else ""
        return (
            f"Approved by {by}{note}. Deployed {what}: release `{done['release']}` at "
            f"{done['deployed_at']}."
        )
    return f"The call {call.name} was answered with: {response.result!r}"


def _has_word(message: str, word: str) -> bool:
    return re.search(rf"\b{word}\b", message) is not None


def _fragments(text: str) -> list[str]:
    """`text` cut into word-sized fragments that concatenate back to it exactly."""
    return re.findall(r"\S+\s*|\s+", text)


class DemoAgent:
    """The demo agent (see the module docstring); an `agentops.runtime.Agent`.

    `todo_store`: where the todo tools read and write (docs/runtime.md §7). `delay`: seconds
    between streamed fragments.
    """

    def __init__(self, *, todo_store: TodoStore, delay: float = 0.03) -> None:
        self.tools = ToolRunner(
            todo_store, extra={"word_count": _word_count, "utc_clock": _utc_clock}, author="tools"
        )
        self.delay = delay

    def _call_id(self) -> str:
        # Unique across turns and processes: call ids of a session never repeat.
        return f"demo_call_{uuid.uuid4().hex[:16]}"

    async def _stream(self, text: str) -> AsyncIterator[Event]:
        """Partial events with the text delta of each fragment, then the complete event."""
        for fragment in _fragments(text):
            await asyncio.sleep(self.delay)
            yield Event(
                author=AUTHOR, partial=True, content=Content(role=Role.ASSISTANT, text=fragment)
            )
        words = len(text.split())
        yield Event(
            author=AUTHOR,
            content=Content(role=Role.ASSISTANT, text=text),
            finish_reason=FinishReason.STOP,
            usage=Usage(prompt_tokens=12, completion_tokens=words, total_tokens=12 + words),
        )

    async def _tool(
        self, session_id: str, name: str, arguments: dict[str, Any], text: str = ""
    ) -> AsyncIterator[Event]:
        """One assistant event calling `name`, then the executed tool's result event."""
        call = ToolCall(id=self._call_id(), name=name, arguments=arguments)
        yield Event(
            author=AUTHOR,
            content=Content(role=Role.ASSISTANT, text=text, tool_calls=(call,)),
            finish_reason=FinishReason.TOOL_CALLS,
        )
        await asyncio.sleep(self.delay)
        yield await self.tools.run(session_id, call)

    async def __call__(self, context: list[Event]) -> AsyncIterator[Event]:
        """Run one turn for `context` (projected history + the stored user event)."""
        session_id = session_id_of(context)
        if context[-1].content.role is Role.TOOL:
            # A continuation (Runner.resume): a person decided on the call awaiting them.
            for call, response in _decided_calls(context):
                async for event in self._stream(_continuation_text(call, response)):
                    yield event
            return
        message = context[-1].content.text.lower()
        if _has_word(message, "deploy"):
            call = ToolCall(
                id=self._call_id(),
                name=DEPLOY_TOOL,
                arguments={"service": "demo-app", "environment": "staging"},
            )
            yield Event(
                author=AUTHOR,
                content=Content(
                    role=Role.ASSISTANT,
                    text="Deploying needs a person's approval: I have asked for it.",
                    tool_calls=(call,),
                ),
                finish_reason=FinishReason.TOOL_CALLS,
                pending_call_ids=(call.id,),
            )
            return
        if re.search(r"\bstop mid[- ]tool\b", message):
            call = ToolCall(id=self._call_id(), name="word_count", arguments={"text": message})
            yield Event(
                author=AUTHOR,
                content=Content(role=Role.ASSISTANT, text="Counting words…", tool_calls=(call,)),
                finish_reason=FinishReason.TOOL_CALLS,
            )
            await asyncio.sleep(self.delay)
            raise DemoStoppedMidTool("stopped mid tool call")
        if _has_word(message, "fail"):
            async for event in self._stream("Calling the demo provider… "):
                if event.partial:
                    yield event
            raise DemoProviderError("simulated provider failure")
        if _has_word(message, "hang"):
            async for event in self._stream("Thinking about this for a long while"):
                if event.partial:
                    yield event
            await asyncio.sleep(float("inf"))
        plan = [
            {"content": "Read the request", "status": "in_progress", "active_form": "Reading"},
            {"content": "Count its words", "status": "pending", "active_form": "Counting"},
            {"content": "Answer", "status": "pending", "active_form": "Answering"},
        ]
        async for event in self._tool(session_id, "todos_write", {"todos": plan}, "Planning."):
            yield event
        async for event in self._tool(
            session_id, "todos_update", {"index": 0, "status": "completed"}
        ):
            yield event
        async for event in self._tool(
            session_id, "todos_update", {"index": 1, "status": "in_progress"}
        ):
            yield event
        async for event in self._tool(session_id, "word_count", {"text": context[-1].content.text}):
            yield event
        async for event in self._tool(session_id, "utc_clock", {}):
            yield event
        async for event in self._tool(
            session_id, "todos_update", {"index": 1, "status": "completed"}
        ):
            yield event
        paragraphs: tuple[str, ...] = (
            _SLOW_PARAGRAPHS
            if _has_word(message, "slow")
            else (
                "Here is the **demo answer**: your message was planned, counted and "
                "answered, and every step was stored as an event of this turn.",
            )
        )
        for paragraph in paragraphs:
            async for event in self._stream(paragraph):
                yield event
        async for event in self._tool(
            session_id, "todos_update", {"index": 2, "status": "completed"}
        ):
            yield event


def make_agent(*, todo_store: TodoStore, delay: float = 0.03) -> DemoAgent:
    """Factory for ``AGENTOPS_AGENT=agentops.agents.demo.make_agent``."""
    return DemoAgent(todo_store=todo_store, delay=delay)


def make_slow_agent(*, todo_store: TodoStore) -> DemoAgent:
    """The demo agent streaming at a reading pace (0.25 s per fragment), for live demos."""
    return DemoAgent(todo_store=todo_store, delay=0.25)
