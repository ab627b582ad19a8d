"""Demo sessions written by this project (no third-party text), for `manage.py load_demo`.

Six sessions that between them show every outcome the dashboard renders (docs/runtime.md §2):
completed turns; a failed turn (code `provider_error`, stage provider, a safe message);
interrupted turns (canceled, deadline_exceeded, abandoned, consumer_stopped with a call
awaiting approval); a dangling tool call inside a completed turn; reasoning, usage,
markdown (tables, code blocks, lists); hostile HTML in event text (it must render inert);
a todo list with pending/in_progress/completed items; and one large session of 2,000
events over 250 turns. They go through the same writer as imports
(`write_parsed_session`), with `source_format` demo. All times are fixed UTC instants, so
loading twice gives identical data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction

from sessions_app.ingest import (
    ParsedEvent,
    ParsedSession,
    ParsedTodo,
    ParsedTurn,
    write_parsed_session,
)
from sessions_app.ingest.builder import AWAITING_USER_NOTE
from sessions_app.models import Session

# Two days before today, 09:00 UTC: recent enough for the triage chart and "last activity",
# and the same for every load on one day (re-loading replaces the demo sessions anyway).
DEMO_BASE = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0) - timedelta(days=2)
DEMO_SOURCE = "demo"


@dataclass
class _Draft:
    """A demo session under construction: a clock, the current turn, events, turns."""

    id: str
    app_name: str
    user_id: str
    title: str
    start: datetime
    state: dict[str, Any] = field(default_factory=dict)
    turns: list[ParsedTurn] = field(default_factory=list)
    events: list[ParsedEvent] = field(default_factory=list)
    todos: list[ParsedTodo] | None = None
    todo_version: int = 0
    clock: datetime = DEMO_BASE

    def __post_init__(self) -> None:
        self.clock = self.start

    def tick(self, seconds: float = 7) -> datetime:
        self.clock += timedelta(seconds=seconds)
        return self.clock

    def turn(self, prompt: str) -> None:
        """Start a turn with a user prompt (it completes unless `end` says otherwise)."""
        turn_id = f"{self.id}/turn-{len(self.turns) + 1:04d}"
        at = self.tick(30)
        self.turns.append(ParsedTurn(id=turn_id, status="completed", started_at=at, finished_at=at))
        self.add("user", text=prompt, author="user")

    def add(self, role: str, **fields: Any) -> ParsedEvent:
        at = self.tick(fields.pop("after", 7))
        event = ParsedEvent(role=role, created_at=at, turn_id=self.turns[-1].id, **fields)
        self.events.append(event)
        self.turns[-1].finished_at = at
        return event

    def say(self, text: str, *, reasoning: str = "", tokens: tuple[int, int] = (0, 0)) -> None:
        usage = None
        if tokens != (0, 0):
            usage = {
                "prompt_tokens": tokens[0],
                "completion_tokens": tokens[1],
                "total_tokens": sum(tokens),
                "details": {"cached_tokens": tokens[0] // 2},
            }
        self.add(
            "assistant",
            text=text,
            author="agent",
            reasoning=reasoning,
            usage=usage,
            finish_reason="stop",
        )

    def call(
        self, call_id: str, name: str, arguments: dict[str, Any], *, text: str = "", **extra: Any
    ) -> None:
        self.add(
            "assistant",
            text=text,
            author="agent",
            tool_calls=[{"id": call_id, "name": name, "arguments": arguments}],
            finish_reason="tool_calls",
            **extra,
        )

    def result(self, call_id: str, name: str, value: Any, *, error: bool = False) -> None:
        response: dict[str, Any] = {"tool_call_id": call_id, "name": name}
        response["error" if error else "result"] = value
        self.add("tool", author="tool", tool_call_id=call_id, tool_response=response)

    def end(self, status: str, reason: str = "", note: str = "", **failure: str) -> None:
        turn = self.turns[-1]
        turn.status, turn.reason, turn.status_note = status, reason, note
        turn.failure_code = failure.get("code", "")
        turn.failure_stage = failure.get("stage", "")
        turn.failure_message = failure.get("message", "")
        turn.finished_at = self.tick(2)

    def todo_write(self, items: list[tuple[str, str, str]]) -> None:
        self.todos = [ParsedTodo(content=c, status=s, active_form=a) for c, s, a in items]
        self.todo_version += 1

    def build(self) -> ParsedSession:
        for index, event in enumerate(self.events):
            event.source_id = event.source_id or f"{self.id}-e{index:05d}"
            event.raw = None
        return ParsedSession(
            id=self.id,
            app_name=self.app_name,
            user_id=self.user_id,
            title=self.title,
            state=self.state,
            created_at=self.start,
            updated_at=self.clock,
            source_format=Session.SourceFormat.DEMO,
            turns=self.turns,
            events=self.events,
            todos=self.todos,
            todo_version=self.todo_version,
            todo_updated_at=self.clock if self.todos is not None else None,
        )


def _coding_agent() -> ParsedSession:
    d = _Draft(
        "demo-coding-bugfix",
        "demo-coder",
        "maria",
        "Fix the off-by-one in invoice date ranges",
        DEMO_BASE,
        state={"repo": "billing-service", "branch": "fix/date-range"},
    )
    d.turn("The monthly invoice test fails: March invoices miss the 31st. Can you fix it?")
    d.call(
        "call_plan_1",
        "todos_write",
        {"todos": ["reproduce", "fix", "test"]},
        reasoning="Plan first: reproduce, find the boundary bug, add a regression test.",
    )
    d.result("call_plan_1", "todos_write", {"count": 3})
    d.todo_write(
        [
            ("Reproduce the failing test", "completed", "Reproducing the failing test"),
            ("Fix the end-of-month boundary", "in_progress", "Fixing the boundary"),
            ("Add a regression test for 31-day months", "pending", "Adding a regression test"),
        ]
    )
    d.call("call_read_1", "read_file", {"path": "billing/periods.py"})
    d.result(
        "call_read_1",
        "read_file",
        "def month_range(year, month):\n    start = date(year, month, 1)\n"
        "    end = start + timedelta(days=30)\n    return start, end\n",
    )
    d.call("call_test_1", "run_tests", {"selector": "tests/test_periods.py"})
    d.result("call_test_1", "run_tests", "1 failed: test_march_has_31_days", error=True)
    d.say(
        "Found it. `month_range` adds a fixed 30 days, so 31-day months lose their last day.\n\n"
        "| month | days | covered before | covered after |\n"
        "|---|---|---|---|\n"
        "| February 2025 | 28 | 31 (too many) | 28 |\n"
        "| March 2025 | 31 | 30 | 31 |\n"
        "| April 2025 | 30 | 30 | 30 |\n\n"
        "The fix:\n\n"
        "```python\n"
        "def month_range(year: int, month: int) -> tuple[date, date]:\n"
        "    start = date(year, month, 1)\n"
        "    days = calendar.monthrange(year, month)[1]\n"
        "    return start, start + timedelta(days=days - 1)\n"
        "```\n\n"
        "Next steps:\n\n"
        "1. apply the patch\n"
        "2. add `test_march_has_31_days` and `test_february_leap_year`\n"
        "3. re-run the suite\n",
        reasoning="calendar.monthrange gives the number of days; the end date is inclusive.",
        tokens=(4120, 388),
    )
    d.turn("Apply it and run the whole suite.")
    d.call("call_patch_1", "apply_patch", {"path": "billing/periods.py"})
    d.result("call_patch_1", "apply_patch", {"ok": True})
    d.end(
        "failed",
        "agent_error",
        "model provider returned HTTP 529",
        code="provider_error",
        stage="provider",
        message="The model provider is overloaded. Nothing after the patch was run.",
    )
    d.turn("Try again please.")
    d.call("call_test_2", "run_tests", {"selector": "tests/"})
    d.add("tool", author="tool", tool_call_id="call_test_2", text="212 passed")
    d.say("All 212 tests pass. I'll write the regression test n")
    d.end("interrupted", "canceled", "stopped by the user from the dashboard")
    return d.build()


def _support_agent() -> ParsedSession:
    d = _Draft(
        "demo-support-refund",
        "demo-support",
        "customer-4711",
        "Refund for a damaged espresso machine",
        DEMO_BASE + timedelta(hours=2),
    )
    d.turn("My espresso machine arrived with a cracked water tank. Order 88231.")
    d.call("call_lookup_1", "lookup_order", {"order_id": "88231"})
    # No result was recorded for this call, yet the turn completed: a dangling call.
    d.say(
        "I'm sorry about that! I can see the order was delivered on **June 1st**.\n\n"
        "- Item: *Barista Pro 2*\n- Paid: 349.00 EUR\n- Return window: open until July 1st",
        tokens=(910, 64),
    )
    d.end("completed", note="no result for tool call call_lookup_1")
    d.turn("Can I just get my money back? I don't want a replacement.")
    d.call(
        "call_refund_1",
        "issue_refund",
        {"order_id": "88231", "amount": "349.00", "currency": "EUR"},
        text="Refunds over 100 EUR need a supervisor's approval. I've requested it.",
        pending_call_ids=["call_refund_1"],
    )
    d.end("interrupted", "consumer_stopped", AWAITING_USER_NOTE + "call_refund_1")
    return d.build()


def _pipeline_agent() -> ParsedSession:
    d = _Draft(
        "demo-data-pipeline",
        "demo-pipeline",
        "etl-bot",
        "Nightly orders backfill",
        DEMO_BASE + timedelta(hours=5),
        state={"warehouse": "analytics", "last_loaded_day": "2025-05-31"},
    )
    d.turn("Load yesterday's orders into the warehouse.")
    d.call("call_extract_1", "extract", {"table": "orders", "day": "2025-06-01"})
    d.result("call_extract_1", "extract", {"rows": 48213})
    d.call("call_load_1", "load", {"table": "fact_orders", "rows": 48213})
    d.result("call_load_1", "load", {"inserted": 48213, "seconds": 41.7})
    d.add(
        "assistant",
        author="agent",
        text="Loaded **48,213** rows into `fact_orders`.",
        state_delta={"last_loaded_day": "2025-06-01"},
        finish_reason="stop",
    )
    d.turn("Now backfill all of May.")
    d.call("call_backfill_1", "backfill", {"from": "2025-05-01", "to": "2025-05-31"})
    d.result("call_backfill_1", "backfill", {"days_done": 12, "days_left": 19})
    d.end("interrupted", "deadline_exceeded", "run exceeded its 15 minute deadline")
    d.turn("Resume the backfill from May 13th.")
    d.call("call_backfill_2", "backfill", {"from": "2025-05-13", "to": "2025-05-31"})
    d.end(
        "interrupted",
        "abandoned",
        "worker process died; transcript ends inside tool call call_backfill_2",
    )
    return d.build()


def _hostile_html() -> ParsedSession:
    d = _Draft(
        "demo-html-injection",
        "demo-support",
        "pentest",
        "Markup in messages is shown as text",
        DEMO_BASE + timedelta(hours=7),
    )
    d.turn(
        "Please summarise this ticket: <script>alert(1)</script> and "
        "<img src=x onerror=alert(1)> — does your UI run it?"
    )
    d.say(
        "The ticket contains two HTML snippets, `<script>alert(1)</script>` and "
        "<img src=x onerror=alert(1)>. They are shown as text and never executed.",
        tokens=(120, 40),
    )
    return d.build()


def _large_session(turns: int = 250) -> ParsedSession:
    """250 turns x 8 events = 2,000 events (a long-running research agent)."""
    d = _Draft(
        "demo-large-research",
        "demo-research",
        "lab",
        "Long literature sweep (2,000 events)",
        DEMO_BASE - timedelta(days=1),
    )
    for n in range(turns):
        d.turn(f"Next batch: papers {n * 10 + 1}-{n * 10 + 10}. Summarise new findings.")
        for k in range(3):
            call_id = f"call_search_{n}_{k}"
            d.call(call_id, "search_papers", {"query": f"topic {n}", "page": k + 1}, after=2)
            d.result(call_id, "search_papers", {"hits": 10 - k, "page": k + 1})
        d.say(f"Batch {n + 1}: {3 + n % 5} relevant papers; see the notes.", tokens=(800, 90))
    return d.build()


def _todo_planner() -> ParsedSession:
    d = _Draft(
        "demo-release-checklist",
        "demo-coder",
        "maria",
        "Release 2.4 checklist",
        DEMO_BASE + timedelta(hours=9),
    )
    d.turn("Prepare the 2.4 release.")
    d.call("call_todos_1", "todos_write", {"todos": []})
    d.result("call_todos_1", "todos_write", {"count": 4})
    d.todo_write(
        [
            ("Freeze the main branch", "completed", ""),
            ("Write the changelog", "in_progress", "Writing the changelog"),
            ("Tag v2.4.0", "pending", "Tagging v2.4.0"),
            ("Announce in #releases", "pending", ""),
        ]
    )
    d.say("Branch frozen; changelog in progress.\n\n- [x] freeze\n- [ ] changelog\n- [ ] tag")
    return d.build()


DEMO_BUILDERS: tuple[Callable[[], ParsedSession], ...] = (
    _coding_agent,
    _support_agent,
    _pipeline_agent,
    _hostile_html,
    _todo_planner,
    _large_session,
)


def build_demo_sessions() -> list[ParsedSession]:
    """The demo sessions, freshly built (deterministic content and UTC times)."""
    return [build() for build in DEMO_BUILDERS]


def load_demo() -> list[ParsedSession]:
    """Replace every demo session (source_format demo) with a fresh copy, in one transaction.

    Returns the sessions written. Idempotent: running it twice leaves the same rows
    (event ids differ, since they are assigned on insert).
    """
    sessions = build_demo_sessions()
    with transaction.atomic():
        Session.objects.filter(source_format=Session.SourceFormat.DEMO).delete()
        for parsed in sessions:
            write_parsed_session(parsed, "demo")
    return sessions
