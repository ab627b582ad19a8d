"""`bench import`'s child: time `import_file` on one transcript, then parsing and the
resume status apart.

Usage: ``python -m sessions_app.benchmarks.children.import_child PATH`` with
``DATABASE_URL`` set to a scratch SQLite file. Prints ``{"import_s", "parse_s",
"resume_status_s", "stats"}`` (seconds; `stats` as `ImportReport.stats`).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import django


def measure(path: Path) -> dict[str, Any]:
    """Migrate the scratch database, import `path` (timed), then time parsing it and
    working out each parsed session's resume status (as the import does, GC paused)."""
    from django.core.management import call_command

    from sessions_app.ingest import gc_paused, import_file, parse_file
    from sessions_app.ingest.writer import parsed_resume_status

    call_command("migrate", verbosity=0)
    t0 = time.perf_counter()
    report = import_file(path)
    t1 = time.perf_counter()
    result = parse_file(path)
    t2 = time.perf_counter()
    with gc_paused():  # as in the import
        for parsed in result.sessions:
            parsed_resume_status(parsed)
    t3 = time.perf_counter()
    return {
        "import_s": t1 - t0,
        "parse_s": t2 - t1,
        "resume_status_s": t3 - t2,
        "stats": report.stats,
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Set Django up and print `measure(PATH)` as one JSON line; argv: ``[PATH]``."""
    (path,) = sys.argv[1:] if argv is None else argv
    django.setup()
    print(json.dumps(measure(Path(path))))


if __name__ == "__main__":
    main()
