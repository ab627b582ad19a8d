"""OpenAI shapes: chat-completions message lists, and Agents SDK saved RunState.

Chat messages (shared/corpus/README.md, "openai-chat-swe-agent"): a bare JSON list of
`{role, content, tool_calls?, tool_call_id?}`, or an object holding it under `history`
(SWE-agent trajectory) or `messages`. SWE-agent's `tool_call_ids: [...]` list is
normalised to `tool_call_id` (one tool event per id). Every user message is a real
prompt; system/developer messages are role system.

Agents SDK RunState (shared/corpus/README.md, "openai-agents-sdk"): `original_input`
(a string or a list of input items) is the user turn; `session_items` (else
`generated_items`) hold `message_output_item`, `tool_call_item`, `tool_call_output_item`,
`reasoning_item`; `tool_approval_item`s and `current_step.data.interruptions[]` name the
calls awaiting human approval: they go to `Event.pending_call_ids` (pending, never shown
as broken). Only conversation items are kept in `raw`; the rest of the state (context,
sandbox configuration with possible credentials) is never stored.

Neither shape has timestamps: event `i` gets `synthetic_time(i)` (base.py: the file's
modification time plus `i` seconds). Session ids
are derived from the file name (`openai-chat:<name>`, `openai-agents:<name>`), so a new
version of the same file replaces the old import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sessions_app.ingest.base import (
    ImportProblem,
    ParsedEvent,
    ParseResult,
    SessionBuilder,
    first_line,
    normalise_arguments,
    synthetic_time,
)
from sessions_app.models import Session


def _stem(path: Path) -> str:
    return path.name.removesuffix(".json")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n\n".join(
            str(p.get("text") or "")
            for p in content
            if isinstance(p, dict) and p.get("type") in ("text", "input_text", "output_text")
        )
    return ""


def chat_messages(data: Any) -> list[Any] | None:
    """The chat message list inside `data` (bare list, `history` or `messages`), or None."""
    messages: Any
    if isinstance(data, list):
        messages = data
    elif isinstance(data, dict):
        messages = data.get("history", data.get("messages"))
    else:
        return None
    if isinstance(messages, list) and all(isinstance(m, dict) and "role" in m for m in messages):
        return messages
    return None


def parse_openai_chat(path: Path, data: Any) -> ParseResult:
    """Parse a decoded chat-completions message list (see the module docstring)."""
    name = str(path)
    messages = chat_messages(data) or []
    session_id = f"openai-chat:{_stem(path)}"
    builder = SessionBuilder(session_id)
    problems: list[ImportProblem] = []
    call_names: dict[str, str] = {}
    first_prompt = ""
    for index, message in enumerate(messages):
        at = synthetic_time(index)
        role = message.get("role")
        text = _text(message.get("content"))
        author = str(message.get("name") or message.get("agent") or role or "")
        if role == "user":
            builder.add(
                ParsedEvent(role="user", created_at=at, author="user", text=text, raw=message),
                prompt=True,
            )
            first_prompt = first_prompt or text
        elif role in ("system", "developer"):
            builder.add(
                ParsedEvent(role="system", created_at=at, author=author, text=text, raw=message)
            )
        elif role == "assistant":
            calls: list[dict[str, Any]] = []
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                call_id = str(call.get("id") or f"{session_id}-call-{index}-{len(calls)}")
                call_name = str(function.get("name") or "")
                call_names[call_id] = call_name
                calls.append(
                    {
                        "id": call_id,
                        "name": call_name,
                        "arguments": normalise_arguments(function.get("arguments")),
                    }
                )
            builder.add(
                ParsedEvent(
                    role="assistant",
                    created_at=at,
                    author=author,
                    text=text,
                    reasoning=str(message.get("reasoning_content") or ""),
                    tool_calls=calls,
                    finish_reason="tool_calls" if calls else "stop",
                    raw=message,
                )
            )
        elif role in ("tool", "function"):
            ids = message.get("tool_call_ids")
            if not isinstance(ids, list) or not ids:
                ids = [message.get("tool_call_id") or ""]
            for call_id in ids:
                call_id = str(call_id)
                builder.add(
                    ParsedEvent(
                        role="tool",
                        created_at=at,
                        author="tool",
                        tool_call_id=call_id,
                        tool_response={
                            "tool_call_id": call_id,
                            "name": call_names.get(call_id, str(message.get("name") or "")),
                            "result": text,
                        },
                        raw=message,
                    )
                )
        else:
            problems.append(ImportProblem(name, 0, f"message {index} has unknown role {role!r}"))
    is_swe = isinstance(data, dict) and "trajectory" in data
    return ParseResult(
        sessions=[
            builder.build(
                app_name="swe-agent" if is_swe else "openai-chat",
                user_id="",
                title=first_line(first_prompt) or session_id,
                state={},
                source_format=Session.SourceFormat.OPENAI_CHAT,
            )
        ]
        if messages
        else [],
        problems=problems,
    )


def looks_like_run_state(data: Any) -> bool:
    """True for an Agents SDK RunState document."""
    return isinstance(data, dict) and (
        "$schemaVersion" in data or ("current_agent" in data and "original_input" in data)
    )


def parse_openai_agents(path: Path, data: dict[str, Any]) -> ParseResult:
    """Parse a decoded Agents SDK RunState (see the module docstring)."""
    session_id = f"openai-agents:{_stem(path)}"
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
                    text=_text(raw_item.get("content")),
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
                    text=_text(raw_item.get("content")),
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
                    text=_text(raw_item.get("content")),
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
                    first_prompt = _text(raw_item.get("content"))
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
