"""What an import did with one file: `ImportReport`, its totals and its one-line summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sessions_app.ingest.parsed import ImportProblem, ParseResult

#: The per-file totals of `ImportReport.stats`, in the order the summary names them.
TOTALS = (
    "sessions",
    "turns",
    "events",
    "tool_calls",
    "unanswered_calls",
    "pending_calls",
    "todo_items",
    "skipped_lines",
)


@dataclass(slots=True)
class ImportReport:
    """What `import_file` did with one file.

    `status` is "imported", "already imported" or "refused" (strict mode and problems);
    `stats` holds per-file totals (sessions, turns, events, tool_calls, unanswered_calls,
    pending_calls, todo_items, skipped_lines); `replaced` lists the ids of sessions that
    existed before and were replaced. `path` is the file (or the database URL without
    its password).
    """

    path: Path | str
    source_format: str
    status: str
    problems: list[ImportProblem] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    session_ids: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)


def file_totals(result: ParseResult) -> dict[str, int]:
    """The `TOTALS` of a parsed file: `ParsedSession.stats` summed over its sessions, the
    session count, and `skipped_lines` (one per problem)."""
    totals = dict.fromkeys(TOTALS[:-1], 0)
    for parsed in result.sessions:
        totals["sessions"] += 1
        for key, value in parsed.stats().items():
            totals[key] += value
    totals["skipped_lines"] = len(result.problems)
    return totals


def summary_line(report: ImportReport) -> str:
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
