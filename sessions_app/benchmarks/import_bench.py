"""`bench import`: end-to-end import rate (parse + write) into a fresh SQLite file.

What is measured, honestly:
- a synthetic Claude Code JSONL of `events` events (turns of: user prompt, assistant
  message split over two lines (text, then tool_use), tool result, final answer) is
  written to a temp dir;
- a subprocess (`children.import_child`) with `DATABASE_URL` pointing at a new SQLite file
  in that temp dir (never the dev database) runs `migrate`, then times `import_file` (read
  + parse + one transaction of bulk inserts, same settings as production: WAL,
  synchronous=NORMAL);
- `import_file` is the real import, timed first: read, sha256, parse, each session's
  resume status worked out in memory (`writer.parsed_resume_status`), one transaction of
  bulk inserts; then, as a breakdown, parsing and the resume status are timed again on
  their own;
- as an upper limit, the parent then re-inserts the very same event rows (already
  serialised) into the same table with the `sqlite3` module's `executemany` in one
  transaction: no parsing, no ORM, no JSON encoding.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sessions_app.benchmarks import Figures, register, run_django_child
from sessions_app.benchmarks.children import import_child


def write_synthetic_claude(path: Path, events: int) -> int:
    """Write a Claude Code JSONL with about `events` events (multiple of 4); return the count.

    Timestamps start at 2025-01-01T00:00:00Z, one second apart.
    """
    base = datetime(2025, 1, 1, tzinfo=UTC)
    turns = max(1, events // 4)
    n = 0

    def stamp() -> str:
        nonlocal n
        n += 1
        return (base + timedelta(seconds=n)).isoformat().replace("+00:00", "Z")

    common = {
        "sessionId": "bench-session",
        "version": "2.0.0",
        "cwd": "/work",
        "isSidechain": False,
    }
    with path.open("w", encoding="utf-8") as out:
        for t in range(turns):
            call_id = f"toolu_bench_{t:06d}"
            msg = f"msg_bench_{t:06d}"
            lines: list[dict[str, Any]] = [
                {
                    "type": "user",
                    "uuid": f"u{t}a",
                    "timestamp": stamp(),
                    "message": {"role": "user", "content": f"Step {t}: check file {t}.py"},
                },
                {
                    "type": "assistant",
                    "uuid": f"u{t}b",
                    "timestamp": stamp(),
                    "message": {
                        "id": msg,
                        "role": "assistant",
                        "model": "bench",
                        "content": [{"type": "text", "text": f"Reading {t}.py"}],
                        "usage": {"input_tokens": 100 + t % 50, "output_tokens": 20},
                    },
                },
                {
                    "type": "assistant",
                    "uuid": f"u{t}c",
                    "timestamp": stamp(),
                    "message": {
                        "id": msg,
                        "role": "assistant",
                        "model": "bench",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": call_id,
                                "name": "Read",
                                "input": {"file_path": f"/work/{t}.py"},
                            }
                        ],
                        "stop_reason": "tool_use",
                        "usage": {"input_tokens": 100 + t % 50, "output_tokens": 40},
                    },
                },
                {
                    "type": "user",
                    "uuid": f"u{t}d",
                    "timestamp": stamp(),
                    "message": {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": call_id,
                                "content": f"def f{t}():\n    return {t}\n",
                            }
                        ],
                    },
                },
                {
                    "type": "assistant",
                    "uuid": f"u{t}e",
                    "timestamp": stamp(),
                    "message": {
                        "id": f"{msg}_b",
                        "role": "assistant",
                        "model": "bench",
                        "content": [{"type": "text", "text": f"`f{t}` returns {t}."}],
                        "stop_reason": "end_turn",
                        "usage": {"input_tokens": 160, "output_tokens": 12},
                    },
                },
            ]
            for line in lines:
                out.write(json.dumps({**common, **line}) + "\n")
    return turns * 4


def _raw_executemany(db: Path) -> tuple[int, float]:
    """Re-insert the event rows of `db` with sqlite3 executemany; return (rows, seconds)."""
    conn = sqlite3.connect(db)
    try:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(sessions_app_event)") if r[1] != "id"]
        col_list = ", ".join(cols)
        rows = conn.execute(f"SELECT {col_list} FROM sessions_app_event ORDER BY id").fetchall()
        conn.execute("DELETE FROM sessions_app_event")
        conn.commit()
        marks = ", ".join("?" for _ in cols)
        start = time.perf_counter()
        conn.execute("BEGIN")
        conn.executemany(f"INSERT INTO sessions_app_event ({col_list}) VALUES ({marks})", rows)
        conn.commit()
        return len(rows), time.perf_counter() - start
    finally:
        conn.close()


@register("import")
def bench_import(events: int = 50_000, **_: Any) -> Figures:
    """Import ~`events` synthetic Claude Code events into a temp SQLite file; see module doc.

    Returns: events, file_mb, import_s (the whole import: parse, resume status, one
    transaction of inserts), events_per_s (end to end), parse_s and resume_status_s
    (breakdown, timed apart), raw_executemany_rows, raw_executemany_s,
    raw_executemany_rows_per_s (upper limit), import_vs_raw (ratio). Raises
    RuntimeError when the subprocess fails.
    """
    with tempfile.TemporaryDirectory(prefix="agentops-bench-") as tmp:
        tmpdir = Path(tmp)
        source = tmpdir / "bench-session.jsonl"
        expected = write_synthetic_claude(source, int(events))
        db = tmpdir / "bench.sqlite3"
        child = run_django_child(import_child.__name__, [str(source)], db)
        stored = child["stats"]["events"]
        rows, raw_s = _raw_executemany(db)
        return {
            "events": stored,
            "expected_events": expected,
            "file_mb": round(source.stat().st_size / 1e6, 2),
            "import_s": round(child["import_s"], 3),
            "events_per_s": round(stored / child["import_s"]),
            "parse_s": round(child["parse_s"], 3),
            "resume_status_s": round(child["resume_status_s"], 3),
            "raw_executemany_rows": rows,
            "raw_executemany_s": round(raw_s, 3),
            "raw_executemany_rows_per_s": round(rows / raw_s) if raw_s else 0,
            "import_vs_raw": round((stored / child["import_s"]) / (rows / raw_s), 3)
            if raw_s
            else 0,
        }
