"""`manage.py import_sessions PATH [PATH ...]`: import transcripts into the database.

A PATH is a file, a directory (walked for *.jsonl, *.json, *.db) or a PostgreSQL URL of
an ADK `DatabaseSessionService` database. Each file lands in one transaction, whole or
not at all; see `sessions_app.ingest.import_file` for re-import and replacement rules. A
refused file is reported in one line and the run goes on; the exit code is then 1.
"""

from __future__ import annotations

import sys
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from sessions_app.ingest import (
    FORMATS,
    ImportRefusedError,
    ImportReport,
    UnknownFormatError,
    import_database_url,
    import_file,
    is_database_url,
    summary_line,
    transcript_files,
    undetectable_reason,
)


def collect_files(paths: list[str]) -> list[tuple[Path, bool]]:
    """Files to import (`ingest.transcript_files`), each with `explicit` (named on the
    command line). Raises CommandError (exit code 2) for a path that does not exist."""
    try:
        return transcript_files(paths)
    except FileNotFoundError as exc:
        raise CommandError(f"{exc.args[0]}: no such file or directory", returncode=2) from None


class Command(BaseCommand):
    help = (
        "Import agent transcripts (Claude Code, Codex CLI, Google ADK sessions and "
        "databases, Anthropic Messages, OpenAI chat and Responses items, OpenAI Agents "
        "RunState, agentops exports). Directories are walked for *.jsonl/*.json/*.db; a "
        "postgresql:// URL names an ADK session database."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH", help="file, directory or URL")
        parser.add_argument(
            "--strict",
            action="store_true",
            help="refuse a whole file when any line is malformed (nothing is written)",
        )
        parser.add_argument(
            "--replace",
            action="store_true",
            help="replace sessions with the same ids that came from another source "
            "(another file, the runtime, the demo); without it such a file is refused",
        )
        parser.add_argument("--format", default="auto", choices=["auto", *FORMATS])
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        urls = [p for p in options["paths"] if is_database_url(p)]
        files = collect_files([p for p in options["paths"] if not is_database_url(p)])
        if options["format"] == "auto":
            # Every file named on the command line must be readable and in a known format
            # before anything is imported, so one bad path never leaves a half-done run.
            for path, explicit in files:
                reason = undetectable_reason(path) if explicit else None
                if reason is not None:
                    raise CommandError(f"{path}: {reason}", returncode=2)
        show = not options["no_progress"] and sys.stderr.isatty() and len(files) > 1
        refused = 0
        for url in urls:
            try:
                report = import_database_url(
                    url, strict=options["strict"], replace=options["replace"]
                )
            except UnknownFormatError as exc:
                raise CommandError(str(exc), returncode=2) from None
            except ImportRefusedError as exc:
                self.stderr.write(f"{exc} (refused)")
                refused += 1
                continue
            refused += self._report(report)
        for path, explicit in tqdm(files, disable=not show, file=sys.stderr, unit="file"):
            try:
                report = import_file(
                    path, options["format"], strict=options["strict"], replace=options["replace"]
                )
            except ImportRefusedError as exc:
                self.stderr.write(f"{exc} (refused)")
                refused += 1
                continue
            except UnknownFormatError as exc:
                if explicit:
                    raise CommandError(str(exc), returncode=2) from None
                self.stderr.write(f"{exc} (skipped)")
                continue
            except (OSError, UnicodeError) as exc:
                if explicit:
                    raise CommandError(f"{path}: cannot read ({exc})", returncode=2) from None
                self.stderr.write(f"{path}: cannot read ({exc}) (skipped)")
                continue
            refused += self._report(report)
        if refused:
            raise CommandError(
                f"{refused} file(s) refused (reasons above); nothing was written for them"
            )

    def _report(self, report: ImportReport) -> int:
        """Write a file's problems (stderr) and summary (stdout); 1 when it was refused."""
        for problem in report.problems:
            self.stderr.write(str(problem))
        self.stdout.write(summary_line(report))
        return 1 if report.status == "refused" else 0
