"""Transcript import: format detection, one parser per format, and `import_file`.

Formats (shared/corpus/README.md, README "Import formats"): Claude Code JSONL, Codex CLI
rollout JSONL, Google ADK session JSON (snake_case and camelCase) and `DatabaseSessionService`
databases (SQLite file or PostgreSQL URL, schemas v0 and v1), Anthropic Messages lists,
OpenAI chat-completions message lists (bare list or SWE-agent trajectory), OpenAI
Responses-API item lists, OpenAI Agents SDK RunState, and our own session export
(`agentops.session-export/1`).

Where things are: `formats/` (one parser module per format, registered in detection
order with `registry`), `detect` (which format a file is in), `parsed` (the normalised
form every parser returns), `builder` (the turn rules parsers share), `normalise`
(reading helpers: times, JSON Lines, arguments, todos), `ids` (ids a URL can carry),
`redaction` (credentials out before anything is stored), `files` (`parse_file`,
`import_file`), `replace` (what an import replaces), `summary` (`ImportReport`), and
`writer` (stores one parsed session).
"""

from __future__ import annotations

from sessions_app.ids import session_id_problem, turn_id_problem
from sessions_app.ingest.detect import detect_format, undetectable_reason
from sessions_app.ingest.errors import ImportRefusedError, UnknownFormatError
from sessions_app.ingest.files import (
    gc_paused,
    import_database_url,
    import_file,
    parse_file,
    transcript_files,
)
from sessions_app.ingest.formats.adk_database import is_database_url
from sessions_app.ingest.parsed import (
    ImportProblem,
    ParsedEvent,
    ParsedSession,
    ParsedTodo,
    ParsedTurn,
    ParseResult,
)
from sessions_app.ingest.registry import registered_formats
from sessions_app.ingest.summary import ImportReport, summary_line
from sessions_app.ingest.writer import write_parsed_session

#: Every format name `import_file` takes (`Session.SourceFormat` values), in detection order.
FORMATS: tuple[str, ...] = tuple(f.name for f in registered_formats())

__all__ = [
    "FORMATS",
    "ImportProblem",
    "ImportRefusedError",
    "ImportReport",
    "ParseResult",
    "ParsedEvent",
    "ParsedSession",
    "ParsedTodo",
    "ParsedTurn",
    "UnknownFormatError",
    "detect_format",
    "gc_paused",
    "import_database_url",
    "import_file",
    "is_database_url",
    "parse_file",
    "session_id_problem",
    "summary_line",
    "transcript_files",
    "turn_id_problem",
    "undetectable_reason",
    "write_parsed_session",
]
