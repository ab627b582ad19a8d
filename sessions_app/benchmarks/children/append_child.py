"""`bench append`'s child for our store: time `DjangoSessionService.append_event`.

Usage: ``python -m sessions_app.benchmarks.children.append_child EVENTS_JSON WARMUP`` with
``DATABASE_URL`` set to a scratch database. EVENTS_JSON: a file holding a JSON list of
runtime `Event` dumps (as `append_bench.write_events` writes them). Appends the first
WARMUP events untimed, then every event, one call (one committed transaction) at a time,
as the Runner does. Prints ``{"events", "seconds", "stored"}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import django

from agentops.runtime.model import Event

SESSION_ID = "bench-append"


async def measure(rows: list[dict[str, Any]], warmup: int) -> dict[str, Any]:
    """Append `rows` (after `warmup` untimed ones) to one new session; return the count,
    the seconds the timed appends took and the number of events stored in the end."""
    from sessions_app.store import DjangoSessionService

    service = DjangoSessionService()
    session = await service.create_session("bench", "u", session_id=SESSION_ID)
    events = [Event.model_validate({**row, "session_id": session.id}) for row in rows]
    for event in events[:warmup]:
        await service.append_event(event)
    start = time.perf_counter()
    for event in events:
        await service.append_event(event)
    elapsed = time.perf_counter() - start
    stored = len(await service.list_events(session.id))
    return {"events": len(events), "seconds": elapsed, "stored": stored}


def main(argv: Sequence[str] | None = None) -> None:
    """Set Django up, migrate and print `measure` as one JSON line; argv:
    ``[EVENTS_JSON, WARMUP]``."""
    source, warmup = sys.argv[1:] if argv is None else argv
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    rows = json.loads(Path(source).read_text(encoding="utf-8"))
    print(json.dumps(asyncio.run(measure(rows, int(warmup)))))


if __name__ == "__main__":
    main()
