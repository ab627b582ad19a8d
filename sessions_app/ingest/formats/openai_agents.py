"""OpenAI Agents SDK saved RunState.

Format notes (shared/corpus/README.md, "openai-agents-sdk"): `original_input` (a string
or a list of input items) is the user turn; `session_items` (else `generated_items`)
hold `message_output_item`, `tool_call_item`, `tool_call_output_item`, `reasoning_item`;
`tool_approval_item`s and `current_step.data.interruptions[]` name the calls awaiting
human approval: they go to `Event.pending_call_ids` (pending, never shown as broken).
Only conversation items are kept in `raw`; the rest of the state (context, sandbox
configuration with possible credentials) is never stored.

The shape has no timestamps: event `i` gets `synthetic_time(i)` (`ingest.normalise`: the
file's modification time plus `i` seconds). The session id is derived from the file name
(`openai-agents:<name>`), so a new version of the same file replaces the old import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sessions_app.ingest.builder import SessionBuilder
from sessions_app.ingest.formats.openai_chat import file_stem, message_text
from sessions_app.ingest.normalise import first_line, normalise_arguments, synthetic_time
from sessions_app.ingest.parsed import ParsedEvent, ParseResult
from sessions_app.ingest.registry import JsonDocumentFormat
from sessions_app.models import Session


def looks_like_run_state(data: Any) -> bool:
    """True for an Agents SDK RunState document."""
    return isinstance(data, dict) and (
        "$schemaVersion" in data or ("current_agent" in data and "original_input" in data)
    )


def parse_openai_agents(path: Path, data: dict[str, Any]) -> ParseResult:
    """Parse a decoded Agents SDK RunState (see the module docstring)."""
    session_id = f"openai-agents:{file_stem(path)}"
    builder = SessionBuilder(session_id)
    agent = str((data.get("current_agent") or {}).get("name") or "agent")
    counter = 0

    def tick() -> Any:
        nonlocal counter
        counter += 1
        return synthetic_time(counter - 1)

    pending: set[str] = set()
    step = data.get("current_step") or {}
    for item in (
        ((step.get("data") or {}).get("interruptions") or []) if isinstance(step, dict) else []
    ):
        raw_item = item.get("raw_item") or {} if isinstance(item, dict) else {}
        if raw_item.get("call_id"):
            pending.add(str(raw_item["call_id"]))

    items = data.get("session_items") or data.get("generated_items") or []
    for item in items:
        if isinstance(item, dict) and item.get("type") == "tool_approval_item":
            raw_item = item.get("raw_item") or {}
            if raw_item.get("call_id"):
                pending.add(str(raw_item["call_id"]))

    call_names: dict[str, str] = {}

    def add_item(raw_item: dict[str, Any], wrapper: Any, item_author: str) -> None:
        itype = raw_item.get("type")
        role = raw_item.get("role")
        if itype == "function_call":
            call_id = str(raw_item.get("call_id") or raw_item.get("id") or "")
            call_name = str(raw_item.get("name") or "")
            call_names[call_id] = call_name
            call = {
                "id": call_id,
                "name": call_name,
                "arguments": normalise_arguments(raw_item.get("arguments")),
            }
            last = builder.last_event()
            if last is not None and last.role == "assistant" and last.tool_calls:
                last.tool_calls.append(call)
                if call_id in pending:
                    last.pending_call_ids.append(call_id)
                return
            builder.add(
                ParsedEvent(
                    role="assistant",
                    created_at=tick(),
                    author=item_author,
                    source_id=str(raw_item.get("id") or ""),
                    tool_calls=[call],
                    pending_call_ids=[call_id] if call_id in pending else [],
                    finish_reason="tool_calls",
                    raw=wrapper,
                )
            )
        elif itype == "function_call_output":
            call_id = str(raw_item.get("call_id") or "")
            builder.add(
                ParsedEvent(
                    role="tool",
                    created_at=tick(),
                    author="tool",
                    source_id=call_id,
                    tool_call_id=call_id,
                    tool_response={
                        "tool_call_id": call_id,
                        "name": call_names.get(call_id, ""),
                        "result": raw_item.get("output"),
                    },
                    raw=wrapper,
                )
            )
        elif itype == "reasoning":
            summary = raw_item.get("summary") or []
            text = "\n\n".join(str(s.get("text") or "") for s in summary if isinstance(s, dict))
            builder.add(
                ParsedEvent(
                    role="assistant",
                    created_at=tick(),
                    author=item_author,
                    reasoning=text,
                    raw=wrapper,
                )
            )
        elif role == "user" or (itype == "message" and role == "user"):
            builder.add(
                ParsedEvent(
                    role="user",
                    created_at=tick(),
                    author="user",
                    text=message_text(raw_item.get("content")),
                    raw=wrapper,
                ),
                prompt=True,
            )
        elif role in ("system", "developer"):
            builder.add(
                ParsedEvent(
                    role="system",
                    created_at=tick(),
                    author=role,
                    text=message_text(raw_item.get("content")),
                    raw=wrapper,
                )
            )
        elif role == "assistant" or itype == "message":
            builder.add(
                ParsedEvent(
                    role="assistant",
                    created_at=tick(),
                    author=item_author,
                    source_id=str(raw_item.get("id") or ""),
                    text=message_text(raw_item.get("content")),
                    finish_reason="stop",
                    raw=wrapper,
                )
            )

    original = data.get("original_input")
    first_prompt = ""
    if isinstance(original, str):
        first_prompt = original
        builder.add(
            ParsedEvent(
                role="user",
                created_at=tick(),
                author="user",
                text=original,
                raw={"original_input": original},
            ),
            prompt=True,
        )
    elif isinstance(original, list):
        for raw_item in original:
            if isinstance(raw_item, dict):
                if raw_item.get("role") == "user" and not first_prompt:
                    first_prompt = message_text(raw_item.get("content"))
                add_item(raw_item, raw_item, "user")
    for item in items:
        if not isinstance(item, dict) or item.get("type") == "tool_approval_item":
            continue
        raw_item = item.get("raw_item")
        if isinstance(raw_item, dict):
            item_author = str((item.get("agent") or {}).get("name") or agent)
            add_item(raw_item, item, item_author)

    return ParseResult(
        sessions=[
            builder.build(
                app_name="openai-agents",
                user_id="",
                title=first_line(first_prompt) or session_id,
                state={},
                source_format=Session.SourceFormat.OPENAI_AGENTS,
            )
        ]
        if builder.events
        else [],
    )


FORMAT = JsonDocumentFormat(
    name=Session.SourceFormat.OPENAI_AGENTS,
    looks_like=looks_like_run_state,
    parse_document=parse_openai_agents,
)
