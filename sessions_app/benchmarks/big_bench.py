"""`bench big`: server memory and response times on a 1,000,000-event session, over HTTP.

A child process (`children.big_child`) migrates a scratch SQLite file (never the dev
database) and stores one session of `events` events (completed turns of 20: a prompt,
nine tool calls with their results, an answer) with the import writer's `executemany`.
Then daphne serves that database in a subprocess, and the session page, the
next-context page (its default, last page), the tool-protocol page and the export are
requested one after the other over real HTTP as a signed-in operator. For each:
time to the first body byte and to the last (ms), bytes, and the server's peak resident
memory above idle (MB; `/proc/<pid>/status` VmHWM, reset before each request through
`/proc/<pid>/clear_refs`). Targets: under 300 MB above idle, first byte under 1 s.
The context page's first view of a freshly built session answers a "working it out" page
and reads the events in the background (`sessions_app.pages.context_background`):
`context_ready_s` is the time until the page is ready, `context_page_ready_*` that
view's figures, and the memory figure covers the background pass.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from sessions_app.benchmarks import Figures, register, run_django_child
from sessions_app.benchmarks.children import big_child
from sessions_app.benchmarks.http_server import context_ready_after, get, serve

PAGES = {
    "session_page": "/sessions/{sid}/",
    "context_page": "/sessions/{sid}/context/",
    "protocol_page": "/sessions/{sid}/protocol/",
    "export": "/sessions/{sid}/export/",
}


def _memory_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for process {pid}")


def _reset_peak(pid: int) -> None:
    # Writing 5 resets VmHWM to the current resident size (Linux >= 4.0).
    Path(f"/proc/{pid}/clear_refs").write_text("5")


@register("big")
def bench_big(events: int = 1_000_000, **_: Any) -> Figures:
    """Serve one generated `events`-event session and measure its pages (module docstring).

    Returns events, turns, build_s, idle_rss_mb and per page `<page>_status`,
    `<page>_first_byte_ms`, `<page>_total_ms`, `<page>_bytes` and `<page>_rss_above_idle_mb`.
    Raises RuntimeError when the child or the server fails.
    """
    with tempfile.TemporaryDirectory(prefix="agentops-bench-big-") as tmp:
        db = Path(tmp) / "big.sqlite3"
        built = run_django_child(big_child.__name__, [str(int(events))], db)
        cookie = built.pop("cookie")
        with serve(db, Path(tmp) / "daphne.log") as (port, server):
            # One small request first, so idle includes a loaded Django.
            get(port, "/sessions/", cookie)
            idle = _memory_kb(server.pid, "VmRSS")
            figures: Figures = {**built, "idle_rss_mb": round(idle / 1024, 1)}
            for name, path in PAGES.items():
                url = path.format(sid=built["session_id"])
                _reset_peak(server.pid)
                result = get(port, url, cookie)
                if name == "context_page":
                    figures["context_ready_s"] = context_ready_after(port, url, cookie)
                    result = {
                        **result,
                        **{f"ready_{k}": v for k, v in get(port, url, cookie).items()},
                    }
                peak = _memory_kb(server.pid, "VmHWM")
                for key, value in result.items():
                    figures[f"{name}_{key}"] = value
                figures[f"{name}_rss_above_idle_mb"] = round((peak - idle) / 1024, 1)
            return figures
