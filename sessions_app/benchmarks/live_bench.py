"""`bench live`: latency from the Runner yielding an event to a watcher receiving it, and
fan-out throughput, for 1, 10 and 100 watchers on the in-memory and Redis channel layers.

What is measured, honestly:
- a subprocess (one server process's worth: one event loop) with `DATABASE_URL` pointing at
  a new SQLite file in a temp dir (never the dev database) and the layer under test;
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

_CHILD = r"""
import asyncio, json, re, statistics, sys, time
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from channels.testing import WebsocketCommunicator
from agentops.runtime.model import Content, Event, Role
from sessions_app import live
from sessions_app.live.consumer import SessionConsumer
from sessions_app.live.demo_live import ensure_demo_live_session

args = json.loads(sys.argv[1])
ensure_demo_live_session("bench-live")


class Watcher:
    is_authenticated = True
    def has_perm(self, perm):
        return True


consumer = SessionConsumer.as_asgi()


async def app(scope, receive, send):
    scope = dict(scope, user=Watcher(), url_route={"kwargs": {"session_id": "bench-live"}})
    await consumer(scope, receive, send)


def agent_for(partials, completes, pace):
    async def agent(context):
        for i in range(partials):
            stamp = repr(time.perf_counter())
            yield Event(partial=True, content=Content(role=Role.ASSISTANT, text=stamp))
            if pace:
                await asyncio.sleep(pace)
        for i in range(completes):
            yield Event(content=Content(role=Role.ASSISTANT, text=repr(time.perf_counter())))
            if pace:
                await asyncio.sleep(pace)
    return agent


# Frames are HTML (sessions_app.live.render): what each is says its #live-state element.
DATA = re.compile(r'data-([a-z-]+)="([^"]*)"')
STREAM = re.compile(r'id="stream-text-[^"]*"[^>]*>([^<]*)<')
TEXT = re.compile(r'<div class="markdown"><p>([^<]*)</p>')


async def read(comm, lat_partial, lat_complete, counts, index):
    while True:
        html = await comm.receive_from(timeout=120)
        now = time.perf_counter()
        m = dict(DATA.findall(html[: html.index(">")]))
        if m["kind"] == "partial":
            lat_partial.append(now - float(STREAM.search(html)[1]))
            counts[index] += 1
        elif m["kind"] == "event" and m["role"] == "assistant":
            lat_complete.append(now - float(TEXT.search(html)[1]))
            counts[index] += 1
        elif m["kind"] == "turn" and m["status"] != "running":
            return now


async def one(n, partials, completes, pace):
    comms = [WebsocketCommunicator(app, "/ws/sessions/bench-live/") for _ in range(n)]
    for c in comms:  # one by one: the Redis pool caps concurrent connections
        ok, _ = await c.connect()
        assert ok
    lat_p, lat_c, counts = [], [], [0] * n
    readers = [asyncio.create_task(read(c, lat_p, lat_c, counts, i)) for i, c in enumerate(comms)]
    start = time.perf_counter()
    await live.run_turn("bench-live", "bench", agent=agent_for(partials, completes, pace),
                        listen_for_cancel=False)
    ends = await asyncio.gather(*readers)
    elapsed = max(ends) - start
    for c in comms:
        await c.disconnect()
    return lat_p, lat_c, sum(counts), elapsed


def pct(values, q):
    values = sorted(values)
    if not values:
        return None
    k = min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))
    return round(values[k] * 1000, 2)


async def main():
    out = {}
    for n in args["watchers"]:
        lat_p, lat_c, _, _ = await one(n, args["partials"], args["completes"], args["pace"])
        out[f"w{n}"] = {
            "partial_p50_ms": pct(lat_p, 50), "partial_p95_ms": pct(lat_p, 95),
            "partial_p99_ms": pct(lat_p, 99),
            "complete_p50_ms": pct(lat_c, 50), "complete_p95_ms": pct(lat_c, 95),
            "complete_p99_ms": pct(lat_c, 99),
        }
        _, _, delivered, elapsed = await one(n, args["burst"], 0, 0)
        out[f"w{n}"]["fanout_msgs_per_s"] = round(delivered / elapsed)
    print(json.dumps(out))


asyncio.run(main())
"""


def _run_child(env_extra: dict[str, str], options: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="agentops-bench-live-") as tmp:
        return run_django_child(
            _CHILD,
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
