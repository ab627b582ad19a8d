"""Codex CLI rollout JSONL (`~/.codex/sessions/.../rollout-*.jsonl`).

Format notes (shared/corpus/README.md, "codex-cli"): one `{timestamp, type, payload}` per
line; `type` is session_meta, turn_context, response_item or event_msg.

Rules applied here:
- `response_item`s are the conversation (Responses-API items); `event_msg`s duplicate
  them for the UI (user_message, agent_message, agent_reasoning) and are not stored,
  except `token_count` (its `last_token_usage` becomes the `usage` of the next assistant
  event) and `turn_aborted` (Codex's interrupt marker: the turn becomes
  interrupted/canceled);
- user messages that are harness context (`<environment_context>`, `<user_instructions>`)
  and developer/system messages are stored with role system and start no turn; every other
  user message is a real prompt;
- `reasoning` items (their summary text) are held and attached to the next assistant
  event; consecutive `function_call`s and an assistant message right before them form one
  assistant event (parallel calls); `function_call_output` -> a tool event whose
  `result` is the output (decoded when it is JSON);
- `update_plan` calls (`plan[] = {step, status}`) replace the session's todo list;
- a `compacted` record (Codex compacted its context) is a compaction event holding the
  summary (`message`, or the messages of `replacement_history`), never a prompt: the
  next context starts from it (Codex also carries recent prompts, within a budget, into
  the compacted history; the projection shows the summary and what came after it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sessions_app.ingest.builder import SessionBuilder
from sessions_app.ingest.model_name import model_named
from sessions_app.ingest.normalise import (
    at_line,
    coerce_todos,
    decode_output,
    first_line,
    jsonl_objects,
    normalise_arguments,
    parse_iso,
    synthetic_time,
)
from sessions_app.ingest.parsed import ImportProblem, ParsedEvent, ParseResult, tool_result_event
from sessions_app.ingest.reading import JsonLinesText
from sessions_app.ingest.registry import JsonLinesFormat
from sessions_app.models import Session

#: The record types of a rollout (detection: one such record with a `payload`).
CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context"})
CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "<user_shell_command>")
CALL_TYPES = {"function_call", "custom_tool_call", "local_shell_call"}
OUTPUT_TYPES = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n\n".join(
        str(part.get("text") or "")
        for part in content
        if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text")
    )


_USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens")


def _compaction_text(payload: dict[str, Any]) -> str:
    """The summary a `compacted` record holds: its `message`, else (newer Codex, which
    writes the history it goes on from) the text of `replacement_history`'s messages."""
    message = payload.get("message")
    if isinstance(message, str) and message.strip():
        return message
    history = payload.get("replacement_history")
    return "\n\n".join(
        _message_text(item.get("content"))
        for item in (history if isinstance(history, list) else [])
        if isinstance(item, dict) and item.get("type", "message") == "message"
    )


def _is_count(value: Any) -> bool:
    """True for a token count: a non-negative whole number below 2**53."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53


def parse_codex_cli(path: Path, text: JsonLinesText) -> ParseResult:
    """Parse one Codex CLI rollout file (see the module docstring for the rules)."""
    name = str(path)
    problems: list[ImportProblem] = []
    meta: dict[str, Any] = {}
    builder: SessionBuilder | None = None
    pending_reasoning: list[str] = []
    pending_usage: dict[str, Any] | None = None
    call_names: dict[str, str] = {}
    first_prompt = ""
    items: list[tuple[int, Any, dict[str, Any], dict[str, Any]]] = []

    for number, record in jsonl_objects(name, text, problems):
        payload = record.get("payload")
        if not isinstance(record.get("type"), str) or not isinstance(payload, dict):
            problems.append(ImportProblem(name, number, "record has no 'type' or 'payload'"))
            continue
        if record["type"] == "session_meta" and not meta:
            meta = payload
        items.append((number, record.get("timestamp"), record, payload))

    session_id = str(meta.get("id") or path.name.removesuffix(".jsonl"))
    builder = SessionBuilder(session_id)

    def assistant_event(at: Any, record: dict[str, Any], source_id: str) -> ParsedEvent:
        nonlocal pending_usage
        event = ParsedEvent(
            role="assistant", created_at=at, author="codex", source_id=source_id, raw=[record]
        )
        if pending_reasoning:
            event.reasoning = "\n\n".join(pending_reasoning)
            pending_reasoning.clear()
        if pending_usage is not None:
            event.usage, pending_usage = pending_usage, None
        return builder.add(event)

    for index, (number, stamp, record, payload) in enumerate(items):
        at_line(number)
        at = parse_iso(stamp) or synthetic_time(index)
        kind, ptype = record["type"], payload.get("type")
        if kind == "event_msg":
            if ptype == "token_count":
                info = payload.get("info") or {}
                last = info.get("last_token_usage") if isinstance(info, dict) else None
                counts = [last.get(k) or 0 for k in _USAGE_KEYS] if isinstance(last, dict) else []
                if isinstance(last, dict) and all(_is_count(c) for c in counts):
                    prompt, completion, total = (int(c) for c in counts)
                    pending_usage = {
                        "prompt_tokens": prompt,
                        "completion_tokens": completion,
                        "total_tokens": total or prompt + completion,
                        "details": last,
                    }
                elif isinstance(last, dict):
                    problems.append(ImportProblem(name, number, "token counts are not numbers"))
            elif ptype == "turn_aborted":
                reason = payload.get("reason") or "aborted"
                builder.interrupt(f"turn_aborted ({reason}) at line {number}")
            continue
        if kind == "compacted":
            compaction = ParsedEvent(
                role="user",
                created_at=at,
                text=_compaction_text(payload),
                source_id=f"line-{number}",
            )
            builder.compaction(compaction, trigger="", pre_tokens=None, records=[record])
            continue
        if kind != "response_item":
            continue
        if ptype == "message":
            role = payload.get("role")
            body = _message_text(payload.get("content"))
            if role == "user" and not body.lstrip().startswith(CONTEXT_PREFIXES):
                builder.add(
                    ParsedEvent(role="user", created_at=at, author="user", text=body, raw=record),
                    prompt=True,
                )
                first_prompt = first_prompt or body
            elif role in ("user", "developer", "system"):
                builder.add(
                    ParsedEvent(role="system", created_at=at, author="codex", text=body, raw=record)
                )
            else:
                event = assistant_event(at, record, str(payload.get("id") or ""))
                event.text = body
                event.finish_reason = "stop"
        elif ptype == "reasoning":
            summary = payload.get("summary") or []
            texts = [
                str(s.get("text") or "") for s in summary if isinstance(s, dict) and s.get("text")
            ]
            if texts:
                pending_reasoning.append("\n\n".join(texts))
        elif ptype in CALL_TYPES:
            call_id = str(payload.get("call_id") or payload.get("id") or f"call-{number}")
            call_name = str(payload.get("name") or ptype)
            raw_args = payload.get("arguments", payload.get("input", payload.get("action")))
            arguments = normalise_arguments(raw_args)
            last = builder.last_event()
            if (
                last is not None
                and last.role == "assistant"
                and not pending_reasoning
                and isinstance(last.raw, list)
            ):
                event = last
                event.raw.append(record)
            else:
                event = assistant_event(at, record, call_id)
            event.tool_calls.append({"id": call_id, "name": call_name, "arguments": arguments})
            event.finish_reason = "tool_calls"
            call_names[call_id] = call_name
            if call_name == "update_plan":
                builder.write_todos(coerce_todos(arguments.get("plan")), at)
        elif ptype in OUTPUT_TYPES:
            call_id = str(payload.get("call_id") or "")
            response = {
                "tool_call_id": call_id,
                "name": call_names.get(call_id, ""),
                "result": decode_output(payload.get("output")),
            }
            builder.add(
                tool_result_event(
                    call_id=call_id, response=response, at=at, source_id=call_id, raw=record
                )
            )
    if pending_reasoning and items:
        # Reasoning with nothing after it (the transcript stops there): keep it.
        assistant_event(parse_iso(items[-1][1]) or synthetic_time(len(items)), {}, "")

    if not items:
        return ParseResult(sessions=[], problems=problems, empty_reason="no rollout record")
    built = (
        builder.build(
            app_name="codex-cli",
            user_id="",
            title=first_line(first_prompt.split("## My request for Codex:")[-1]) or session_id,
            state={},
            source_format=Session.SourceFormat.CODEX_CLI,
            created_at=parse_iso(meta.get("timestamp")),
        )
        if builder.events
        else None
    )
    if built is not None:  # turn_context records name the model; they are not events
        built.model = model_named(
            r for _n, _s, r, p in reversed(items) if r["type"] == "turn_context"
        )
    return ParseResult(
        sessions=[built] if built is not None else [],
        problems=problems,
        empty_reason=(
            "no response_item record (Codex writes the conversation as response_items; "
            f"this file has only {', '.join(sorted({r['type'] for _n, _s, r, _p in items}))} "
            "records)"
        ),
    )


def looks_like_codex_record(record: dict[str, Any]) -> bool:
    """True for a JSON Lines record with a rollout `type` and a `payload`."""
    return record.get("type") in CODEX_TYPES and "payload" in record


FORMAT = JsonLinesFormat(
    name=Session.SourceFormat.CODEX_CLI,
    looks_like_record=looks_like_codex_record,
    parse_text=parse_codex_cli,
)
