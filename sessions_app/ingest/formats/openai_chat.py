"""OpenAI chat-completions message lists (also SWE-agent trajectories).

Format notes (shared/corpus/README.md, "openai-chat-swe-agent"): a bare JSON list of
`{role, content, tool_calls?, tool_call_id?}`, or an object holding it under `history`
(SWE-agent trajectory) or `messages`. SWE-agent's `tool_call_ids: [...]` list is
normalised to `tool_call_id` (one tool event per id). Every user message is a real
prompt; system/developer messages are role system.

SWE-agent trajectories (a `trajectory` key, or messages with `message_type` / `is_demo`)
without function calling write the action as text (`action`) and the environment's
answer as a user message (`message_type: "observation"`): such an observation right
after an assistant action is the result of that action, so the action becomes a tool call
(`<session>-action-<n>`, name = the command's first word, arguments `{"command": ...}`)
and the observation its tool event. Demonstration messages (`message_type:
"demonstration"` or `is_demo: true`) are role system with author "demonstration": part
of the prompt, never a user turn.

The shape has no timestamps: message `i` gets `synthetic_time(i)` (`ingest.normalise`:
the file's modification time plus `i` seconds). The session id is derived from the file
name (`openai-chat:<name>`), so a new version of the same file replaces the old import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sessions_app.ingest.builder import SessionBuilder
from sessions_app.ingest.normalise import first_line, normalise_arguments, synthetic_time
from sessions_app.ingest.parsed import ImportProblem, ParsedEvent, ParseResult
from sessions_app.ingest.registry import JsonDocumentFormat
from sessions_app.models import Session


def file_stem(path: Path) -> str:
    """The file name without `.json`: the part of a session id derived from the file."""
    return path.name.removesuffix(".json")


def message_text(content: Any) -> str:
    """The text of a message `content`: the string, or the text parts joined by blank lines."""
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


def is_swe_agent(data: Any, messages: list[Any]) -> bool:
    """True for a SWE-agent trajectory: a `trajectory` key, or SWE-agent message keys."""
    if isinstance(data, dict) and "trajectory" in data:
        return True
    return any("message_type" in m or "is_demo" in m for m in messages)


def _add_result(
    builder: SessionBuilder, call_id: str, at: Any, text: str, message: dict[str, Any]
) -> None:
    """The observation `message` as the tool result of the action `call_id`."""
    call = builder.last_event()
    name = call.tool_calls[0]["name"] if call is not None and call.tool_calls else ""
    builder.add(
        ParsedEvent(
            role="tool",
            created_at=at,
            author="environment",
            tool_call_id=call_id,
            tool_response={"tool_call_id": call_id, "name": name, "result": text},
            raw=message,
        )
    )


def parse_openai_chat(path: Path, data: Any) -> ParseResult:
    """Parse a decoded chat-completions message list (see the module docstring)."""
    name = str(path)
    messages = chat_messages(data) or []
    session_id = f"openai-chat:{file_stem(path)}"
    builder = SessionBuilder(session_id)
    problems: list[ImportProblem] = []
    call_names: dict[str, str] = {}
    first_prompt = ""
    swe = is_swe_agent(data, messages)
    open_action = ""
    for index, message in enumerate(messages):
        at = synthetic_time(index)
        role = message.get("role")
        text = message_text(message.get("content"))
        author = str(message.get("name") or message.get("agent") or role or "")
        kind = message.get("message_type")
        if swe and (kind == "demonstration" or message.get("is_demo") is True):
            builder.add(
                ParsedEvent(
                    role="system", created_at=at, author="demonstration", text=text, raw=message
                )
            )
            continue
        if swe and role == "user" and open_action:
            _add_result(builder, open_action, at, text, message)
            open_action = ""
            continue
        open_action = ""
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
            action = message.get("action")
            if swe and not calls and isinstance(action, str) and action.strip():
                open_action = f"{session_id}-action-{index}"
                words = action.split()
                calls.append(
                    {"id": open_action, "name": words[0][:100], "arguments": {"command": action}}
                )
                call_names[open_action] = words[0][:100]
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
    return ParseResult(
        sessions=[
            builder.build(
                app_name="swe-agent" if swe else "openai-chat",
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


def looks_like_chat(data: Any) -> bool:
    """True for a chat message list (bare, or under `history` / `messages`)."""
    return chat_messages(data) is not None


FORMAT = JsonDocumentFormat(
    name=Session.SourceFormat.OPENAI_CHAT,
    looks_like=looks_like_chat,
    parse_document=parse_openai_chat,
)
