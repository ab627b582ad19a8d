"""`bench import`'s child: the import against a raw executemany of the same rows,
interleaved, and the import's peak memory.

Usage: ``python -m sessions_app.benchmarks.children.import_child PATH ROUNDS`` with
``DATABASE_URL`` set to a scratch SQLite file. Migrates it, then:

1. resets the process's peak resident size (`/proc/self/clear_refs`), imports PATH with
   `import_file` (timed) and reads the peak (`VmHWM`) against the resident size before;
2. reads back every row the import wrote in every table it wrote (session, turns,
   events, the imported-file record: `TABLES`), deletes them, and times inserting the
   very same rows with the `sqlite3` module's `executemany` on the same connection (so
   the same pragmas: WAL, synchronous=NORMAL, foreign keys, the search triggers), one
   transaction, no parsing, no adapting, no ORM;
3. repeats (delete, import, delete, raw) for ROUNDS rounds, import and raw alternating.

Prints ``{"import_s": [...], "raw_s": [...], "rows": {table: n}, "peak_rss_bytes",
"stats"}``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import django

#: The tables an import of a Claude Code file without todos writes, in insert order.
TABLES = (
    "sessions_app_session",
    "sessions_app_turn",
    "sessions_app_event",
    "sessions_app_importedfile",
)


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _clear() -> None:
    from sessions_app.ingest.writer import delete_sessions
    from sessions_app.models import ImportedFile, Session

    delete_sessions(list(Session.objects.values_list("id", flat=True)))
    ImportedFile.objects.all().delete()


def _read_rows(raw: Any) -> dict[str, tuple[str, list[tuple[Any, ...]]]]:
    """table -> (INSERT statement, rows) of what the import wrote; integer primary keys
    are left to the database, as the import leaves them."""
    out: dict[str, tuple[str, list[tuple[Any, ...]]]] = {}
    for table in TABLES:
        info = raw.execute(f'PRAGMA table_info("{table}")').fetchall()
        columns = [c[1] for c in info if not (c[5] and c[2].upper() == "INTEGER")]
        names = ", ".join(f'"{c}"' for c in columns)
        rows = raw.execute(f'SELECT {names} FROM "{table}" ORDER BY rowid').fetchall()
        marks = ", ".join("?" for _ in columns)
        out[table] = (f'INSERT INTO "{table}" ({names}) VALUES ({marks})', rows)
    return out


def measure(path: Path, rounds: int) -> dict[str, Any]:
    """See the module doc."""
    from django.core.management import call_command
    from django.db import connection

    from sessions_app.ingest import import_file

    call_command("migrate", verbosity=0)
    connection.ensure_connection()
    raw = connection.connection
    import_s: list[float] = []
    raw_s: list[float] = []
    peak = 0
    stats: dict[str, int] = {}
    rows: dict[str, tuple[str, list[tuple[Any, ...]]]] = {}
    for round_number in range(rounds):
        _clear()
        if round_number == 0:
            Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
            before = _status_kb("VmRSS")
        started = time.perf_counter()
        report = import_file(path)
        import_s.append(time.perf_counter() - started)
        if round_number == 0:
            peak = (_status_kb("VmHWM") - before) * 1024
            stats = report.stats
            rows = _read_rows(raw)
        _clear()
        started = time.perf_counter()
        raw.execute("BEGIN IMMEDIATE")
        for sql, values in rows.values():
            raw.executemany(sql, values)
        raw.execute("COMMIT")
        raw_s.append(time.perf_counter() - started)
    return {
        "import_s": import_s,
        "raw_s": raw_s,
        "rows": {table: len(values) for table, (_sql, values) in rows.items()},
        "peak_rss_bytes": peak,
        "stats": stats,
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Set Django up and print `measure(PATH, ROUNDS)` as one JSON line; argv:
    ``[PATH, ROUNDS]``."""
    path, rounds = sys.argv[1:] if argv is None else argv
    django.setup()
    print(json.dumps(measure(Path(path), int(rounds))))


if __name__ == "__main__":
    main()
