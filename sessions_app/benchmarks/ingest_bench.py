"""`bench ingest`: events/s through the HTTP API (batches of 1, 10, 100) beside the direct
store append, and p50/p95 latency from a POST to websocket watchers receiving the event.

What is measured (`children.ingest_child`): a daphne subprocess on a scratch SQLite file
(never the dev database) with the in-memory channel layer; one keep-alive HTTP client
POSTing one request at a time (no concurrency), events with client keys; the direct
figure is `DjangoSessionService.append_event` in the child's own process (one transaction
per event, as the Runner appends). Rounds interleave the four ways; medians are printed.
Latency: real websocket clients (``websockets``) signed in as an operator, single-event
POSTs `pace_ms` apart; the time from just before the POST to each watcher's frame
(includes the HTTP request, the write, the broadcast, rendering and the socket).
Targets (the issue): >= 5,000 events/s through the API in batches of 100; p95
POST-to-watcher < 50 ms at 10 watchers.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from sessions_app.benchmarks import Figures, register, run_django_child
from sessions_app.benchmarks.children import ingest_child


@register("ingest")
def bench_ingest(
    *,
    events: str | int = 2000,
    rounds: str | int = 3,
    watchers: str = "1,10",
    samples: str | int = 50,
    pace_ms: str | int = 20,
) -> Figures:
    """Figures: ``api_batch{1,10,100}_events_per_s``, ``direct_append_events_per_s``,
    ``api_batch{1,10,100}_server_cpu_ms_per_event`` (the server process's CPU time per
    event, Linux; medians over `rounds`), ``w<n>_p50_ms``, ``w<n>_p95_ms`` and ``w<n>_delivered`` /
    ``w<n>_expected`` per watcher count. `events`: events per throughput run (a tenth for
    batches of 1 and the direct append); `samples`: POSTs per latency run."""
    options = {
        "events": int(events),
        "rounds": int(rounds),
        "watchers": [int(n) for n in str(watchers).split(",") if n.strip()],
        "samples": int(samples),
        "pace": int(pace_ms) / 1000,
    }
    with tempfile.TemporaryDirectory(prefix="agentops-bench-ingest-") as tmp:
        result = run_django_child(
            ingest_child.__name__,
            [json.dumps(options)],
            Path(tmp) / "bench.sqlite3",
            {"AGENTOPS_LIVE_DEMO": "false", "LOG_LEVEL": "WARNING", "REDIS_URL": ""},
        )
    figures: Figures = dict(result["throughput"])
    for watchers_key, values in result["latency"].items():
        for name, value in values.items():
            figures[f"{watchers_key}_{name}"] = value
    return figures
