"""Anthropic Messages API conversations: a bare JSON list of `{role, content}` messages,
or a request body `{model, system?, messages: [...], max_tokens?}`.

Content is a string or a list of blocks (Anthropic Messages API reference): `text`,
`image` / `document` (`source` base64 or URL), `thinking` / `redacted_thinking`,
`tool_use` / `server_tool_use` / `mcp_tool_use` (`id`, `name`, `input`), and results
`tool_result` / `mcp_tool_result` / `*_tool_result` (`tool_use_id`, `content`,
`is_error`). Rules: an assistant message is one event (text, reasoning from thinking,
its tool calls); each result block is a tool event (its value: the text, or the blocks
as they are when they hold an image, so the page can show it); a user message with text
is a real prompt; `system` becomes a system event.

Detection: the messages hold a block type only Anthropic writes (tool_use, tool_result,
thinking, an image with `source`, ...) or the object has a top-level `system`; a list of
plain `{role, content: "text"}` stays OpenAI chat (the two read the same).

The shape has no timestamps: message `i` gets `synthetic_time(i)`. The session id is
derived from the file name (`anthropic:<name>`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sessions_app.ingest.builder import SessionBuilder
from sessions_app.ingest.formats.openai_chat import file_stem
from sessions_app.ingest.normalise import first_line, normalise_arguments, synthetic_time
from sessions_app.ingest.parsed import ImportProblem, ParsedEvent, ParseResult, tool_result_event
from sessions_app.ingest.registry import JsonDocumentFormat
from sessions_app.models import Session

CALL_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
ANTHROPIC_ONLY = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", *CALL_BLOCKS}
)


def _is_result(kind: Any) -> bool:
    return isinstance(kind, str) and kind.endswith("tool_result")


def _messages(data: Any) -> list[Any] | None:
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return list(data["messages"])
    return None


def looks_like_anthropic(data: Any) -> bool:
    """True for an Anthropic Messages list or request body (see the module docstring)."""
    messages = _messages(data)
    if not messages:
        return False
    special = isinstance(data, dict) and "system" in data and "model" in data
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            return False
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind in ANTHROPIC_ONLY or _is_result(kind):
                    special = True
                elif kind == "image" and isinstance(block.get("source"), dict):
                    special = True
        elif not isinstance(content, str):
            return False
    return special


def _result_value(content: Any) -> Any:
    if isinstance(content, list):
        if all(isinstance(b, dict) and b.get("type") == "text" for b in content):
            return "\n\n".join(str(b.get("text") or "") for b in content)
        return content
    return content


def _image_part(block: dict[str, Any]) -> dict[str, Any] | None:
    source = block.get("source")
    if not isinstance(source, dict):
        return None
    if source.get("type") == "base64" and isinstance(source.get("data"), str):
        return {
            "type": "image_base64",
            "image_base64": source["data"],
            "mime_type": str(source.get("media_type") or ""),
        }
    if source.get("type") == "url" and isinstance(source.get("url"), str):
        return {"type": "image_url", "image_url": source["url"]}
    return None


def parse_anthropic_messages(path: Path, data: Any) -> ParseResult:
    """Parse a decoded Anthropic Messages list or request body (module docstring)."""
    name = str(path)
    session_id = f"anthropic:{file_stem(path)}"
    builder = SessionBuilder(session_id)
    problems: list[ImportProblem] = []
    call_names: dict[str, str] = {}
    first_prompt = ""
    tick = 0
    system = data.get("system") if isinstance(data, dict) else None
    if system:
        text = system if isinstance(system, str) else _result_value(system)
        builder.add(
            ParsedEvent(
                role="system",
                created_at=synthetic_time(0),
                author="system",
                text=text if isinstance(text, str) else "",
                raw={"system": system},
            )
        )
        tick = 1
    for index, message in enumerate(_messages(data) or []):
        at = synthetic_time(tick + index)
        role = message.get("role")
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts: list[str] = []
        thoughts: list[str] = []
        images: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        for block in blocks:
            if not isinstance(block, dict):
                problems.append(ImportProblem(name, 0, f"message {index}: block is not an object"))
                continue
            kind = block.get("type")
            if kind == "text":
                texts.append(str(block.get("text") or ""))
            elif kind == "thinking":
                thoughts.append(str(block.get("thinking") or ""))
            elif kind in ("image", "document"):
                part = _image_part(block)
                if part is not None and kind == "image":
                    images.append(part)
            elif kind in CALL_BLOCKS:
                call_id = str(block.get("id") or f"{session_id}-call-{index}-{len(calls)}")
                call_name = str(block.get("name") or kind)
                call_names[call_id] = call_name
                arguments = normalise_arguments(block.get("input"))
                calls.append({"id": call_id, "name": call_name, "arguments": arguments})
            elif _is_result(kind):
                call_id = str(block.get("tool_use_id") or "")
                value = _result_value(block.get("content"))
                response: dict[str, Any] = {
                    "tool_call_id": call_id,
                    "name": call_names.get(call_id, ""),
                }
                if block.get("is_error") is True:
                    response["error"] = value if isinstance(value, str) else str(value)
                else:
                    response["result"] = value
                builder.add(
                    tool_result_event(
                        call_id=call_id, response=response, at=at, source_id=call_id, raw=block
                    )
                )
        text = "\n\n".join(texts)
        parts = [{"type": "text", "text": text}, *images] if images else []
        if role == "assistant":
            builder.add(
                ParsedEvent(
                    role="assistant",
                    created_at=at,
                    author="assistant",
                    text=text,
                    parts=parts,
                    reasoning="\n\n".join(thoughts),
                    tool_calls=calls,
                    finish_reason="tool_calls" if calls else "stop",
                    raw=message,
                )
            )
        elif text.strip() or images:
            builder.add(
                ParsedEvent(
                    role="user", created_at=at, author="user", text=text, parts=parts, raw=message
                ),
                prompt=True,
            )
            first_prompt = first_prompt or text
    sessions = []
    if builder.events:
        sessions.append(
            builder.build(
                app_name="anthropic-messages",
                user_id="",
                title=first_line(first_prompt) or session_id,
                state={},
                source_format=Session.SourceFormat.ANTHROPIC_MESSAGES,
            )
        )
    return ParseResult(sessions=sessions, problems=problems)


FORMAT = JsonDocumentFormat(
    name=Session.SourceFormat.ANTHROPIC_MESSAGES,
    looks_like=looks_like_anthropic,
    parse_document=parse_anthropic_messages,
)
