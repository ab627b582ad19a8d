"""`bench page`: first-response time and query count of a 10,000-event session's pages.

A subprocess with `DATABASE_URL` pointing at a new SQLite file (never the dev database)
migrates, writes one generated session of `events` events (turns of 50 events: a user
prompt, then assistant messages with tool calls and their results), signs in an operator
and requests, through Django's full middleware stack (test client, no network):
the session page, its first lazily loaded turn-events chunk, the projected-context page
and the tool-protocol page. Each is requested `repeat` times; the first (cold) response
time, the median of the rest, and the SQL query count of each are reported (ms).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from sessions_app.benchmarks import Figures, register, run_django_child

_CHILD = r"""
import json, statistics, sys, time
from datetime import UTC, datetime, timedelta
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from sessions_app.models import Event, Session, Turn

call_command("migrate", verbosity=0)
events, repeat = int(sys.argv[1]), int(sys.argv[2])
per_turn = 50
base = datetime(2026, 1, 1, tzinfo=UTC)
session = Session.objects.create(id="bench-page", app_name="bench", title="10k events",
                                 created_at=base, updated_at=base)
turns, rows = [], []
for t in range(max(1, events // per_turn)):
    turn_id = f"bench-page-t{t:05d}"
    start = base + timedelta(minutes=t)
    turns.append(Turn(id=turn_id, session=session, status="completed", started_at=start,
                      finished_at=start + timedelta(seconds=40)))
    rows.append(Event(session=session, turn_id=turn_id, role="user", author="user",
                      text=f"Step {t}: **check** the logs", created_at=start, updated_at=start))
    for i in range((per_turn - 1) // 2):
        call = f"call-{t}-{i}"
        rows.append(Event(session=session, turn_id=turn_id, role="assistant", author="agent",
                          text=f"Looking at part {i}", created_at=start, updated_at=start,
                          tool_calls=[{"id": call, "name": "grep", "arguments": {"q": str(i)}}],
                          usage={"prompt_tokens": 900, "completion_tokens": 40,
                                 "total_tokens": 940}))
        rows.append(Event(session=session, turn_id=turn_id, role="tool", author="tool",
                          tool_response={"tool_call_id": call, "name": "grep",
                                         "result": "ok " * 20},
                          created_at=start, updated_at=start))
Turn.objects.bulk_create(turns)
Event.objects.bulk_create(rows, batch_size=2000)
user = User.objects.create_user("bench-operator")
user.groups.add(Group.objects.get(name="operators"))
client = Client()
client.force_login(user)
first_turn = turns[-(len(turns) % 20 or 20)].id  # first turn shown on the default (last) page
urls = {
    "session_page": "/sessions/bench-page/",
    "turn_events_chunk": f"/sessions/bench-page/turns/{first_turn}/events/",
    "context_page": "/sessions/bench-page/context/",
    "protocol_page": "/sessions/bench-page/protocol/",
}
out = {"events": Event.objects.count(), "turns": len(turns)}
for name, url in urls.items():
    times = []
    for n in range(repeat):
        with CaptureQueriesContext(connection) as queries:
            t0 = time.perf_counter()
            response = client.get(url, headers={"HX-Request": "true"} if "chunk" in name else {})
            times.append((time.perf_counter() - t0) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    out[f"{name}_first_ms"] = round(times[0], 1)
    out[f"{name}_median_ms"] = round(statistics.median(times[1:] or times), 1)
    out[f"{name}_queries"] = len(queries)
print(json.dumps(out))
"""


@register("page")
def bench_page(events: int = 10_000, repeat: int | str = 5, **_: Any) -> Figures:
    """Time the pages of one generated `events`-event session; see the module docstring.

    Returns events, turns, and per page `<page>_first_ms`, `<page>_median_ms` (wall-clock
    milliseconds in-process) and `<page>_queries`. Raises RuntimeError when the
    subprocess fails.
    """
    with tempfile.TemporaryDirectory(prefix="agentops-bench-") as tmp:
        db = Path(tmp) / "bench.sqlite3"
        figures: Figures = run_django_child(_CHILD, [str(int(events)), str(int(repeat))], db)
        return figures
