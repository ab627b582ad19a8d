"""`bench live`: latency from the Runner yielding an event to a watcher receiving it, and
fan-out throughput, for 1, 10 and 100 watchers on the in-memory and Redis channel layers.

What is measured, honestly:
- a subprocess (`children.live_child`; one server process's worth: one event loop) with
  `DATABASE_URL` pointing at a new SQLite file in a temp dir (never the dev database) and
  the layer under test;
- N watchers are `channels.testing.WebsocketCommunicator`s on the real `SessionConsumer`
  (group join, channel layer, consumer dispatch, JSON encoding) in the same process; no
  TCP socket, so network and browser time are not included;
- a turn runs through the Runner on the Django store (`sessions_app.live.run_turn`); its
  agent stamps ``time.perf_counter()`` into each event as it yields it, and each watcher
  records receive time minus that stamp: "partial" for streamed fragments (never stored),
  "complete" for stored events (includes the database write and the watcher's process
  rendering the event's HTML, once for all its watchers);
- latency runs pace the agent (`pace_ms` between events, default 20 ms: 50 fragments/s, a
  fast model stream) so it is not saturated; at 100 watchers that is 5,000 messages/s;
  throughput runs yield `events` fragments back to back and count delivered messages/s
  (all watchers together) until the last watcher has the last one.
Redis figures only when REDIS_URL is set or `-o redis_url=...` is given.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from sessions_app.benchmarks import Figures, register, run_django_child
from sessions_app.benchmarks.children import live_child


def _run_child(env_extra: dict[str, str], options: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="agentops-bench-live-") as tmp:
        return run_django_child(
            live_child.__name__,
            [json.dumps(options)],
            Path(tmp) / "bench.sqlite3",
            {"AGENTOPS_LIVE_DEMO": "false", "LOG_LEVEL": "WARNING", **env_extra},
        )


@register("live")
def bench_live(
    *,
    watchers: str = "1,10,100",
    partials: str | int = 200,
    completes: str | int = 20,
    pace_ms: str | int = 20,
    events: str | int = 500,
    redis_url: str = "",
) -> Figures:
    """Figures per layer and watcher count: ``<layer>_w<n>_partial_p50_ms`` ... ``_p99_ms``,
    ``..._complete_p50_ms`` ... and ``<layer>_w<n>_fanout_msgs_per_s``.

    `watchers`: comma-separated counts; `partials` / `completes`: events per latency run;
    `pace_ms`: pause between them; `events`: fragments per throughput run; `redis_url`:
    default REDIS_URL (Redis skipped when neither is set).
    """
    options = {
        "watchers": [int(n) for n in str(watchers).split(",") if n.strip()],
        "partials": int(partials),
        "completes": int(completes),
        "pace": int(pace_ms) / 1000,
        "burst": int(events),
    }
    layers = {"memory": {"REDIS_URL": ""}}
    redis = redis_url or os.environ.get("REDIS_URL", "")
    if redis:
        layers["redis"] = {"REDIS_URL": redis}
    figures: Figures = {}
    for layer, env in layers.items():
        for key, values in _run_child(env, options).items():
            for name, value in values.items():
                figures[f"{layer}_{key}_{name}"] = value
    if not redis:
        figures["redis"] = "skipped (set REDIS_URL or -o redis_url=...)"
    return figures
