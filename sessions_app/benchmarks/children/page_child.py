"""`bench page`'s child: build one generated session, then time its pages.

Usage: ``python -m sessions_app.benchmarks.children.page_child EVENTS REPEAT`` with
``DATABASE_URL`` set to a scratch SQLite file. Prints ``events``, ``turns`` and per page
``<page>_first_ms``, ``<page>_median_ms`` and ``<page>_queries``.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import django

SESSION_ID = "bench-page"
#: Events per generated turn: a user prompt, then assistant tool calls and their results.
EVENTS_PER_TURN = 50
#: Turns on one page of the session page (its default page is the last).
TURNS_PER_PAGE = 20
BASE = datetime(2026, 1, 1, tzinfo=UTC)


def build_session(events: int) -> list[str]:
    """Store one session of about `events` events in turns of `EVENTS_PER_TURN`; return
    its turn ids in order."""
    from sessions_app.models import Event, Session, Turn

    session = Session.objects.create(
        id=SESSION_ID, app_name="bench", title="10k events", created_at=BASE, updated_at=BASE
    )
    turns: list[Turn] = []
    rows: list[Event] = []
    for t in range(max(1, events // EVENTS_PER_TURN)):
        turn_id = f"bench-page-t{t:05d}"
        start = BASE + timedelta(minutes=t)
        turns.append(
            Turn(id=turn_id, session=session, status="completed", started_at=start,
                 finished_at=start + timedelta(seconds=40))
        )  # fmt: skip
        rows.append(
            Event(session=session, turn_id=turn_id, role="user", author="user",
                  text=f"Step {t}: **check** the logs", created_at=start, updated_at=start)
        )  # fmt: skip
        for i in range((EVENTS_PER_TURN - 1) // 2):
            call = f"call-{t}-{i}"
            rows.append(
                Event(session=session, turn_id=turn_id, role="assistant", author="agent",
                      text=f"Looking at part {i}", created_at=start, updated_at=start,
                      tool_calls=[{"id": call, "name": "grep", "arguments": {"q": str(i)}}],
                      usage={"prompt_tokens": 900, "completion_tokens": 40,
                             "total_tokens": 940})
            )  # fmt: skip
            rows.append(
                Event(session=session, turn_id=turn_id, role="tool", author="tool",
                      tool_response={"tool_call_id": call, "name": "grep", "result": "ok " * 20},
                      created_at=start, updated_at=start)
            )  # fmt: skip
    Turn.objects.bulk_create(turns)
    Event.objects.bulk_create(rows, batch_size=2000)
    return [turn.id for turn in turns]


def time_pages(turn_ids: list[str], repeat: int) -> dict[str, Any]:
    """Request each page `repeat` times as a signed-in operator (full middleware stack,
    test client); return the figures for each."""
    from django.contrib.auth.models import Group, User
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from sessions_app.models import Event

    user = User.objects.create_user("bench-operator")
    user.groups.add(Group.objects.get(name="operators"))
    client = Client()
    client.force_login(user)
    # The first turn shown on the default (last) page of the session page.
    first_turn = turn_ids[-(len(turn_ids) % TURNS_PER_PAGE or TURNS_PER_PAGE)]
    urls = {
        "session_page": f"/sessions/{SESSION_ID}/",
        "turn_events_chunk": f"/sessions/{SESSION_ID}/turns/{first_turn}/events/",
        "context_page": f"/sessions/{SESSION_ID}/context/",
        "protocol_page": f"/sessions/{SESSION_ID}/protocol/",
    }
    out: dict[str, Any] = {"events": Event.objects.count(), "turns": len(turn_ids)}
    for name, url in urls.items():
        headers = {"HX-Request": "true"} if "chunk" in name else {}
        times: list[float] = []
        query_count = 0
        for _ in range(repeat):
            with CaptureQueriesContext(connection) as queries:
                t0 = time.perf_counter()
                response = client.get(url, headers=headers)
                times.append((time.perf_counter() - t0) * 1000)
            assert response.status_code == 200, (url, response.status_code)
            query_count = len(queries)
        out[f"{name}_first_ms"] = round(times[0], 1)
        out[f"{name}_median_ms"] = round(statistics.median(times[1:] or times), 1)
        out[f"{name}_queries"] = query_count
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """Set Django up, migrate, build the session and print the page figures as one JSON
    line; argv: ``[EVENTS, REPEAT]``."""
    events, repeat = sys.argv[1:] if argv is None else argv
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    turn_ids = build_session(int(events))
    print(json.dumps(time_pages(turn_ids, int(repeat))))


if __name__ == "__main__":
    main()
