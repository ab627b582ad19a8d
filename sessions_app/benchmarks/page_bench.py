"""`bench page`: first-response time and query count of a 10,000-event session's pages.

A subprocess (`children.page_child`) with `DATABASE_URL` pointing at a new SQLite file
(never the dev database) migrates, writes one generated session of `events` events (turns
of 50 events: a user prompt, then assistant messages with tool calls and their results),
signs in an operator and requests, through Django's full middleware stack (test client, no
network): the session page, its first lazily loaded turn-events chunk, the
projected-context page and the tool-protocol page. Each is requested `repeat` times; the
first (cold) response time, the median of the rest, and the SQL query count of each are
reported (ms).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from sessions_app.benchmarks import Figures, register, run_django_child
from sessions_app.benchmarks.children import page_child


@register("page")
def bench_page(events: int = 10_000, repeat: int | str = 5, **_: Any) -> Figures:
    """Time the pages of one generated `events`-event session; see the module docstring.

    Returns events, turns, and per page `<page>_first_ms`, `<page>_median_ms` (wall-clock
    milliseconds in-process) and `<page>_queries`. Raises RuntimeError when the
    subprocess fails.
    """
    with tempfile.TemporaryDirectory(prefix="agentops-bench-") as tmp:
        db = Path(tmp) / "bench.sqlite3"
        figures: Figures = run_django_child(
            page_child.__name__, [str(int(events)), str(int(repeat))], db
        )
        return figures
