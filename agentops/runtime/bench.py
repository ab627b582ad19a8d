"""Benchmark: default projection + tool-protocol inspection per event (docs/runtime.md §4-5).

Run ``python -m agentops.runtime.bench [N]``; prints microseconds per event for a
synthetic history of N events (default 100,000): completed, failed (with a dangling
call, so a cut and a notice), interrupted and running turns, with tool calls and results.
The target is under 5 microseconds per event. Figures only; nothing asserts timings.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta

from agentops.runtime.model import Content, Event, Role, ToolCall, ToolResponse
from agentops.runtime.projection import ProjectionInput, explain_projection, project_default
from agentops.runtime.protocol import inspect_tool_protocol
from agentops.runtime.session import Turn, TurnReason, TurnStatus

__all__ = ["main", "synthetic_history"]


def synthetic_history(n: int) -> tuple[list[Turn], list[Event]]:
    """About `n` events in turns of 5 (user, call, result, call, answer-or-nothing)."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    turns: list[Turn] = []
    events: list[Event] = []
    index = 0
    while len(events) < n:
        turn_id = f"t{index:07d}"
        kind = index % 10
        if kind == 9:
            status, reason = TurnStatus.FAILED, TurnReason.AGENT_ERROR
        elif kind == 8:
            status, reason = TurnStatus.INTERRUPTED, TurnReason.CONSUMER_STOPPED
        else:
            status, reason = TurnStatus.COMPLETED, TurnReason.NONE
        turns.append(
            Turn(
                id=turn_id,
                session_id="s",
                status=status,
                reason=reason,
                started_at=t0 + timedelta(seconds=index),
                finished_at=t0 + timedelta(seconds=index, milliseconds=500),
            )
        )

        def add(content: Content, turn_id: str = turn_id) -> None:
            events.append(
                Event(id=len(events) + 1, session_id="s", turn_id=turn_id, content=content)
            )

        add(Content(role=Role.USER, text="do it"))
        add(
            Content(
                role=Role.ASSISTANT, tool_calls=(ToolCall(id="c1", name="f", arguments={"a": 1}),)
            )
        )
        add(
            Content(
                role=Role.TOOL, tool_response=ToolResponse(tool_call_id="c1", name="f", result=1)
            )
        )
        add(Content(role=Role.ASSISTANT, tool_calls=(ToolCall(id="c2", name="f"),)))
        if kind != 9:  # failed turns leave their second call dangling
            add(Content(role=Role.TOOL, tool_call_id="c2", text="ok"))
        index += 1
    return turns, events


def main(argv: list[str] | None = None) -> None:
    """Print per-event timings of projection + inspection and of the explanation."""
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else 100_000
    turns, events = synthetic_history(n)
    projection_input = ProjectionInput(turns=turns, events=events)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        context = project_default(projection_input)
        inspect_tool_protocol(events)
        best = min(best, time.perf_counter() - start)
    print(f"events: {len(events)}, context: {len(context)}")
    print(f"projection + inspection: {best / len(events) * 1e6:.2f} us/event (best of 5)")
    start = time.perf_counter()
    explain_projection(turns, events)
    elapsed = time.perf_counter() - start
    print(f"explain_projection: {elapsed / len(events) * 1e6:.2f} us/event")


if __name__ == "__main__":
    main()
