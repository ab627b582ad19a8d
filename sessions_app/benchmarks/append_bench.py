"""`bench append`: durable append rate of the Django store, beside google-adk's.

What is measured, honestly:
- the same `events` events (the synthetic history of `agentops.runtime.bench`: user
  prompts, assistant tool calls, tool results, answers; every 10th carries a one-key
  state delta) are written to a JSON file in a temp dir;
- ours: a subprocess (`children.append_child`) with `DATABASE_URL` pointing at a new
  SQLite file in that temp dir (production settings: WAL, synchronous=NORMAL, BEGIN
  IMMEDIATE) runs `migrate`, creates one session and times
  `DjangoSessionService.append_event` for every event, one call (one transaction,
  committed) at a time, as the Runner does;
- the same on PostgreSQL when DATABASE_URL is a PostgreSQL URL or ``-o pg=<url>`` is
  given: in a scratch database (``agentops_bench``, or ``-o pg_db=NAME``) created on that
  server and dropped afterwards (never the database of the URL itself);
- the peer: google-adk's `DatabaseSessionService.append_event` on a SQLite file in the
  same temp dir (``sqlite+aiosqlite``), run by a standalone script
  (`children/adk_append_peer.py`) in its own virtual environment (`.local/peer-venv`,
  created with pip on first use), once with the peer's defaults (rollback journal,
  synchronous=FULL) and once with our pragmas (WAL, synchronous=NORMAL), so the ratio is
  not just a pragma difference.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import venv
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

from agentops.runtime.bench import synthetic_history
from sessions_app.benchmarks import Figures, register, run_json_process
from sessions_app.benchmarks.children import append_child

#: The peer, pinned: google-adk 2.13 runs offline (TESTING-NOTES.md).
PEER_REQUIREMENTS = ("google-adk==2.13.0", "sqlalchemy[asyncio]", "aiosqlite")
#: Targets from the issue.
TARGET_SQLITE_EVENTS_PER_S = 2_000
TARGET_RATIO = 5.0
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


def _ours(database_url: str, source: Path, warmup: int) -> dict[str, Any]:
    env = {**os.environ, "DATABASE_URL": database_url}
    env.setdefault("DJANGO_SETTINGS_MODULE", "agentops.settings")
    return run_json_process(
        [sys.executable, "-m", append_child.__name__, str(source), str(warmup)],
        env,
        f"bench append (ours on {database_url})",
    )


def _postgres_url(pg: str | None) -> str | None:
    if pg:
        return pg
    url = os.environ.get("DATABASE_URL", "")
    return url if url.startswith(("postgres://", "postgresql://")) else None


def _ours_on_postgres(url: str, scratch: str, source: Path, warmup: int) -> dict[str, Any]:
    """Run ours in a scratch database created on `url`'s server; always dropped after."""
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    if scratch == parts.path.lstrip("/"):
        raise ValueError(f"pg_db={scratch!r} is the URL's own database; choose a scratch name")
    admin_url = url  # libpq takes postgres:// and postgresql:// alike
    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(scratch))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(drop)
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(scratch)))
    try:
        scratch_url = urlunsplit(parts._replace(path=f"/{scratch}"))
        return _ours(scratch_url, source, warmup)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
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


def _peer(python: Path, db: Path, source: Path, warmup: int, wal: bool) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE",)}
    argv = [str(python), str(PEER_SCRIPT), str(db), str(source), str(warmup), "1" if wal else "0"]
    return run_json_process(argv, env, "bench append (peer" + (" WAL)" if wal else ")"))


def _rate(result: dict[str, Any]) -> int:
    return round(result["events"] / result["seconds"]) if result["seconds"] else 0


@register("append")
def bench_append(
    events: int = 5_000,
    pg: str | None = None,
    pg_db: str = "agentops_bench",
    peer: str = "1",
    warmup: str = "50",
    **_: Any,
) -> Figures:
    """Durable appends per second: ours on SQLite (and PostgreSQL), the peer on SQLite.

    Options: ``--events N`` (default 5,000), ``-o pg=<postgres url>`` (default: DATABASE_URL
    when it is PostgreSQL), ``-o pg_db=NAME`` (scratch database, default agentops_bench),
    ``-o peer=0`` (skip google-adk), ``-o warmup=N`` (untimed appends first, default 50).
    Returns events, ``sqlite_events_per_s``, ``sqlite_us_per_append``, and when measured
    ``postgres_events_per_s``, ``peer_sqlite_events_per_s``, ``peer_sqlite_wal_events_per_s``,
    ``ratio_vs_peer`` and ``ratio_vs_peer_wal`` (ours / peer on SQLite). Raises
    RuntimeError when a subprocess fails.
    """
    warm = int(warmup)
    figures: Figures = {}
    with tempfile.TemporaryDirectory(prefix="agentops-bench-append-") as tmp:
        tmpdir = Path(tmp)
        source = tmpdir / "events.json"
        count = write_events(source, int(events))
        figures["events"] = count
        ours = _ours(f"sqlite:///{tmpdir / 'ours.sqlite3'}", source, warm)
        if ours["stored"] != count + warm:
            raise RuntimeError(f"ours stored {ours['stored']} events, expected {count + warm}")
        ours_rate = _rate(ours)
        figures["sqlite_events_per_s"] = ours_rate
        figures["sqlite_us_per_append"] = round(ours["seconds"] / count * 1e6, 1)
        figures["target_sqlite_events_per_s"] = TARGET_SQLITE_EVENTS_PER_S
        pg_url = _postgres_url(pg)
        if pg_url:
            on_pg = _ours_on_postgres(pg_url, pg_db, source, warm)
            figures["postgres_events_per_s"] = _rate(on_pg)
            figures["postgres_us_per_append"] = round(on_pg["seconds"] / count * 1e6, 1)
        if peer not in ("0", "false", "no"):
            python = peer_python()
            default = _peer(python, tmpdir / "peer.sqlite3", source, warm, wal=False)
            wal = _peer(python, tmpdir / "peer-wal.sqlite3", source, warm, wal=True)
            figures["peer"] = PEER_REQUIREMENTS[0]
            figures["peer_sqlite_events_per_s"] = _rate(default)
            figures["peer_sqlite_wal_events_per_s"] = _rate(wal)
            figures["ratio_vs_peer"] = round(ours_rate / _rate(default), 2) if _rate(default) else 0
            figures["ratio_vs_peer_wal"] = round(ours_rate / _rate(wal), 2) if _rate(wal) else 0
            figures["target_ratio"] = TARGET_RATIO
    return figures
