"""`bench live`'s child: watcher latency and fan-out on the channel layer the settings pick.

Usage: ``python -m sessions_app.benchmarks.children.live_child OPTIONS_JSON`` with
``DATABASE_URL`` set to a scratch SQLite file and ``REDIS_URL`` set or empty (the layer
under test). OPTIONS_JSON: ``{"watchers": [1, 10, ...], "partials", "completes", "pace"
(seconds between events), "burst" (fragments per throughput run)}``. Prints, per watcher
count ``w<n>``, the partial and complete latency percentiles (ms) and
``fanout_msgs_per_s``.

Watchers are `channels.testing.WebsocketCommunicator`s on the real `SessionConsumer` in
this process (no TCP socket); the agent stamps ``time.perf_counter()`` into each event's
text as it yields it, and each watcher records receive time minus that stamp.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

import django

from agentops.runtime.model import Content, Event, Role

if TYPE_CHECKING:
    from channels.testing import WebsocketCommunicator

SESSION_ID = "bench-live"
#: Seconds a watcher waits for its next message before the run counts as stuck.
RECEIVE_TIMEOUT_S = 120

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Agent = Callable[[list[Event]], AsyncIterator[Event]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class Options(TypedDict):
    """What the parent passes (see the module docstring)."""

    watchers: list[int]
    partials: int
    completes: int
    pace: float
    burst: int


class Watcher:
    """The signed-in user of every benchmark socket: may view every session."""

    is_authenticated = True

    def has_perm(self, perm: str) -> bool:
        return True


def consumer_app() -> App:
    """An ASGI app that hands every socket to `SessionConsumer` as a `Watcher` of the
    benchmark session (what routing and auth would have put in the scope)."""
    from sessions_app.live.consumer import SessionConsumer

    consumer = SessionConsumer.as_asgi()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        scope = dict(scope, user=Watcher(), url_route={"kwargs": {"session_id": SESSION_ID}})
        await consumer(scope, receive, send)

    return app


# Frames are HTML (sessions_app.live.render); each starts with a #live-state element whose
# data- attributes say what it is. The agent's stamp is the streamed text or the event text.
FRAME_DATA = re.compile(r'data-([a-z-]+)="([^"]*)"')
STREAM_TEXT = re.compile(r'id="stream-text-[^"]*"[^>]*>([^<]*)<')
EVENT_TEXT = re.compile(r'<div class="markdown"><p>([^<]*)</p>')


def _first_group(pattern: re.Pattern[str], html: str) -> str:
    """The first group of `pattern`'s first match in a frame (the frame must hold it)."""
    match = pattern.search(html)
    if match is None:
        raise ValueError(f"frame without {pattern.pattern!r}: {html[:200]!r}")
    return match[1]


def agent_for(partials: int, completes: int, pace: float) -> Agent:
    """An agent yielding `partials` partial events, then `completes` complete ones, each
    stamped with ``time.perf_counter()``, `pace` seconds apart."""

    async def agent(context: list[Event]) -> AsyncIterator[Event]:
        for _ in range(partials):
            stamp = repr(time.perf_counter())
            yield Event(partial=True, content=Content(role=Role.ASSISTANT, text=stamp))
            if pace:
                await asyncio.sleep(pace)
        for _ in range(completes):
            yield Event(content=Content(role=Role.ASSISTANT, text=repr(time.perf_counter())))
            if pace:
                await asyncio.sleep(pace)

    return agent


async def read(
    comm: WebsocketCommunicator,
    lat_partial: list[float],
    lat_complete: list[float],
    counts: list[int],
    index: int,
) -> float:
    """Record latencies from watcher `comm` (counting its messages at `counts[index]`)
    until the turn ends; return the time it saw the end."""
    while True:
        html = await comm.receive_from(timeout=RECEIVE_TIMEOUT_S)
        now = time.perf_counter()
        frame = dict(FRAME_DATA.findall(html[: html.index(">")]))
        if frame["kind"] == "partial":
            lat_partial.append(now - float(_first_group(STREAM_TEXT, html)))
            counts[index] += 1
        elif frame["kind"] == "event" and frame["role"] == "assistant":
            lat_complete.append(now - float(_first_group(EVENT_TEXT, html)))
            counts[index] += 1
        elif frame["kind"] == "turn" and frame["status"] != "running":
            return now


async def one_run(
    app: App, watchers: int, partials: int, completes: int, pace: float
) -> tuple[list[float], list[float], int, float]:
    """One turn watched by `watchers` sockets on `app`: (partial latencies, complete latencies,
    messages delivered to all watchers, seconds until the last watcher saw the end)."""
    from channels.testing import WebsocketCommunicator

    from sessions_app import live

    comms = [WebsocketCommunicator(app, f"/ws/sessions/{SESSION_ID}/") for _ in range(watchers)]
    for comm in comms:  # one by one: the Redis pool caps concurrent connections
        connected, _ = await comm.connect()
        assert connected
    lat_partial: list[float] = []
    lat_complete: list[float] = []
    counts = [0] * watchers
    readers = [
        asyncio.create_task(read(comm, lat_partial, lat_complete, counts, i))
        for i, comm in enumerate(comms)
    ]
    start = time.perf_counter()
    await live.run_turn(
        SESSION_ID, "bench", agent=agent_for(partials, completes, pace), listen_for_cancel=False
    )
    ends = await asyncio.gather(*readers)
    elapsed = max(ends) - start
    for comm in comms:
        await comm.disconnect()
    return lat_partial, lat_complete, sum(counts), elapsed


def percentile_ms(values: list[float], q: float) -> float | None:
    """The `q`th percentile of `values` (seconds) in milliseconds, nearest rank; None
    when there are none."""
    ordered = sorted(values)
    if not ordered:
        return None
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return round(ordered[k] * 1000, 2)


async def measure(options: Options) -> dict[str, dict[str, Any]]:
    """For each watcher count: a paced latency run, then a back-to-back throughput run."""
    app = consumer_app()
    out: dict[str, dict[str, Any]] = {}
    for n in options["watchers"]:
        lat_p, lat_c, _, _ = await one_run(
            app, n, options["partials"], options["completes"], options["pace"]
        )
        out[f"w{n}"] = {
            "partial_p50_ms": percentile_ms(lat_p, 50),
            "partial_p95_ms": percentile_ms(lat_p, 95),
            "partial_p99_ms": percentile_ms(lat_p, 99),
            "complete_p50_ms": percentile_ms(lat_c, 50),
            "complete_p95_ms": percentile_ms(lat_c, 95),
            "complete_p99_ms": percentile_ms(lat_c, 99),
        }
        _, _, delivered, elapsed = await one_run(app, n, options["burst"], 0, 0)
        out[f"w{n}"]["fanout_msgs_per_s"] = round(delivered / elapsed)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """Set Django up, migrate, make the benchmark session and print `measure` as one JSON
    line; argv: ``[OPTIONS_JSON]``."""
    (options_json,) = sys.argv[1:] if argv is None else argv
    options: Options = json.loads(options_json)
    django.setup()
    from django.core.management import call_command

    from sessions_app.live.demo_live import ensure_demo_live_session

    call_command("migrate", verbosity=0)
    ensure_demo_live_session(SESSION_ID)
    print(json.dumps(asyncio.run(measure(options))))


if __name__ == "__main__":
    main()
