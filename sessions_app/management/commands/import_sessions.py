"""`manage.py import_sessions PATH [PATH ...]`: import transcripts into the database.

Each file lands in one transaction, whole or not at all; see
`sessions_app.ingest.import_file` for re-import and replacement rules.
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
    detect_format,
    import_file,
)

SUFFIXES = (".jsonl", ".json")


def collect_files(paths: list[str]) -> list[tuple[Path, bool]]:
    """Files to import, in a stable order, each with `explicit` (named on the command line).

    Directories are walked recursively for *.jsonl and *.json. Raises CommandError
    (exit code 2) for a path that does not exist.
    """
    found: list[tuple[Path, bool]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(
                (p, False) for p in sorted(path.rglob("*")) if p.is_file() and p.suffix in SUFFIXES
            )
        elif path.is_file():
            found.append((path, True))
        else:
            raise CommandError(f"{raw}: no such file or directory", returncode=2)
    return found


class Command(BaseCommand):
    help = (
        "Import agent transcripts (Claude Code, Codex CLI, Google ADK, OpenAI chat, "
        "OpenAI Agents RunState). Directories are walked for *.jsonl/*.json."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH")
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
        files = collect_files(options["paths"])
        if options["format"] == "auto":
            # Every file named on the command line must be readable and in a known format
            # before anything is imported, so one bad path never leaves a half-done run.
            for path, explicit in files:
                if not explicit:
                    continue
                try:
                    # As the import reads it: bytes that are not UTF-8 become U+FFFD.
                    text = path.read_text(encoding="utf-8", errors="replace")
                except OSError as exc:
                    raise CommandError(f"{path}: cannot read ({exc})", returncode=2) from None
                if not text.strip():
                    raise CommandError(f"{path}: the file is empty", returncode=2)
                try:
                    fmt = detect_format(path, text)
                except RecursionError:
                    raise CommandError(
                        f"{path}: JSON nested too deeply to read", returncode=2
                    ) from None
                if fmt is None:
                    raise CommandError(
                        f"{path}: unknown format (not Claude Code, Codex CLI, Google ADK, "
                        "OpenAI chat messages, Agents SDK RunState or an agentops export)",
                        returncode=2,
                    )
        show = not options["no_progress"] and sys.stderr.isatty() and len(files) > 1
        refused = 0
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
                raise CommandError(f"{path}: cannot read ({exc})", returncode=2) from None
            for problem in report.problems:
                self.stderr.write(str(problem))
            self.stdout.write(self._summary(report))
            if report.status == "refused":
                refused += 1
        if refused:
            raise CommandError(
                f"{refused} file(s) refused (reasons above); nothing was written for them"
            )

    @staticmethod
    def _summary(report: ImportReport) -> str:
        """One line: "PATH: imported (claude_code): 1 sessions, 2 turns, ..."."""
        if report.status == "already imported":
            return f"{report.path}: already imported (sessions: {', '.join(report.session_ids)})"
        s = report.stats
        figures = (
            f"{s['sessions']} sessions, {s['turns']} turns, {s['events']} events, "
            f"{s['tool_calls']} tool calls, {s['unanswered_calls']} unanswered calls, "
            f"{s['pending_calls']} pending calls, {s['todo_items']} todo items, "
            f"{s['skipped_lines']} skipped lines"
        )
        extra = f" (replaced {len(report.replaced)} existing)" if report.replaced else ""
        return f"{report.path}: {report.status} ({report.source_format}): {figures}{extra}"
