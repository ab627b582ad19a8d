"""`bench page`'s child: migrate a scratch database and fill it for the page benchmark.

Usage, with ``DATABASE_URL`` set to a scratch SQLite file:

- ``python -m sessions_app.benchmarks.children.page_child sized 100 1000 ...``: one
  session per size (events), in turns of `EVENTS_PER_TURN` (a prompt, assistant tool
  calls with their results and usage, a final answer); the last turn is interrupted
  with one call left unanswered, so the protocol page shows one issue at every size;
  each session has a todo list with a short history.
- ``python -m sessions_app.benchmarks.children.page_child crowd 10000``: that many small
  sessions (two turns each, one of them failed or interrupted, in five apps, over 60
  days), for the sessions list and the triage queue.

Rows are written with the import writer's `executemany`, then each sized session's kept
facts are recomputed as after any import (`refresh_resume_status`). Signs an operator in
and prints ``{"cookie", "sessions": {size: id}, "chunk_turns": {size: turn id},
"build_s"}`` as one JSON line.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import django

from sessions_app.benchmarks.children.big_child import sign_in

#: Events per generated turn: a prompt, 24 (call, result) pairs, a final answer.
EVENTS_PER_TURN = 50
#: Turns on one page of the session page (its default page is the last).
TURNS_PER_PAGE = 20
BATCH = 20_000
BASE = datetime(2026, 1, 1, tzinfo=UTC)
TEXT = "Looking at the **logs** of part {i}: " + "lorem ipsum dolor sit amet " * 6
USAGE = {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940, "details": {}}
APPS = ("billing", "search", "support", "checkout", "ops")
CODES = ("provider_error", "tool_error", "timeout", "rate_limited")


def _row(
    sid: str, turn_id: str, role: str, text: str, at: datetime, **extra: Any
) -> tuple[Any, ...]:
    # EVENT_INSERT_COLUMNS' order: session, turn, source id, author, role, text, parts,
    # reasoning, tool calls, tool response, tool call id, pending calls, finish reason,
    # usage, state delta, raw, created, updated, deleted, archived.
    author = {"user": "user", "assistant": "agent", "tool": "tool"}[role]
    return (sid, turn_id, "", author, role, text, [], "", extra.get("tool_calls") or [],
            extra.get("tool_response"), extra.get("call_id", ""), [], "",
            extra.get("usage"), {}, None, at, at, None, None)  # fmt: skip


def _sized_events(sid: str, turns: int) -> Iterator[tuple[Any, ...]]:
    for t in range(turns):
        turn_id = f"{sid}-t{t:05d}"
        at = BASE + timedelta(minutes=t)
        yield _row(sid, turn_id, "user", f"Step {t}: **check** the logs", at)
        for i in range((EVENTS_PER_TURN - 2) // 2):
            call = f"call-{t}-{i}"
            calls = [{"id": call, "name": "grep", "arguments": {"q": str(i)}}]
            yield _row(sid, turn_id, "assistant", TEXT.format(i=i), at, tool_calls=calls,
                       usage=USAGE)  # fmt: skip
            if t == turns - 1 and i == 0:
                continue  # the one unanswered call
            result = {"tool_call_id": call, "name": "grep", "result": "match " * 30}
            yield _row(sid, turn_id, "tool", "", at, tool_response=result, call_id=call)
        yield _row(sid, turn_id, "assistant", f"Done with step {t}.", at, usage=USAGE)


def _insert(rows: Iterator[tuple[Any, ...]]) -> None:
    from sessions_app.ingest.writer import insert_rows
    from sessions_app.models import Event
    from sessions_app.store import EVENT_INSERT_COLUMNS

    batch: list[tuple[Any, ...]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == BATCH:
            insert_rows(Event, EVENT_INSERT_COLUMNS, batch)
            batch = []
    if batch:
        insert_rows(Event, EVENT_INSERT_COLUMNS, batch)


def _todos(sid: str) -> None:
    """Three versions of the session's todo list (five items), written as an agent's
    changes through the signal `todos_app` answers (sessions_app never imports it)."""
    from agentops.runtime.todos import coerce_todos
    from sessions_app.models import Session
    from sessions_app.signals import session_todos_set

    for version in range(1, 4):
        items = [{"content": f"Check part {i}", "status": "pending"} for i in range(version + 2)]
        session_todos_set.send(
            sender=Session, session_id=sid, items=coerce_todos(items), turn_id="", event_id=None
        )


def build_sized(sizes: list[int]) -> dict[str, Any]:
    """One session per size (module docstring); returns ids and chunk turns by size."""
    from django.db import transaction

    from sessions_app.models import Session, Turn
    from sessions_app.store import refresh_resume_status

    sessions, chunk_turns = {}, {}
    for size in sizes:
        sid = f"bench-page-{size}"
        turns = max(1, size // EVENTS_PER_TURN)
        with transaction.atomic():
            Session.objects.create(
                id=sid, app_name="bench", title=f"{size} events", created_at=BASE, updated_at=BASE
            )
            Turn.objects.bulk_create(
                [
                    Turn(id=f"{sid}-t{t:05d}", session_id=sid,
                         status="interrupted" if t == turns - 1 else "completed",
                         reason="canceled" if t == turns - 1 else "",
                         started_at=BASE + timedelta(minutes=t),
                         finished_at=BASE + timedelta(minutes=t, seconds=40))
                    for t in range(turns)
                ],
                batch_size=5000,
            )  # fmt: skip
            _insert(_sized_events(sid, turns))
            _todos(sid)
            refresh_resume_status(sid)
        sessions[size] = sid
        # The first turn shown on the session page's default (last) page.
        chunk_turns[size] = f"{sid}-t{turns - (turns % TURNS_PER_PAGE or TURNS_PER_PAGE):05d}"
    return {"sessions": sessions, "chunk_turns": chunk_turns}


def build_crowd(count: int) -> dict[str, Any]:
    """`count` small sessions (module docstring)."""
    from django.db import transaction

    from sessions_app.models import Session, Turn

    with transaction.atomic():
        Session.objects.bulk_create(
            [
                Session(id=f"crowd-{n:05d}", app_name=APPS[n % len(APPS)], title=f"Session {n}",
                        created_at=BASE + timedelta(minutes=n),
                        updated_at=BASE + timedelta(days=n % 60, minutes=n))
                for n in range(count)
            ],
            batch_size=5000,
        )  # fmt: skip
        turns = []
        for n in range(count):
            at = BASE + timedelta(days=n % 60, minutes=n)
            sid = f"crowd-{n:05d}"
            turns.append(Turn(id=f"{sid}-a", session_id=sid, status="completed", started_at=at,
                              finished_at=at + timedelta(seconds=5)))  # fmt: skip
            failed = n % 3 != 0
            turns.append(
                Turn(id=f"{sid}-b", session_id=sid,
                     status="failed" if failed else "interrupted",
                     reason="agent_error" if failed else "canceled",
                     failure_code=CODES[n % len(CODES)] if failed else "",
                     failure_stage="model" if failed else "",
                     started_at=at + timedelta(seconds=10),
                     finished_at=at + timedelta(seconds=20))
            )  # fmt: skip
        Turn.objects.bulk_create(turns, batch_size=5000)

        def rows() -> Iterator[tuple[Any, ...]]:
            for turn in turns:
                at = turn.started_at
                yield _row(turn.session_id, turn.id, "user", "Please check the build", at)
                yield _row(turn.session_id, turn.id, "assistant", "Checked.", at)

        _insert(rows())
    return {"sessions": {count: "crowd"}, "chunk_turns": {}}


def main(argv: Sequence[str] | None = None) -> None:
    """Migrate, build, sign in; print the figures as one JSON line. argv: ``sized SIZE...``
    or ``crowd COUNT``."""
    kind, *sizes = sys.argv[1:] if argv is None else argv
    django.setup()
    from django.core.management import call_command

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    numbers = [int(size) for size in sizes]
    figures = build_sized(numbers) if kind == "sized" else build_crowd(numbers[0])
    figures["build_s"] = round(time.perf_counter() - started, 1)
    figures["cookie"] = sign_in()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
