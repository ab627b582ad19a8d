"""`bench live`'s child: real websocket watchers of a real daphne server running turns.

Usage: ``python -m sessions_app.benchmarks.children.live_child OPTIONS_JSON`` with
``DATABASE_URL`` set to a scratch SQLite file and ``REDIS_URL`` set or empty (the channel
layer under test; the daphne server it starts gets the same environment). OPTIONS_JSON:
``{"watchers": [10, 100, 1000], "rounds", "steps", "partials", "pace"}``.

This process migrates, makes a superuser and two sessions, starts ``daphne`` on the
scratch database with the benchmark agent (`live_agent`), and for each watcher count:

- opens that many websockets (the ``websockets`` package, each with a sign-in of its own,
  as that many people would, of an operator; with an ``Origin``; each with ``?after=<last
  event id>`` as the page connects) on the *watched* session;
- runs `rounds` pairs of turns through the page's own POST ``/sessions/<id>/run/``: one
  on the *alone* session (no watcher) and one on the watched session, the order
  alternating (interleaved); a turn's duration is its stored ``finished_at - started_at``
  (the server's own clock);
- each watcher reads every frame as the page would, noting for each ``t=<stamp>`` of the
  agent (fragments and stored events) the delay until it arrived, which stored events of
  the turn it got, and the turn's end; a socket closed with 4429 (too far behind)
  reconnects with ``?after=<last id>&turns=...`` like the page, and is counted as resumed;
- after the turn, a stored event of the turn (or its end) that a watcher never got, live
  or by resuming, is counted as dropped.

Prints one JSON object: per watcher count ``w<n>``: ``turn_slowdown`` (median over rounds
of the watched turn's duration over the alone one's of the same round) and its range,
the durations, latency percentiles in ms (all stamps; fragments; stored events),
``dropped``, ``resumed``, ``fragments_shown`` (the share of fragment stamps shown: a
server that fell behind joins fragments and skips those its stored event replaces),
``server_rss_mb`` (VmRSS of daphne with the watchers connected) and ``server_peak_rss_mb``
(VmHWM), ``server_cpu_s_per_turn`` (daphne's CPU time per pair of turns) and
``client_cpu_share`` (this process's CPU time over the wall time, where 1.0 would mean the
watchers' process was the limit).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import django

WATCHED = "bench-watched"
ALONE = "bench-alone"
AGENT = "sessions_app.benchmarks.children.live_agent.make_agent"
CLOSE_BEHIND = 4429
#: How many sockets open at once while connecting, and how often one is tried (daphne
#: drops a handshake the application has not accepted within 5 s, as under a burst).
CONNECTING_AT_ONCE = 20
CONNECT_TRIES = 5

FRAME_START = '<span id="live-state"'
HEAD = re.compile(r'data-([a-z-]+)="([^"]*)"')
STAMP = re.compile(r"t=(\d+\.\d+)")


class Tally:
    """What every watcher saw, per turn id."""

    def __init__(self) -> None:
        self.partial_ms: list[float] = []
        self.complete_ms: list[float] = []
        self.partial_stamps = 0
        self.ended: dict[str, int] = defaultdict(int)
        self.ended_all: dict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.resumed = 0
        self.retried = 0  # handshakes tried again
        self.watchers = 0

    def end(self, turn_id: str) -> None:
        self.ended[turn_id] += 1
        if self.ended[turn_id] >= self.watchers:
            self.ended_all[turn_id].set()


class Watcher:
    """One websocket watching the watched session, resuming like the page."""

    def __init__(self, url: str, cookie: str, tally: Tally, after: int) -> None:
        self.ws_url = f"ws://{url.removeprefix('http://')}/ws/sessions/{WATCHED}/"
        self.headers = {"Cookie": cookie, "Origin": url}
        self.tally = tally
        self.last_id = after
        self.running: set[str] = set()
        self.seen_end: set[str] = set()
        self.events: dict[str, set[int]] = defaultdict(set)  # stored event ids, per turn
        self.socket: Any = None
        self.reader: asyncio.Task[None] | None = None
        self.closing = False

    async def connect(self) -> None:
        import websockets

        query = f"?after={self.last_id}"
        if self.running:
            query += "&turns=" + ",".join(sorted(self.running))
        for attempt in range(1, CONNECT_TRIES + 1):
            try:
                self.socket = await websockets.connect(
                    self.ws_url + query, additional_headers=self.headers, open_timeout=120,
                    max_queue=None,
                )  # fmt: skip
                break
            except (OSError, websockets.InvalidHandshake, websockets.InvalidMessage):
                if attempt == CONNECT_TRIES:
                    raise
                self.tally.retried += 1
                await asyncio.sleep(attempt)
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for text in self.socket:
                message = text if isinstance(text, str) else text.decode()
                # A server that fell behind joins frames in one message, each beginning
                # with its state element (as static/live.js reads them).
                for frame in message.split(FRAME_START)[1:]:
                    self._frame(FRAME_START + frame)
        except ConnectionClosed:
            pass
        code = self.socket.close_code
        if self.closing:
            return
        if code == CLOSE_BEHIND:
            self.tally.resumed += 1
            await asyncio.sleep(0.5 + random.random())  # as static/live.js does
            await self.connect()

    def _frame(self, text: str) -> None:
        now = time.monotonic()
        head = dict(HEAD.findall(text[: text.index(">")]))
        self.last_id = int(head.get("last-id", self.last_id))
        kind = head.get("kind")
        if kind == "partial":
            stamps = set(STAMP.findall(text))
            self.tally.partial_stamps += len(stamps)
            self.tally.partial_ms.extend((now - float(s)) * 1000 for s in stamps)
        elif kind == "event":
            self.events[head.get("turn-id", "")].add(int(head["event-id"]))
            if head.get("role") == "assistant":
                self.tally.complete_ms.extend(
                    (now - float(s)) * 1000 for s in set(STAMP.findall(text))
                )
        elif kind == "turn":
            turn_id = head.get("turn-id", "")
            if head.get("status") == "running":
                self.running.add(turn_id)
            else:
                self.running.discard(turn_id)
                if turn_id not in self.seen_end:
                    self.seen_end.add(turn_id)
                    self.tally.end(turn_id)

    async def close(self) -> None:
        self.closing = True
        if self.socket is not None:
            await self.socket.close()
        if self.reader is not None:
            await asyncio.gather(self.reader, return_exceptions=True)


def _proc_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM (kB) and CPU ticks of process `pid`."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in {"VmRSS", "VmHWM"}:
            out[name] = int(value.split()[0])
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    out["ticks"] = int(fields[11]) + int(fields[12])
    return out


def _turn_seconds(turn_id: str) -> float:
    from sessions_app.models import Turn

    started, finished = Turn.objects.filter(pk=turn_id).values_list("started_at", "finished_at")[0]
    return float((finished - started).total_seconds()) if finished else float("nan")


def _turn_finished(turn_id: str) -> bool:
    from sessions_app.models import Turn

    return Turn.objects.filter(pk=turn_id).exclude(status="running").exists()


def _event_ids(turn_id: str) -> set[int]:
    from sessions_app.models import Event

    return set(Event.objects.filter(turn_id=turn_id).values_list("id", flat=True))


def _last_event_id(session_id: str) -> int:
    from sessions_app.live import last_event_id

    return last_event_id(session_id)


def _percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 1)


class Bench:
    """The server under test and the HTTP client that starts its turns."""

    def __init__(
        self, url: str, cookie: str, sign_ins: list[str], pid: int, options: dict[str, Any]
    ) -> None:
        self.url, self.cookie, self.pid, self.options = url, cookie, pid, options
        self.sign_ins = sign_ins  # the watchers' cookies
        self.message = (
            f"bench steps={options['steps']} partials={options['partials']} pace={options['pace']}"
        )
        self.http: Any = None
        self.csrf = ""

    async def start_turn(self, session_id: str) -> str:
        response = await self.http.post(
            f"/sessions/{session_id}/run/",
            data={"message": self.message},
            headers={"X-CSRFToken": self.csrf, "Accept": "application/json"},
        )
        if response.status_code != 202:
            raise RuntimeError(f"run refused: {response.status_code} {response.text[:200]}")
        return str(response.json()["turn_id"])

    async def turn_alone(self) -> float:
        turn_id = await self.start_turn(ALONE)
        while not _turn_finished(turn_id):
            await asyncio.sleep(0.05)
        return _turn_seconds(turn_id)

    async def turn_watched(
        self, tally: Tally, sockets: list[Watcher], limit: float
    ) -> tuple[float, int]:
        """Run a watched turn; returns (its duration, how many of its stored events and
        its end the watchers never got, summed over watchers)."""
        turn_id = await self.start_turn(WATCHED)
        try:
            await asyncio.wait_for(tally.ended_all[turn_id].wait(), limit)
        except TimeoutError:
            pass
        while not _turn_finished(turn_id):
            await asyncio.sleep(0.05)
        expected = _event_ids(turn_id)
        missing = sum(len(expected - w.events.get(turn_id, set())) for w in sockets)
        missing += sum(turn_id not in w.seen_end for w in sockets)
        return _turn_seconds(turn_id), missing

    async def count(self, watchers: int) -> dict[str, Any]:
        """Figures for one watcher count (module docstring)."""
        tally = Tally()
        tally.watchers = watchers
        after = _last_event_id(WATCHED)
        sockets = [Watcher(self.url, self.sign_ins[i], tally, after) for i in range(watchers)]
        gate = asyncio.Semaphore(CONNECTING_AT_ONCE)

        async def open_one(watcher: Watcher) -> None:
            async with gate:
                await watcher.connect()

        start = time.monotonic()
        await asyncio.gather(*(open_one(w) for w in sockets))
        connect_s = time.monotonic() - start
        await asyncio.sleep(1)  # the catch-ups are sent
        before = _proc_status(self.pid)
        client_before, wall_before = os.times(), time.monotonic()
        alone: list[float] = []
        watched: list[float] = []
        dropped = 0
        expected_s = self.options["steps"] * (self.options["partials"] + 1) * self.options["pace"]
        for round_no in range(self.options["rounds"]):
            for subject in ("alone", "watched") if round_no % 2 == 0 else ("watched", "alone"):
                if subject == "alone":
                    alone.append(await self.turn_alone())
                else:
                    limit = 20 * expected_s + 30
                    seconds, missing = await self.turn_watched(tally, sockets, limit)
                    watched.append(seconds)
                    dropped += missing
        after_status = _proc_status(self.pid)
        client_after, wall_after = os.times(), time.monotonic()
        await asyncio.gather(*(w.close() for w in sockets))
        ratios = [w / a for w, a in zip(watched, alone, strict=True)]
        every = tally.partial_ms + tally.complete_ms
        expected_fragments = (
            self.options["rounds"] * self.options["steps"] * self.options["partials"] * watchers
        )
        client_cpu = (client_after.user + client_after.system) - (
            client_before.user + client_before.system
        )
        ticks = os.sysconf("SC_CLK_TCK")
        return {
            "turn_slowdown": round(statistics.median(ratios), 3),
            "turn_slowdown_range": [round(min(ratios), 3), round(max(ratios), 3)],
            "turn_alone_s": round(statistics.median(alone), 3),
            "turn_watched_s": round(statistics.median(watched), 3),
            "p50_ms": _percentile(every, 0.50),
            "p95_ms": _percentile(every, 0.95),
            "p99_ms": _percentile(every, 0.99),
            "fragment_p95_ms": _percentile(tally.partial_ms, 0.95),
            "stored_event_p95_ms": _percentile(tally.complete_ms, 0.95),
            "dropped": dropped,
            "resumed": tally.resumed,
            "fragments_shown": round(tally.partial_stamps / expected_fragments, 3),
            "connect_s": round(connect_s, 1),
            "connect_retries": tally.retried,
            "server_rss_mb": round(after_status["VmRSS"] / 1024, 1),
            "server_peak_rss_mb": round(after_status["VmHWM"] / 1024, 1),
            "server_cpu_s_per_turn": round(
                (after_status["ticks"] - before["ticks"]) / ticks / self.options["rounds"], 2
            ),
            "client_cpu_share": round(client_cpu / (wall_after - wall_before), 2),
        }

    async def run(self) -> dict[str, Any]:
        import httpx

        name, _, value = self.cookie.partition("=")
        headers = {"Origin": self.url, "Referer": self.url + "/"}
        async with httpx.AsyncClient(
            base_url=self.url, headers=headers, cookies={name: value}, timeout=120
        ) as http:
            self.http = http
            (await http.get(f"/sessions/{WATCHED}/")).raise_for_status()
            self.csrf = http.cookies.get("csrftoken") or ""
            await self.turn_alone()  # warm up: the first turn loads the agent and templates
            out: dict[str, Any] = {"server_idle_rss_mb": _proc_status(self.pid)["VmRSS"] // 1024}
            for watchers in self.options["watchers"]:
                out[f"w{watchers}"] = await self.count(watchers)
            return out


def _sign_in(user: Any) -> str:
    """A `Cookie` value of a new sign-in of `user`."""
    from django.conf import settings
    from django.test import Client

    web = Client()
    web.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={web.cookies[settings.SESSION_COOKIE_NAME].value}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main(argv: Sequence[str] | None = None) -> None:
    """Set Django up, migrate, start daphne, print the figures as one JSON line; argv:
    ``[OPTIONS_JSON]``."""
    (raw,) = sys.argv[1:] if argv is None else argv
    options = json.loads(raw)
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # short reads between rounds
    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    from sessions_app.live.demo_live import ensure_demo_live_session
    from sessions_app.roles import OPERATORS

    call_command("migrate", verbosity=0)
    for session_id in (WATCHED, ALONE):
        ensure_demo_live_session(session_id)
    admin = User.objects.create_superuser("bench-admin", password="pw-bench-admin-1")
    operator = User.objects.create_user("bench-operator", password="pw-bench-operator-1")
    operator.groups.add(Group.objects.get_or_create(name=OPERATORS)[0])
    sign_ins = [_sign_in(operator) for _ in range(max(options["watchers"], default=0))]
    port = _free_port()
    env = {
        **os.environ, "PORT": str(port), "AGENTOPS_LIVE_DEMO": "false", "AGENTOPS_AGENT": AGENT,
    }  # fmt: skip
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    log = Path(os.environ["DATABASE_URL"].removeprefix("sqlite:///")).with_suffix(".log")
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
             "agentops.asgi:application"],
            env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"daphne did not start: {log.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}"
        bench = Bench(url, _sign_in(admin), sign_ins, server.pid, options)
        print(json.dumps(asyncio.run(bench.run())))
    except BaseException:
        sys.stderr.write(log.read_text()[-3000:])
        raise
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
