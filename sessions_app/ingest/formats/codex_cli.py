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

`Rollout` applies these rules a record at a time; `parse_codex_cli` feeds it every record
of a file, and a large rollout's streamed import (`ingest.codex_stream`) feeds it while
it writes the events it has settled.
"""

from __future__ import annotations

from collections.abc import Iterator
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
TOKEN_COUNT_PROBLEM = "token counts are not numbers"
#: The header fields of a rollout's session (`SessionBuilder.build` / `header`).
SESSION_FIELDS: dict[str, Any] = {
    "app_name": "codex-cli",
    "user_id": "",
    "state": {},
    "source_format": Session.SourceFormat.CODEX_CLI,
}


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


def token_usage(payload: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """(the `usage` a `token_count` event_msg gives the next assistant event, or None;
    True when its counts are not numbers: a problem of its line)."""
    info = payload.get("info") or {}
    last = info.get("last_token_usage") if isinstance(info, dict) else None
    if not isinstance(last, dict):
        return None, False
    counts = [last.get(k) or 0 for k in _USAGE_KEYS]
    if not all(_is_count(c) for c in counts):
        return None, True
    prompt, completion, total = (int(c) for c in counts)
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": total or prompt + completion,
        "details": last,
    }
    return usage, False


def _reasoning_texts(payload: dict[str, Any]) -> list[str]:
    summary = payload.get("summary") or []
    return [str(s.get("text") or "") for s in summary if isinstance(s, dict) and s.get("text")]


def adds_event(kind: str, payload: dict[str, Any]) -> bool:
    """True when a rollout record of type `kind` with `payload` gives the session an
    event (`Rollout.record`: a compaction, a message, a call, an output, or reasoning
    text, kept for the next assistant event or the end); a rollout with none has no
    session."""
    if kind == "compacted":
        return True
    ptype = payload.get("type")
    return kind == "response_item" and (
        ptype == "message"
        or ptype in CALL_TYPES
        or ptype in OUTPUT_TYPES
        or (ptype == "reasoning" and bool(_reasoning_texts(payload)))
    )


def rollout_items(
    name: str, text: JsonLinesText, problems: list[ImportProblem]
) -> Iterator[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(line, record, payload) of every rollout record in order; a line without a `type`
    or a `payload` object goes to `problems`."""
    for number, record in jsonl_objects(name, text, problems):
        payload = record.get("payload")
        if not isinstance(record.get("type"), str) or not isinstance(payload, dict):
            problems.append(ImportProblem(name, number, "record has no 'type' or 'payload'"))
            continue
        yield number, record, payload


def first_meta(
    meta: dict[str, Any], record: dict[str, Any], payload: dict[str, Any]
) -> dict[str, Any]:
    """The session's `session_meta` payload so far (`meta`, {} for none yet), after the
    next record: the first non-empty one counts."""
    return payload if record["type"] == "session_meta" and not meta else meta


def session_id_of(path: Path, meta: dict[str, Any]) -> str:
    """The session's id: the first `session_meta`'s, else the file's name."""
    return str(meta.get("id") or path.name.removesuffix(".jsonl"))


class Rollout:
    """One rollout's session, fed its records in order (`record`, then `finish`): the
    module's rules over a `SessionBuilder`. Only the last event held can still change
    (`record` adds calls to it); the parse holds every event, a streamed import
    (`ingest.codex_stream`) hands the others on."""

    def __init__(self, name: str, session_id: str, problems: list[ImportProblem]) -> None:
        self.name = name
        self.problems = problems
        self.builder = SessionBuilder(session_id)
        self.items = 0
        self.last_stamp: Any = None
        self.first_prompt = ""
        self._reasoning: list[str] = []
        self._usage: dict[str, Any] | None = None
        self._call_names: dict[str, str] = {}

    def _assistant(self, at: Any, record: dict[str, Any], source_id: str) -> ParsedEvent:
        event = ParsedEvent(
            role="assistant", created_at=at, author="codex", source_id=source_id, raw=[record]
        )
        if self._reasoning:
            event.reasoning = "\n\n".join(self._reasoning)
            self._reasoning.clear()
        if self._usage is not None:
            event.usage, self._usage = self._usage, None
        return self.builder.add(event)

    def record(self, number: int, record: dict[str, Any], payload: dict[str, Any]) -> None:
        """Take the next rollout record (line `number`; see the module doc)."""
        at_line(number)
        builder = self.builder
        stamp = record.get("timestamp")
        at = parse_iso(stamp) or synthetic_time(self.items)
        self.items += 1
        self.last_stamp = stamp
        kind, ptype = record["type"], payload.get("type")
        if kind == "event_msg":
            if ptype == "token_count":
                usage, bad = token_usage(payload)
                if usage is not None:
                    self._usage = usage
                elif bad:
                    self.problems.append(ImportProblem(self.name, number, TOKEN_COUNT_PROBLEM))
            elif ptype == "turn_aborted":
                reason = payload.get("reason") or "aborted"
                builder.interrupt(f"turn_aborted ({reason}) at line {number}")
            return
        if kind == "compacted":
            compaction = ParsedEvent(
                role="user",
                created_at=at,
                text=_compaction_text(payload),
                source_id=f"line-{number}",
            )
            builder.compaction(compaction, trigger="", pre_tokens=None, records=[record])
            return
        if kind != "response_item":
            return
        if ptype == "message":
            role = payload.get("role")
            body = _message_text(payload.get("content"))
            if role == "user" and not body.lstrip().startswith(CONTEXT_PREFIXES):
                builder.add(
                    ParsedEvent(role="user", created_at=at, author="user", text=body, raw=record),
                    prompt=True,
                )
                self.first_prompt = self.first_prompt or body
            elif role in ("user", "developer", "system"):
                builder.add(
                    ParsedEvent(role="system", created_at=at, author="codex", text=body, raw=record)
                )
            else:
                event = self._assistant(at, record, str(payload.get("id") or ""))
                event.text = body
                event.finish_reason = "stop"
        elif ptype == "reasoning":
            if texts := _reasoning_texts(payload):
                self._reasoning.append("\n\n".join(texts))
        elif ptype in CALL_TYPES:
            self._call(number, at, record, payload)
        elif ptype in OUTPUT_TYPES:
            call_id = str(payload.get("call_id") or "")
            response = {
                "tool_call_id": call_id,
                "name": self._call_names.get(call_id, ""),
                "result": decode_output(payload.get("output")),
            }
            builder.add(
                tool_result_event(
                    call_id=call_id, response=response, at=at, source_id=call_id, raw=record
                )
            )

    def _call(self, number: int, at: Any, record: dict[str, Any], payload: dict[str, Any]) -> None:
        ptype = payload.get("type")
        call_id = str(payload.get("call_id") or payload.get("id") or f"call-{number}")
        call_name = str(payload.get("name") or ptype)
        raw_args = payload.get("arguments", payload.get("input", payload.get("action")))
        arguments = normalise_arguments(raw_args)
        last = self.builder.last_event()
        if (
            last is not None
            and last.role == "assistant"
            and not self._reasoning
            and isinstance(last.raw, list)
        ):
            event = last
            event.raw.append(record)
        else:
            event = self._assistant(at, record, call_id)
        event.tool_calls.append({"id": call_id, "name": call_name, "arguments": arguments})
        event.finish_reason = "tool_calls"
        self._call_names[call_id] = call_name
        if call_name == "update_plan":
            self.builder.write_todos(coerce_todos(arguments.get("plan")), at)

    def finish(self) -> None:
        """After the last record: reasoning with nothing after it (the transcript stops
        there) is kept as an assistant event."""
        if self._reasoning and self.items:
            self._assistant(parse_iso(self.last_stamp) or synthetic_time(self.items), {}, "")

    def title(self) -> str:
        """The session's title: the first prompt's request, else the session id."""
        request = self.first_prompt.split("## My request for Codex:")[-1]
        return first_line(request) or self.builder.session_id


def model_of_record(record: dict[str, Any]) -> str:
    """The model a rollout record names for the session, "" for none: `turn_context`
    records name it (they are not events); the last that names one is `Session.model`."""
    return model_named((record,)) if record["type"] == "turn_context" else ""


def parse_codex_cli(path: Path, text: JsonLinesText) -> ParseResult:
    """Parse one Codex CLI rollout file (see the module docstring for the rules)."""
    name = str(path)
    problems: list[ImportProblem] = []
    meta: dict[str, Any] = {}
    items: list[tuple[int, dict[str, Any], dict[str, Any]]] = []
    for number, record, payload in rollout_items(name, text, problems):
        meta = first_meta(meta, record, payload)
        items.append((number, record, payload))
    rollout = Rollout(name, session_id_of(path, meta), problems)
    for number, record, payload in items:
        rollout.record(number, record, payload)
    rollout.finish()
    if not items:
        return ParseResult(sessions=[], problems=problems, empty_reason="no rollout record")
    builder = rollout.builder
    built = (
        builder.build(
            title=rollout.title(), created_at=parse_iso(meta.get("timestamp")), **SESSION_FIELDS
        )
        if builder.events
        else None
    )
    if built is not None:
        built.model = next(filter(None, (model_of_record(r) for _n, r, _p in reversed(items))), "")
    return ParseResult(
        sessions=[built] if built is not None else [],
        problems=problems,
        empty_reason=(
            "no response_item record (Codex writes the conversation as response_items; "
            f"this file has only {', '.join(sorted({r['type'] for _n, r, _p in items}))} "
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
