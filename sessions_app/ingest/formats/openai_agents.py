"""OpenAI Agents SDK saved RunState (`RunState.to_json()`, schemas 1.0 to 1.19).

Format notes (shared/corpus/README.md, "openai-agents-sdk"; the SDK's `run_state.py`):
`$schemaVersion`, `current_agent{name}`, `original_input` (a string or a list of
Responses input items: the user turn), `session_items` (else `generated_items`) of run
items, `pending_input` (1.15+: input the run holds for its next model call) and
`current_step` (`next_step_interruption` with `data.interruptions[]`).

Run item types (the SDK's item deserialiser): `message_output_item`, `tool_call_item`,
`tool_call_output_item`, `reasoning_item`, `handoff_call_item`, `handoff_output_item`,
`tool_search_call_item`, `tool_search_output_item`, `mcp_list_tools_item`,
`mcp_approval_request_item`, `mcp_approval_response_item`, `compaction_item`,
`input_item` and `tool_approval_item`. Each `raw_item` is a Responses item, read by
`responses_items.ResponsesReader` (function, custom, computer, shell, apply_patch,
MCP, tool-search and `program` calls with their outputs, ...). `tool_approval_item`s and
the step's interruptions name the calls awaiting a person's approval: they go to
`Event.pending_call_ids` (pending, never shown as broken). `pending_session_write` (a
write to the SDK session that had not completed when the state was saved) is kept in the
session state and shown as a state change. Only conversation items are kept in `raw`;
the rest of the state (context, sandbox configuration with possible credentials) is
never stored.

A `$schemaVersion` newer than `NEWEST_SCHEMA` is refused (the SDK itself fails fast on
newer snapshots). The shape has no timestamps: event `i` gets `synthetic_time(i)`. The
session id is derived from the file name (`openai-agents:<name>`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sessions_app.ingest.builder import SessionBuilder
from sessions_app.ingest.errors import ImportRefusedError
from sessions_app.ingest.formats.openai_chat import file_stem
from sessions_app.ingest.formats.responses_items import ResponsesReader
from sessions_app.ingest.normalise import SyntheticClock, first_line
from sessions_app.ingest.parsed import ImportProblem, ParsedEvent, ParseResult
from sessions_app.ingest.registry import JsonDocumentFormat
from sessions_app.models import Session

#: The newest RunState schema this importer reads.
NEWEST_SCHEMA = "1.19"
_VERSION_RE = re.compile(r"^(\d{1,6})(?:\.(\d{1,6}))?$")
#: Run item wrappers whose `raw_item` is a Responses item.
RUN_ITEM_TYPES = frozenset(
    {
        "message_output_item",
        "tool_call_item",
        "tool_call_output_item",
        "reasoning_item",
        "handoff_call_item",
        "handoff_output_item",
        "tool_search_call_item",
        "tool_search_output_item",
        "mcp_list_tools_item",
        "mcp_approval_request_item",
        "mcp_approval_response_item",
        "compaction_item",
        "input_item",
    }
)


def looks_like_run_state(data: Any) -> bool:
    """True for an Agents SDK RunState document."""
    return isinstance(data, dict) and (
        "$schemaVersion" in data or ("current_agent" in data and "original_input" in data)
    )


def schema_problem(version: Any) -> str | None:
    """Why a `$schemaVersion` cannot be read (None: it can, or it is absent)."""
    if version is None:
        return None
    match = _VERSION_RE.match(str(version)) if isinstance(version, str | int | float) else None
    newest = tuple(int(p) for p in NEWEST_SCHEMA.split("."))
    if match is None:
        return f"RunState $schemaVersion {str(version)[:40]!r} is not a version like '1.13'"
    if (int(match[1]), int(match[2] or 0)) > newest:
        return (
            f"RunState $schemaVersion {version!r} is newer than the newest this importer "
            f"reads ({NEWEST_SCHEMA}); nothing was imported"
        )
    return None


def _name(value: Any, default: str) -> str:
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return str(value["name"])
    return value if isinstance(value, str) and value else default


def _pending_calls(data: dict[str, Any], items: list[Any]) -> set[str]:
    pending: set[str] = set()
    step = data.get("current_step")
    step_data = step.get("data") if isinstance(step, dict) else None
    interruptions = step_data.get("interruptions") if isinstance(step_data, dict) else None
    approvals = [i for i in items if isinstance(i, dict) and i.get("type") == "tool_approval_item"]
    for item in [*(interruptions if isinstance(interruptions, list) else []), *approvals]:
        raw_item = item.get("raw_item") if isinstance(item, dict) else None
        if isinstance(raw_item, dict):
            call_id = raw_item.get("call_id") or raw_item.get("id")
            if call_id:
                pending.add(str(call_id))
    return pending


def parse_openai_agents(path: Path, data: dict[str, Any]) -> ParseResult:
    """Parse a decoded Agents SDK RunState (see the module docstring). Raises
    `ImportRefusedError` for a schema version it cannot read."""
    name = str(path)
    problem = schema_problem(data.get("$schemaVersion"))
    if problem is not None:
        raise ImportRefusedError(path, problem)
    session_id = f"openai-agents:{file_stem(path)}"
    builder = SessionBuilder(session_id)
    agent = _name(data.get("current_agent"), "agent")
    problems: list[ImportProblem] = []
    tick = SyntheticClock()

    items = data.get("session_items") or data.get("generated_items") or []
    items = items if isinstance(items, list) else []
    reader = ResponsesReader(builder, _pending_calls(data, items))

    original = data.get("original_input")
    if isinstance(original, str):
        reader.add({"role": "user", "content": original}, tick, {"original_input": original})
    elif isinstance(original, list):
        for raw_item in original:
            if isinstance(raw_item, dict):
                reader.add(raw_item, tick, raw_item, agent)
    for index, item in enumerate(items):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "tool_approval_item":
            continue
        raw_item = item.get("raw_item") if isinstance(item, dict) else None
        if kind not in RUN_ITEM_TYPES or not isinstance(raw_item, dict):
            problems.append(ImportProblem(name, 0, f"run item {index} ({kind!r}) not read"))
            continue
        author = _name(item.get("agent"), agent)
        if not reader.add(raw_item, tick, item, author):
            problems.append(
                ImportProblem(
                    name, 0, f"run item {index}: unknown raw_item {raw_item.get('type')!r}"
                )
            )
    for raw_item in data.get("pending_input") or []:
        if isinstance(raw_item, dict):
            reader.add(raw_item, tick, {"pending_input": raw_item}, agent)
    reader.finish(tick())
    state: dict[str, Any] = {}
    pending_write = data.get("pending_session_write")
    if pending_write:
        state["pending_session_write"] = pending_write
        builder.add(
            ParsedEvent(
                role="assistant",
                created_at=tick(),
                author="session write (pending)",
                state_delta={"pending_session_write": pending_write},
                raw={"pending_session_write": pending_write},
            )
        )
    if not builder.events:
        return ParseResult(sessions=[], problems=problems)
    return ParseResult(
        sessions=[
            builder.build(
                app_name="openai-agents",
                user_id="",
                title=first_line(reader.first_prompt) or f"{agent} run state",
                state=state,
                source_format=Session.SourceFormat.OPENAI_AGENTS,
            )
        ],
        problems=problems,
    )


FORMAT = JsonDocumentFormat(
    name=Session.SourceFormat.OPENAI_AGENTS,
    looks_like=looks_like_run_state,
    parse_document=parse_openai_agents,
)
