"""`bench ingest`'s child: events/s through the HTTP API beside the direct store append, and
latency from a POST to websocket watchers receiving the event.

Usage: ``python -m sessions_app.benchmarks.children.ingest_child OPTIONS_JSON`` with
``DATABASE_URL`` set to a scratch SQLite database. It migrates, makes an API key and an
operator, starts a daphne subprocess on that database (in-memory channel layer: the server
that stores an event broadcasts it) and measures:

- throughput, in interleaved rounds: `events` events POSTed to
  ``/api/v1/sessions/<id>/events`` in batches of 1, 10 and 100 (one keep-alive httpx
  client, one request at a time, each event with a client key), and the same number through
  `DjangoSessionService.append_event` in this process (one transaction per event, as the
  Runner appends); events/s per round, the median printed, and for the API the server
  process's CPU time per event (from /proc: what the machine's other load hardly moves);
- latency: `watchers` real websocket clients (``websockets``, signed in as the operator)
  on the session; `samples` single-event POSTs, `pace` seconds apart; for each event and
  watcher, the time from just before the POST to the watcher receiving its frame.

Prints one JSON object: ``{"throughput": {...}, "latency": {...}}``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import django

_EVENT_ID = re.compile(r'data-event-id="(\d+)"')


def _item(text: str, turn_id: str = "") -> dict[str, Any]:
    return {
        "client_key": uuid.uuid4().hex,
        "turn_id": turn_id,
        "author": "bench",
        "content": {"role": "assistant", "text": text},
    }


def _post_rate(client: Any, session_id: str, events: int, batch: int) -> float:
    """Events/s POSTing `events` events in batches of `batch`."""
    path = f"/api/v1/sessions/{session_id}/events"
    start = time.perf_counter()
    for first in range(0, events, batch):
        body = {"events": [_item(f"event {first + i}") for i in range(batch)]}
        response = client.post(path, json=body)
        response.raise_for_status()
    return events / (time.perf_counter() - start)


async def _direct_rate(session_id: str, events: int) -> float:
    from agentops.runtime.model import Content, Event, Role
    from sessions_app.store import DjangoSessionService

    service = DjangoSessionService()
    start = time.perf_counter()
    for index in range(events):
        event = Event(
            session_id=session_id, author="bench",
            content=Content(role=Role.ASSISTANT, text=f"event {index}"),
        )  # fmt: skip
        await service.append_event(event)
    return events / (time.perf_counter() - start)


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def _latency(
    url: str, client: Any, cookie: str, session_id: str, watchers: int, samples: int,
    pace: float,
) -> dict[str, float]:  # fmt: skip
    import websockets

    ws_url = f"ws://{url.removeprefix('http://')}/ws/sessions/{session_id}/?after=0"
    headers = {"Cookie": cookie, "Origin": url}
    sockets = [
        await websockets.connect(ws_url, additional_headers=headers) for _ in range(watchers)
    ]
    for ws in sockets:
        await ws.recv()  # hello
    received: dict[int, list[float]] = {}

    async def listen(ws: Any) -> None:
        async for message in ws:
            found = _EVENT_ID.search(message if isinstance(message, str) else message.decode())
            if found:
                received.setdefault(int(found[1]), []).append(time.perf_counter())

    listeners = [asyncio.create_task(listen(ws)) for ws in sockets]
    sent: dict[int, float] = {}
    path = f"/api/v1/sessions/{session_id}/events"
    for index in range(samples):
        start = time.perf_counter()
        response = await client.post(path, json={"events": [_item(f"live {index}")]})
        response.raise_for_status()
        sent[response.json()["ids"][0]] = start
        await asyncio.sleep(pace)
    deadline = time.perf_counter() + 10
    while time.perf_counter() < deadline and any(len(received.get(i, [])) < watchers for i in sent):
        await asyncio.sleep(0.05)
    for task in listeners:
        task.cancel()
    for ws in sockets:
        await ws.close()
    delays = [(t - sent[i]) * 1000 for i in sent for t in received.get(i, [])]
    return {
        "p50_ms": _percentile(delays, 0.5),
        "p95_ms": _percentile(delays, 0.95),
        "delivered": len(delays),
        "expected": len(sent) * watchers,
    }


def measure(
    url: str, key: str, cookie: str, options: dict[str, Any], server_pid: int = 0
) -> dict[str, Any]:
    """Throughput and latency figures (see the module)."""
    import httpx

    from sessions_app.benchmarks.http_server import cpu_seconds

    cpu: dict[str, list[float]] = {f"api_batch{batch}": [] for batch in (1, 10, 100)}

    events, rounds = int(options["events"]), int(options["rounds"])
    headers = {"Authorization": f"Bearer {key}"}
    rates: dict[str, list[float]] = {"api_batch1": [], "api_batch10": [], "api_batch100": [],
                                     "direct_append": []}  # fmt: skip
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        for round_no in range(rounds):
            for batch in (1, 10, 100):
                sid = f"bench-api-{batch}-{round_no}"
                client.post("/api/v1/sessions", json={"app_name": "bench", "session_id": sid})
                # Batches of 1 are slow: fewer events keep a round short.
                count = max(batch, events // 10) if batch == 1 else events
                before = cpu_seconds(server_pid) if server_pid else None
                rates[f"api_batch{batch}"].append(_post_rate(client, sid, count, batch))
                after = cpu_seconds(server_pid) if server_pid else None
                if before is not None and after is not None:
                    cpu[f"api_batch{batch}"].append((after - before) * 1000 / count)
            sid = f"bench-direct-{round_no}"
            client.post("/api/v1/sessions", json={"app_name": "bench", "session_id": sid})
            rates["direct_append"].append(asyncio.run(_direct_rate(sid, events // 10)))
    throughput = {f"{name}_events_per_s": statistics.median(v) for name, v in rates.items()}
    for name, values in cpu.items():
        if values:  # the server's CPU per event: comparable on a loaded machine
            throughput[f"{name}_server_cpu_ms_per_event"] = statistics.median(values)

    async def latencies() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
            for count in options["watchers"]:
                sid = f"bench-live-{count}"
                await client.post("/api/v1/sessions", json={"app_name": "bench", "session_id": sid})
                out[f"w{count}"] = await _latency(
                    url, client, cookie, sid, count, int(options["samples"]),
                    float(options["pace"]),
                )  # fmt: skip
        return out

    return {"throughput": throughput, "latency": asyncio.run(latencies())}


def main(argv: Sequence[str] | None = None) -> None:
    """Set Django up, migrate, start daphne, print `measure` as one JSON line; argv:
    ``[OPTIONS_JSON]``."""
    (raw,) = sys.argv[1:] if argv is None else argv
    options = json.loads(raw)
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # the direct appends' loop
    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from sessions_app.api.keys import create_key
    from sessions_app.benchmarks.http_server import operator_cookie, serve_this_database_process

    call_command("migrate", verbosity=0)
    key = create_key("bench-ingest").key
    cookie = operator_cookie("bench-operator")
    log = Path(settings.BASE_DIR) / ".local" / "bench-ingest-daphne.log"
    with serve_this_database_process(log) as (url, pid):
        print(json.dumps(measure(url, key, cookie, options, pid)))


if __name__ == "__main__":
    main()
