"""`bench page`: do the pages cost the same for a small and a huge session, and for a few
and many sessions? Measured over real HTTP against daphne, subjects interleaved.

Three scratch SQLite databases are built by child processes (`children.page_child`):
one session each of 100, 1,000, 10,000 and 100,000 events; 100 small sessions; 10,000
small sessions. Three daphne processes serve them. Each round then requests, as a
signed-in operator, every session page of every size (the session page, its first
lazily loaded turn-events chunk, the context page's default page, the protocol page and
the todos page) and `/sessions/` and `/turns/` on both crowds, each page's subjects in a
new random order every round. For every page the figures are the median over rounds of
the larger subject's time over the smaller one's (the ratio is taken per round, so a
slow moment of the machine hits both), its range, and each subject's median time (ms,
request sent to last body byte). The ratio keys name the default sizes;
`--quick` measures 100 / 1,000 / 10,000 events and 100 / 1,000 sessions instead, and
the same keys then compare those largest sizes (`largest_events`, `largest_sessions`
say which).

After one untimed warm-up request per subject, the bench waits until each context page is
ready: a long session's first view starts its background pass (`pages.context_background`)
in the server that serves every size, which would slow all of them while it runs; `bench
big` times that first view.
"""

from __future__ import annotations

import random
import statistics
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from sessions_app.benchmarks import Figures, register, run_django_child
from sessions_app.benchmarks.children import page_child
from sessions_app.benchmarks.http_server import context_ready_after, get, serve

SIZES = (100, 1_000, 10_000, 100_000)
CROWDS = (100, 10_000)
QUICK_SIZES = (100, 1_000, 10_000)
QUICK_CROWDS = (100, 1_000)

#: Session pages by figure name (`{sid}`: the session, `{turn}`: a turn on its last page).
SESSION_PAGES = {
    "session_page": "/sessions/{sid}/",
    "turn_events_chunk": "/sessions/{sid}/turns/{turn}/events/",
    "context_page": "/sessions/{sid}/context/",
    "protocol_page": "/sessions/{sid}/protocol/",
    "todos_page": "/sessions/{sid}/todos/",
}
CROWD_PAGES = {"sessions_list": "/sessions/", "turns_page": "/turns/"}


def _label(number: int) -> str:
    return f"{number // 1000}k" if number >= 1000 else str(number)


def _time(port: int, path: str, cookie: str, htmx: bool) -> float:
    result = get(port, path, cookie, {"HX-Request": "true"} if htmx else None)
    if result["status"] != 200:
        raise RuntimeError(f"GET {path} answered {result['status']}")
    return float(result["total_ms"])


def _summarise(
    figures: Figures, key: str, times: dict[int, list[float]], sizes: tuple[int, ...]
) -> None:
    small, large = sizes[0], sizes[-1]
    ratios = [big / little for big, little in zip(times[large], times[small], strict=True)]
    name, unit = key.split("_ratio_")[0], "_sessions" if key.endswith("_sessions") else ""
    figures[key] = round(statistics.median(ratios), 2)
    figures[f"{key}_range"] = [round(min(ratios), 2), round(max(ratios), 2)]
    for size in sizes:
        figures[f"{name}_{_label(size)}{unit}_median_ms"] = round(statistics.median(times[size]), 1)


@register("page")
def bench_page(rounds: int | str = 5, quick: bool = False, pages: str = "", **_: Any) -> Figures:
    """Build, serve and time the pages (module docstring). Returns per page the median
    ratio of the largest subject to the smallest (`<page>_ratio_<large>_vs_<small>`,
    `..._range`) and each subject's median ms; `build_s` per database. `pages` (``-o
    pages=turns_page,sessions_list``) times only the pages named (all when empty); the
    session of each size is built only when a session page is named. Raises RuntimeError
    when a child, a server or a request fails, or a page name is unknown."""
    sizes, crowds = (QUICK_SIZES, QUICK_CROWDS) if quick else (SIZES, CROWDS)
    rounds = int(rounds)
    named = {name for name in pages.split(",") if name}
    unknown = named - set(SESSION_PAGES) - set(CROWD_PAGES)
    if unknown:
        raise RuntimeError(f"unknown page {sorted(unknown)[0]!r} (-o pages=...)")
    session_pages = {p: path for p, path in SESSION_PAGES.items() if not named or p in named}
    crowd_pages = {p: path for p, path in CROWD_PAGES.items() if not named or p in named}
    figures: Figures = {
        "rounds": rounds,
        "largest_events": sizes[-1],
        "largest_sessions": crowds[-1],
    }
    with tempfile.TemporaryDirectory(prefix="agentops-bench-page-") as tmp, ExitStack() as stack:
        folder = Path(tmp)
        builds = {"sized": run_django_child(
            page_child.__name__, ["sized", *map(str, sizes)], folder / "sized.sqlite3"
        )} if session_pages else {}  # fmt: skip
        for crowd in crowds if crowd_pages else ():
            builds[f"crowd{crowd}"] = run_django_child(
                page_child.__name__, ["crowd", str(crowd)], folder / f"crowd{crowd}.sqlite3"
            )
        ports = {}
        for name in builds:
            figures[f"build_{name}_s"] = builds[name]["build_s"]
            port, _server = stack.enter_context(
                serve(folder / f"{name}.sqlite3", folder / f"{name}.log")
            )
            ports[name] = port
        sized = builds.get("sized", {})
        subjects: dict[str, dict[int, tuple[int, str, str, bool]]] = {}
        for page, pattern in session_pages.items():
            subjects[page] = {
                size: (
                    ports["sized"],
                    pattern.format(
                        sid=sized["sessions"][str(size)], turn=sized["chunk_turns"][str(size)]
                    ),
                    sized["cookie"],
                    "chunk" in page,
                )
                for size in sizes
            }
        for page, path in crowd_pages.items():
            subjects[page] = {
                crowd: (ports[f"crowd{crowd}"], path, builds[f"crowd{crowd}"]["cookie"], False)
                for crowd in crowds
            }
        for subject in subjects.values():  # warm: templates, caches, the first connection
            for port, path, cookie, htmx in subject.values():
                _time(port, path, cookie, htmx)
        for port, path, cookie, _htmx in subjects.get("context_page", {}).values():
            # A long session's first view starts its context's background pass: timed
            # once it is done (`bench big` times the first view), not while it runs.
            context_ready_after(port, path, cookie)
        times: dict[str, dict[int, list[float]]] = {
            page: {size: [] for size in subject} for page, subject in subjects.items()
        }
        shuffle = random.Random(20261201)
        for _round in range(rounds):
            for page, subject in subjects.items():
                order = list(subject)
                shuffle.shuffle(order)
                for size in order:
                    times[page][size].append(_time(*subject[size]))
    for page in session_pages:
        _summarise(figures, f"{page}_ratio_100k_vs_100", times[page], sizes)
    for page in crowd_pages:
        _summarise(figures, f"{page}_ratio_10k_vs_100_sessions", times[page], crowds)
    return figures
