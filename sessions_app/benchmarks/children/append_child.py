"""`bench append`'s child for our store and for the raw per-transaction limit.

Usage: ``python -m sessions_app.benchmarks.children.append_child SUBJECT EVENTS_JSON`` with
``DATABASE_URL`` set to a scratch database (SQLite file or PostgreSQL). EVENTS_JSON: a file
holding a JSON list of runtime `Event` dumps (as `append_bench.write_events` writes them).
It migrates, creates one session whose turns (every turn id of the events) are running, as
the Runner's are while it appends (the store subjects begin them through the store, as the
Runner does; untimed), prints ``{"ready": true}`` and then answers commands
on stdin, one a line (`commands`), so the parent interleaves subjects in one run:

- a number N: append the next N events (cycling through the list), one committed
  transaction each; prints ``{"events": N, "seconds": S}``;
- ``end``: prints ``{"stored": COUNT}`` and exits.

SUBJECT:
- ``ours``: `DjangoSessionService.append_event`, awaited one at a time as the Runner does;
- ``live``: the same through `LiveSessionService` (broadcasts each event; no watchers);
- ``raw``: the limit: the same two statements our append runs (`store.append_sql`: the
  session's UPDATE and the event's INSERT, values prepared before the clock starts) per
  transaction in the plain DB-API module (sqlite3 with the same pragmas, or psycopg).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import django

SESSION_ID = "bench-append"


def commands(run: Callable[[int], float], stored: Callable[[], int]) -> None:
    """Answer the parent's commands (see the module) until ``end``."""
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if line.strip() == "end":
            break
        count = int(line)
        print(json.dumps({"events": count, "seconds": run(count)}), flush=True)
    print(json.dumps({"stored": stored()}), flush=True)


def _setup(rows: list[dict[str, Any]], turns: bool) -> list[Any]:
    """Migrate; create the session (and its running turns when `turns`: the raw
    subject's; the store subjects begin theirs through the store); the runtime events."""
    from django.core.management import call_command

    from agentops.runtime.model import Event
    from agentops.runtime.session import TurnStatus
    from sessions_app import models

    call_command("migrate", verbosity=0)
    now = datetime.now(UTC)
    models.Session.objects.create(id=SESSION_ID, app_name="bench", user_id="u",
                                  created_at=now, updated_at=now)  # fmt: skip
    if turns:
        models.Turn.objects.bulk_create(
            models.Turn(id=turn_id, session_id=SESSION_ID, status=TurnStatus.RUNNING,
                        started_at=now)
            for turn_id in _turn_ids(rows)
        )  # fmt: skip
    return [Event.model_validate({**row, "session_id": SESSION_ID}) for row in rows]


def _turn_ids(rows: list[dict[str, Any]]) -> list[str]:
    return sorted({row["turn_id"] for row in rows if row["turn_id"]})


def _cycle(items: list[Any]) -> Iterator[Any]:
    while True:
        yield from items


def _stored() -> int:
    from sessions_app import models

    return models.Event.objects.filter(session_id=SESSION_ID).count()


def serve_store(events: list[Any], live: bool) -> None:
    """Our store (see the module), on one event loop kept across commands; the turns
    are begun through it (untimed), as the Runner begins them."""
    from agentops.runtime.session import Turn
    from sessions_app.live import LiveSessionService
    from sessions_app.store import DjangoSessionService

    service = LiveSessionService() if live else DjangoSessionService()
    loop = asyncio.new_event_loop()

    async def begin() -> None:
        now = datetime.now(UTC)
        for turn_id in sorted({event.turn_id for event in events if event.turn_id}):
            turn = Turn(id=turn_id, session_id=SESSION_ID, started_at=now)
            await service.begin_turn(SESSION_ID, turn)

    loop.run_until_complete(begin())
    upcoming = _cycle(events)

    async def append(count: int) -> float:
        batch = [next(upcoming) for _ in range(count)]
        start = time.perf_counter()
        for event in batch:
            await service.append_event(event)
        return time.perf_counter() - start

    def stored() -> int:
        return loop.run_until_complete(_astored())

    async def _astored() -> int:
        return len(await service.list_events(SESSION_ID))

    commands(lambda count: loop.run_until_complete(append(count)), stored)


def serve_raw(events: list[Any]) -> None:
    """The raw limit (see the module): sqlite3 or psycopg, our two statements."""
    from django.conf import settings
    from django.db import connection
    from django.utils import timezone

    from sessions_app.store.append_sql import append_statements, stored_fields

    statements = append_statements()
    now = timezone.now()
    prepared_now = statements.prepare_time(now)
    rows = [statements.insert_params(SESSION_ID, now, stored_fields(event)[0]) for event in events]
    upcoming = _cycle(rows)
    if connection.vendor == "sqlite":
        import sqlite3

        statements = statements.with_qmarks()
        raw = sqlite3.connect(settings.DATABASES["default"]["NAME"], isolation_level=None)
        raw.execute("PRAGMA foreign_keys = ON")
        for pragma in settings.DATABASES["default"]["OPTIONS"]["init_command"].split(";"):
            if pragma.strip():
                raw.execute(pragma)
        begin = "BEGIN IMMEDIATE"
    else:
        import psycopg

        raw = psycopg.connect(os.environ["DATABASE_URL"])  # type: ignore[assignment]
        begin = ""
    cursor = raw.cursor()

    def append(count: int) -> float:
        batch = [next(upcoming) for _ in range(count)]
        start = time.perf_counter()
        for params in batch:
            if begin:
                cursor.execute(begin)
            cursor.execute(statements.touch, (prepared_now, SESSION_ID))
            cursor.execute(statements.insert, params)
            if statements.returning:
                cursor.fetchone()
            if begin:
                cursor.execute("COMMIT")
            else:
                raw.commit()
        return time.perf_counter() - start

    commands(append, _stored)


def main() -> None:
    """Set Django up and serve SUBJECT; argv: ``[SUBJECT, EVENTS_JSON]``."""
    subject, source = sys.argv[1:]
    django.setup()
    events = _setup(json.loads(Path(source).read_text(encoding="utf-8")), subject == "raw")
    if subject == "raw":
        serve_raw(events)
    else:
        serve_store(events, live=subject == "live")


if __name__ == "__main__":
    main()
