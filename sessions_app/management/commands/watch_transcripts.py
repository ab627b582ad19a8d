"""`manage.py watch_transcripts PATH [PATH ...]`: follow transcripts live (docs/interfaces.md).

Follows Claude Code (``~/.claude/projects``) and Codex CLI (``~/.codex/sessions``) folders
and files as they grow (`sessions_app.ingest.tail`): appended lines are imported as they
arrive, new files are picked up, and the session page's watchers see each event at once.
With ``--to URL --api-key KEY`` the sessions go to a remote dashboard through its HTTP API
(`sessions_app.ingest.tail_remote`) instead of this database.

No PATH: the paths of AGENTOPS_WATCH_PATHS. Exit codes: 0 after ``--once`` /
``--iterations`` or Ctrl-C; 2 for bad arguments (no path at all, --to without --api-key,
a negative idle time); a path that does not exist yet is watched until it appears.
"""

from __future__ import annotations

import hashlib
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from sessions_app.ingest.tail import Sink, TranscriptTail


def default_state_path(to: str) -> Path:
    """The state file for a destination: ``.local/watch_state.json`` for this database,
    ``.local/watch_state-<hash of URL>.json`` for a remote dashboard."""
    local = Path(settings.BASE_DIR) / ".local"
    if not to:
        return local / "watch_state.json"
    return local / f"watch_state-{hashlib.sha256(to.encode()).hexdigest()[:12]}.json"


class Command(BaseCommand):
    help = (
        "Follow Claude Code / Codex CLI transcript folders and files as they grow and "
        "record them live (here, or with --to into a remote dashboard's API)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "paths", nargs="*", metavar="PATH",
            help="file or folder to follow (default: AGENTOPS_WATCH_PATHS)",
        )  # fmt: skip
        parser.add_argument("--to", default="", metavar="URL", help="remote dashboard URL")
        parser.add_argument("--api-key", default="", metavar="KEY", help="API key for --to")
        parser.add_argument(
            "--idle-seconds", type=float, default=None, metavar="N",
            help="seconds without growth before a session's latest turn gets its outcome",
        )  # fmt: skip
        parser.add_argument("--poll", type=float, default=1.0, metavar="SECONDS")
        parser.add_argument("--once", action="store_true", help="one pass, then exit")
        parser.add_argument("--iterations", type=int, default=0, help="passes, then exit")
        parser.add_argument("--state", default="", metavar="FILE", help="offsets state file")

    def handle(self, *args: Any, **options: Any) -> None:
        to, key = str(options["to"]).rstrip("/"), str(options["api_key"])
        paths = list(options["paths"]) or list(settings.AGENTOPS_WATCH_PATHS)
        if not paths:
            raise CommandError("name a PATH or set AGENTOPS_WATCH_PATHS", returncode=2)
        if bool(to) != bool(key):
            raise CommandError("--to and --api-key go together", returncode=2)
        if options["idle_seconds"] is None:
            options["idle_seconds"] = float(settings.AGENTOPS_WATCH_IDLE_SECONDS)
        if options["idle_seconds"] < 0 or options["poll"] <= 0:
            raise CommandError("--idle-seconds must be >= 0 and --poll > 0", returncode=2)
        sink: Sink
        if to:
            from sessions_app.ingest.tail_remote import RemoteSink

            sink = RemoteSink(to, key)
        else:
            from sessions_app.ingest.tail_store import LocalSink

            sink = LocalSink()
        state = Path(options["state"]) if options["state"] else default_state_path(to)
        tail = TranscriptTail(paths, sink, idle_seconds=options["idle_seconds"], state_path=state)
        iterations = 1 if options["once"] else (options["iterations"] or None)
        where = to or "this database"
        self.stderr.write(f"watching {', '.join(paths)} into {where} (state {state})")
        try:
            tail.run(options["poll"], iterations)
        except KeyboardInterrupt:
            pass
        finally:
            tail.save_state()
            close = getattr(sink, "close", None)
            if close is not None:
                close()
