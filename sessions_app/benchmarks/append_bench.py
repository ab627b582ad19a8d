"""`bench append`: durable appends per second, ours beside the database's own limit and
beside google-adk, the subjects interleaved in one run.

What is measured, honestly:
- the same events (the synthetic history of `agentops.runtime.bench`: user prompts,
  assistant tool calls, tool results, answers; every 10th carries a one-key state delta),
  written to a JSON file in a temp dir; each subject appends them one committed
  transaction at a time into one session of its own scratch database, the session's turns
  running (as the Runner's are while it appends);
- the subjects are long-lived child processes (`children.append_child`, the peer's
  `children/adk_append_peer.py`) that each append the next `chunk` events on command, so
  every round runs every subject back to back (after one untimed warm-up round) and a
  ratio is taken within a round: the machine's load changes between rounds, not within
  one. Printed: per subject the median events/s; per ratio the median over rounds and
  its range (``_min``, ``_max``);
- ``sqlite_raw``: the raw per-transaction limit: the very two statements our append runs
  (the session's UPDATE, the event's INSERT; `store.append_sql`) in plain sqlite3 with our
  pragmas (WAL, synchronous=NORMAL, BEGIN IMMEDIATE), values prepared before the clock
  starts; ``sqlite``: `DjangoSessionService.append_event`; ``sqlite_live``: the same
  through `LiveSessionService` (a broadcast per event, no watcher);
- ``adk_same_pragmas``: google-adk's `DatabaseSessionService.append_event` on SQLite
  (``sqlite+aiosqlite``) with our pragmas, in its own virtual environment
  (`.local/peer-venv`, created with pip on first use);
- on PostgreSQL (DATABASE_URL a PostgreSQL URL, or ``-o pg=<url>``): ``postgres`` and
  ``postgres_raw`` (psycopg) in scratch databases created on that server and dropped
  afterwards (``-o pg_db=NAME`` names them; never the URL's own database).

Keys with ``--json`` (beside the others): ``sqlite_vs_raw_per_tx``,
``sqlite_vs_adk_same_pragmas``, ``postgres_vs_raw_per_tx``. Targets (issue 17): SQLite at
least 0.3 of raw and 10x google-adk; PostgreSQL at least 0.4 of raw.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import venv
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

from agentops.runtime.bench import synthetic_history
from sessions_app.benchmarks import Figures, register
from sessions_app.benchmarks.children import append_child

#: The peer, pinned: google-adk 2.13 runs offline (TESTING-NOTES.md).
PEER_REQUIREMENTS = ("google-adk==2.13.0", "sqlalchemy[asyncio]", "aiosqlite")
#: Targets from issue 17.
TARGETS = {"sqlite_vs_raw_per_tx": 0.3, "sqlite_vs_adk_same_pragmas": 10.0,
           "postgres_vs_raw_per_tx": 0.4}  # fmt: skip
#: The ratios printed: name -> (subject, reference subject).
RATIOS = {
    "sqlite_vs_raw_per_tx": ("sqlite", "sqlite_raw"),
    "sqlite_live_vs_raw_per_tx": ("sqlite_live", "sqlite_raw"),
    "sqlite_vs_adk_same_pragmas": ("sqlite", "adk_same_pragmas"),
    "postgres_vs_raw_per_tx": ("postgres", "postgres_raw"),
}
#: The peer's side, a standalone script run by the peer environment's python (our project
#: is not installed there, so it is run as a file, not as a module of ours).
PEER_SCRIPT = Path(__file__).resolve().parent / "children" / "adk_append_peer.py"


def write_events(path: Path, events: int) -> int:
    """Write ~`events` runtime events (JSON list of `Event` dumps, ids 0) to `path`.

    Every 10th event gets ``state_delta={"step": i}``. Returns the number written.
    """
    _, history = synthetic_history(events)
    rows = []
    for i, event in enumerate(history[:events]):
        row = event.model_dump(mode="json", exclude={"id", "created_at", "updated_at"})
        row["author"] = {"user": "user", "assistant": "bot", "tool": "tool"}[row["content"]["role"]]
        if i % 10 == 0:
            row["state_delta"] = {"step": i}
        rows.append(row)
    path.write_text(json.dumps(rows), encoding="utf-8")
    return len(rows)


class Subject:
    """A child process that appends on command (`children.append_child.commands`)."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        self.name = name
        self.process = subprocess.Popen(
            argv, cwd=settings.BASE_DIR, env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.answer()  # {"ready": true}

    def answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.process.wait(30)
            assert self.process.stderr is not None
            error = self.process.stderr.read().strip()[-2000:]
            raise RuntimeError(f"bench append ({self.name}) failed: {error}")
        result: dict[str, Any] = json.loads(line)
        return result

    def run(self, count: int) -> float:
        """Events/s appending the next `count` events."""
        assert self.process.stdin is not None
        self.process.stdin.write(f"{count}\n")
        self.process.stdin.flush()
        result = self.answer()
        return float(result["events"] / result["seconds"]) if result["seconds"] else 0.0

    def end(self) -> int:
        """Stop the child; the number of events it stored."""
        assert self.process.stdin is not None
        self.process.stdin.write("end\n")
        self.process.stdin.flush()
        stored = int(self.answer()["stored"])
        self.process.wait(60)
        return stored

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)


def _ours(name: str, kind: str, database_url: str, source: Path) -> Subject:
    env = {**os.environ, "DATABASE_URL": database_url, "AGENTOPS_LIVE_DEMO": "false"}
    env.setdefault("DJANGO_SETTINGS_MODULE", "agentops.settings")
    argv = [sys.executable, "-m", append_child.__name__, kind, str(source)]
    return Subject(name, argv, env)


def _postgres_url(pg: str | None) -> str | None:
    if pg:
        return pg
    url = os.environ.get("DATABASE_URL", "")
    return url if url.startswith(("postgres://", "postgresql://")) else None


@contextmanager
def _scratch_databases(url: str, names: list[str]) -> Iterator[list[str]]:
    """Scratch databases `names` created on `url`'s server (URLs to them); always dropped."""
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    if parts.path.lstrip("/") in names:
        raise ValueError(f"pg_db={names[0]!r} is the URL's own database; choose a scratch name")
    drops = [
        sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        for name in names
    ]
    with psycopg.connect(url, autocommit=True) as conn:  # libpq takes postgres:// URLs
        for name, drop in zip(names, drops, strict=True):
            conn.execute(drop)
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield [urlunsplit(parts._replace(path=f"/{name}")) for name in names]
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            for drop in drops:
                conn.execute(drop)


def peer_python(venv_dir: Path | None = None) -> Path:
    """The peer environment's python, creating `.local/peer-venv` with pip on first use.

    Raises RuntimeError when the environment cannot be created or google-adk not installed.
    """
    venv_dir = venv_dir or Path(settings.BASE_DIR) / ".local" / "peer-venv"
    python = venv_dir / "bin" / "python"
    probe = [str(python), "-c", "import google.adk.sessions, aiosqlite"]
    if python.exists() and subprocess.run(probe, capture_output=True, check=False).returncode == 0:
        return python
    venv.EnvBuilder(with_pip=True, clear=python.exists()).create(venv_dir)
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", *PEER_REQUIREMENTS],
        capture_output=True,
        text=True,
        check=False,
    )
    if install.returncode != 0:
        raise RuntimeError(f"installing the peer failed: {install.stderr.strip()[-2000:]}")
    return python


def _peer(python: Path, db: Path, source: Path) -> Subject:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    return Subject("adk_same_pragmas", [str(python), str(PEER_SCRIPT), str(db), str(source), "1"],
                   env)  # fmt: skip


def _kill_all(subjects: list[Subject]) -> None:
    for subject in subjects:
        subject.kill()


def _spread(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


@register("append")
def bench_append(
    events: int = 2_000,
    rounds: str = "7",
    chunk: str = "300",
    pg: str | None = None,
    pg_db: str = "agentops_bench",
    peer: str = "1",
    **_: Any,
) -> Figures:
    """Durable appends per second of every subject, interleaved (see the module).

    Options: ``--events N`` (distinct events written, default 2,000; cycled through),
    ``-o rounds=N`` (timed rounds, default 7), ``-o chunk=N`` (appends per subject per
    round, default 300), ``-o pg=<postgres url>`` (default: DATABASE_URL when it is
    PostgreSQL), ``-o pg_db=NAME`` (scratch database prefix), ``-o peer=0`` (no
    google-adk). Figures: ``<subject>_events_per_s`` (median), each ratio of `RATIOS`
    measured (median over rounds) with ``_min`` / ``_max``, the targets, events stored
    per subject (``<subject>_stored``). Raises RuntimeError when a child fails.
    """
    timed, size = int(rounds), int(chunk)
    figures: Figures = {"rounds": timed, "chunk": size}
    with tempfile.TemporaryDirectory(prefix="agentops-bench-append-") as tmp, ExitStack() as stack:
        tmpdir = Path(tmp)
        source = tmpdir / "events.json"
        figures["events"] = write_events(source, int(events))
        subjects: list[Subject] = []
        stack.callback(_kill_all, subjects)
        for name, kind in (("sqlite_raw", "raw"), ("sqlite", "ours"), ("sqlite_live", "live")):
            subjects.append(_ours(name, kind, f"sqlite:///{tmpdir / name}.sqlite3", source))
        if peer not in ("0", "false", "no"):
            subjects.append(_peer(peer_python(), tmpdir / "adk.sqlite3", source))
            figures["peer"] = PEER_REQUIREMENTS[0]
        pg_url = _postgres_url(pg)
        if pg_url:
            raw_url, ours_url = stack.enter_context(
                _scratch_databases(pg_url, [f"{pg_db}_raw", pg_db])
            )
            subjects.append(_ours("postgres_raw", "raw", raw_url, source))
            subjects.append(_ours("postgres", "ours", ours_url, source))
        rates: dict[str, list[float]] = {subject.name: [] for subject in subjects}
        for round_no in range(timed + 1):
            for subject in subjects:
                rate = subject.run(size)
                if round_no:  # round 0 warms every subject up, untimed
                    rates[subject.name].append(rate)
        for subject in subjects:
            figures[f"{subject.name}_stored"] = subject.end()
        for name, values in rates.items():
            figures[f"{name}_events_per_s"] = round(statistics.median(values))
        for ratio, (ours, reference) in RATIOS.items():
            if ours in rates and reference in rates:
                per_round = [a / b for a, b in zip(rates[ours], rates[reference], strict=True)]
                middle, low, high = _spread(per_round)
                figures[ratio] = round(middle, 3)
                figures[f"{ratio}_min"], figures[f"{ratio}_max"] = round(low, 3), round(high, 3)
        for name, target in TARGETS.items():
            figures[f"target_{name}"] = target
    return figures
