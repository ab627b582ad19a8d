"""`bench live`: real websocket watchers of a real daphne server, at 10 / 100 / 1,000
watchers, on the in-memory channel layer and (when REDIS_URL is set) on Redis.

What is measured (`children.live_child`, in a process of its own; the server is a daphne
subprocess of it on a scratch SQLite file, never the dev database): the latency from the
agent yielding a fragment or event to each watcher receiving its frame, the turn's duration
with the watchers against the same turn with none (interleaved, per round), stored events
a watcher never got (dropped), sockets told to resume from the database, and the server's
memory and CPU. A turn is `steps` x (`partials` fragments + one stored event), `pace`
seconds apart (default 6 x 10 events at 50 ms: 3 s, 20 events a second: at 1,000 watchers
20,000 frames a second).

Also, interleaved in one run: what one ``group_send`` + ``receive`` costs on Channels'
in-memory layer and on ours (`sessions_app.live.layers`) with 1,000 watchers' channels
open (the scan the library does on every message).

`--json` prints, beside the rest: ``memory_1000_turn_slowdown``, ``memory_1000_p95_ms``,
``memory_1000_dropped``, ``redis_100_turn_slowdown``, ``redis_100_p95_ms``,
``redis_100_dropped``.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sessions_app.benchmarks import Figures, register, run_django_child
from sessions_app.benchmarks.children import live_child

#: Keys printed whatever else is measured (issue 17).
HEADLINE = ("turn_slowdown", "p95_ms", "dropped")


def _run_child(env_extra: dict[str, str], options: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="agentops-bench-live-") as tmp:
        return run_django_child(
            live_child.__name__,
            [json.dumps(options)],
            Path(tmp) / "bench.sqlite3",
            {"AGENTOPS_LIVE_DEMO": "false", "LOG_LEVEL": "WARNING", **env_extra},
        )


async def _send_receive_us(layer_class: Any, channels: int, messages: int) -> float:
    """Microseconds per group_send + receive on `layer_class` with `channels` other
    channels waiting (each a watcher's own channel, all in one user's group)."""
    layer = layer_class(capacity=1000)
    waiting = []
    for _ in range(channels):
        name = await layer.new_channel()
        waiting.append(asyncio.ensure_future(layer.receive(name)))
        await layer.group_add("watcher.user.1", name)
    feed = await layer.new_channel("live-feed.")
    await layer.group_add("session.bench", feed)
    await asyncio.sleep(0)
    message = {"type": "live.event", "event": {"id": 1, "text": "x" * 200, "pair": None}}
    start = time.perf_counter()
    for _ in range(messages):
        await layer.group_send("session.bench", message)
        await layer.receive(feed)
    elapsed = time.perf_counter() - start
    for task in waiting:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    return elapsed / messages * 1e6


def _layer_figures(rounds: int = 5) -> Figures:
    from channels.layers import InMemoryChannelLayer as Stock

    from sessions_app.live.layers import InMemoryChannelLayer as Ours

    times: dict[str, list[float]] = {"channels": [], "ours": []}
    for _ in range(rounds):
        for name, layer in (("channels", Stock), ("ours", Ours)):
            times[name].append(asyncio.run(_send_receive_us(layer, 1000, 500)))
    figures: Figures = {}
    for name, values in times.items():
        figures[f"inmemory_layer_{name}_us_per_message_1000_channels"] = round(
            statistics.median(values), 1
        )
        figures[f"inmemory_layer_{name}_us_range"] = [round(min(values), 1), round(max(values), 1)]
    return figures


@register("live")
def bench_live(
    *,
    watchers: str = "10,100,1000",
    redis_watchers: str = "10,100",
    rounds: str | int = 3,
    steps: str | int = 6,
    partials: str | int = 9,
    pace_ms: str | int = 50,
    redis_url: str = "",
) -> Figures:
    """Figures ``<layer>_<n>_<name>`` per layer and watcher count (see the module and
    `children.live_child`), the headline keys, and the layer comparison.

    `watchers` / `redis_watchers`: comma-separated counts per layer; `rounds`: pairs of
    turns per count; `steps`, `partials`, `pace_ms`: the turn; `redis_url`: default
    REDIS_URL (Redis skipped when neither is set).
    """
    turn = {"rounds": int(rounds), "steps": int(steps), "partials": int(partials),
            "pace": int(pace_ms) / 1000}  # fmt: skip
    redis = redis_url or os.environ.get("REDIS_URL", "")
    layers: dict[str, tuple[dict[str, str], str]] = {"memory": ({"REDIS_URL": ""}, watchers)}
    if redis:
        prefix = f"asgi-bench-live-{os.getpid()}"
        layers["redis"] = ({"REDIS_URL": redis, "REDIS_CHANNEL_PREFIX": prefix}, redis_watchers)
    figures: Figures = {}
    for layer, (env, counts) in layers.items():
        options = {**turn, "watchers": [int(n) for n in counts.split(",") if n.strip()]}
        result = _run_child(env, options)
        figures[f"{layer}_server_idle_rss_mb"] = result.pop("server_idle_rss_mb")
        for key, values in result.items():
            for name, value in values.items():
                figures[f"{layer}_{key.removeprefix('w')}_{name}"] = value
    headline: Figures = {}
    for layer, count in (("memory", 1000), ("redis", 100)):
        for name in HEADLINE:
            key = f"{layer}_{count}_{name}"
            headline[key] = figures.get(key, "not measured" if layer == "memory" or redis else
                                        "skipped (set REDIS_URL or -o redis_url=...)")  # fmt: skip
    figures.update(_layer_figures())
    return {**headline, **figures}
