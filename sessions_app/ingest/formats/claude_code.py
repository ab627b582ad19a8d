"""Claude Code session JSONL (`~/.claude/projects/*/<session>.jsonl` and its
`<session>/subagents/agent-*.jsonl`).

Format notes (shared/corpus/README.md, "claude-code"): one JSON record per line with
`type` user|assistant|summary|system|progress|queue-operation|file-history-snapshot,
`uuid`, `parentUuid`, `sessionId`, `timestamp` and an Anthropic Messages `message`. The
tree, branches and sub-agents: `sessions_app.ingest.claude_tree`.

Rules applied here:
- one API message (`message.id`) is one assistant event, whatever lines come between its
  lines (text, `thinking` -> reasoning, `tool_use` -> tool calls; the last line's `usage`
  wins because it is the most complete); `raw` keeps every merged line;
- `tool_result` blocks in user lines become tool events, one per result, with
  `tool_response` {tool_call_id, name, result} or {..., error} when `is_error`; other user
  lines that arrive while calls of the latest message wait for results (hook context,
  queued prompts) are placed after those results, where Claude Code sends them;
- real user prompts start turns; meta lines (`isMeta`, the local-command caveat,
  `<command-name>`/`<local-command-stdout>` lines) are stored as user events with author
  "command" and do not start a turn; "[Request interrupted by user...]" is stored
  (author "interrupt") and marks its turn interrupted/canceled;
- a compaction summary (`isCompactSummary`) is a compaction event (role user, author
  "compaction", never a prompt; `raw` = {"compaction": facts, "records": [...]}, facts:
  trigger, pre_tokens, summarised_events, summarised_up_to (source id), todo_carried);
- records of an abandoned rewind branch are stored archived (not in the conversation),
  at the time the person took the other branch;
- `ExitPlanMode` and `AskUserQuestion` calls wait for the person: `pending_call_ids`;
- `TodoWrite` calls replace the session's todo list (new and old item styles);
- a `summary` record titles the session when its `leafUuid` is on the active branch (else
  the last one does); progress, queue-operation, file-history-snapshot and system records
  are harness bookkeeping;
- malformed lines (bad JSON, not an object, no `type`, user/assistant without a
  timestamp or without message content, a uuid already used by an earlier accepted line)
  are reported as `ImportProblem`s and skipped. The main conversation's id is the first
  `sessionId` seen (else the file name); each sub-agent is a session of its own.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from sessions_app.ingest.builder import SessionBuilder
from sessions_app.ingest.claude_tree import (
    INTERRUPT_PREFIX,
    META_PREFIXES,
    Tree,
    is_prompt,
    note_agent_call,
    partition_key,
    read_records,
    sidechain_agents,
    subagent_session_id,
)
from sessions_app.ingest.normalise import (
    coerce_todos,
    first_line,
    normalise_arguments,
    parse_iso,
)
from sessions_app.ingest.parsed import (
    ImportProblem,
    ParsedEvent,
    ParsedSession,
    ParseResult,
    tool_result_event,
)
from sessions_app.ingest.reading import JsonLinesText
from sessions_app.ingest.registry import JsonLinesFormat
from sessions_app.models import Session

#: Record types only Claude Code writes (detection: one such record, or a `sessionId`).
CLAUDE_TYPES = frozenset(
    {
        "user",
        "assistant",
        "summary",
        "system",
        "progress",
        "queue-operation",
        "file-history-snapshot",
    }
)
IGNORED_TYPES = frozenset(
    {"progress", "queue-operation", "file-history-snapshot", "system", "attachment"}
)
#: Calls that wait for the person's answer (a plan to approve, a question).
AWAITING_USER_TOOLS = frozenset({"ExitPlanMode", "AskUserQuestion"})
STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


def _usage(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None

    def num(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) else 0

    prompt = (
        num("input_tokens") + num("cache_creation_input_tokens") + num("cache_read_input_tokens")
    )
    completion = num("output_tokens")
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "details": raw,
    }


def _result_text(content: Any) -> Any:
    """A tool_result's content: a string stays; a list of blocks becomes its joined text."""
    if isinstance(content, list):
        texts = [
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        ]
        if len(texts) == len(content):
            return "\n".join(texts)
        return content
    return content if content is not None else ""


class _Conversation:
    """Turns one session's records (the main conversation or one sub-agent) into events."""

    def __init__(self, session_id: str, tree: Tree, boundaries: dict[str, dict[str, Any]]):
        self.builder = SessionBuilder(session_id)
        self.tree = tree
        self.boundaries = boundaries
        self.first_prompt = ""
        self.call_names: dict[str, str] = {}
        self.messages: dict[tuple[str, bool], ParsedEvent] = {}
        # Call ids of the latest assistant message still waiting for a result, and the
        # user events held back until they have it (Claude Code sends them after).
        self.waiting: set[str] = set()
        self.held: list[tuple[int, ParsedEvent, str]] = []
        self.abandoned: dict[str, str] = {}

    def start(self, leaf: str) -> None:
        """Get ready for this session's records; `leaf`: the uuid of its last one."""
        self.abandoned = self.tree.abandoned(leaf) if leaf else {}

    def record(self, number: int, at: datetime, record: dict[str, Any]) -> None:
        """Add one record (the next of this session's, in file order) to the builder."""
        uuid = str(record.get("uuid") or "")
        abandoned = self.abandoned
        archived = parse_iso(abandoned[uuid]) or at if uuid in abandoned else None
        if record["type"] == "assistant":
            self._assistant(at, record, archived)
        else:
            self._user(number, at, record, archived)

    def finish(self) -> None:
        """Place what is still held back: every record was added."""
        self._release()

    def run(self, items: list[tuple[int, datetime, dict[str, Any]]]) -> None:
        """Add every record of `items` (file order) to the builder."""
        self.start(str(items[-1][2].get("uuid") or ""))
        for number, at, record in items:
            self.record(number, at, record)
        self.finish()

    def _release(self) -> None:
        held, self.held, self.waiting = self.held, [], set()
        for number, event, kind in held:
            self._place(number, event, kind)

    def _place(self, number: int, event: ParsedEvent, kind: str) -> None:
        if kind == "interrupt":
            self.builder.add(event)
            self.builder.interrupt(f"interrupt marker at line {number}")
        elif kind == "prompt":
            self.builder.add(event, prompt=True)
            self.first_prompt = self.first_prompt or event.text
        else:
            self.builder.add(event)

    def _assistant(self, at: datetime, record: dict[str, Any], archived: datetime | None) -> None:
        message = record["message"]
        content = message["content"]
        uuid = str(record.get("uuid") or "")
        msg_id = str(message.get("id") or uuid)
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        event = self.messages.get((msg_id, archived is None))
        if event is not None:
            event.raw.append(record)
        else:
            self._release()
            event = ParsedEvent(
                role="assistant",
                created_at=at,
                author=str(message.get("model") or "assistant"),
                source_id=msg_id,
                raw=[record],
                archived_at=archived,
            )
            self.builder.add(event)
            self.messages[(msg_id, archived is None)] = event
        for block in blocks:
            btype = block.get("type")
            if btype == "text":
                piece = str(block.get("text") or "")
                if piece.strip():
                    event.text = f"{event.text}\n\n{piece}" if event.text else piece
            elif btype == "thinking":
                piece = str(block.get("thinking") or "")
                if piece.strip():
                    event.reasoning = f"{event.reasoning}\n\n{piece}" if event.reasoning else piece
            elif btype == "tool_use":
                call_id = str(block.get("id") or f"{msg_id}-call-{len(event.tool_calls)}")
                call_name = str(block.get("name") or "")
                arguments = normalise_arguments(block.get("input"))
                event.tool_calls.append({"id": call_id, "name": call_name, "arguments": arguments})
                self.call_names[call_id] = call_name
                self.waiting.add(call_id)
                if call_name in AWAITING_USER_TOOLS:
                    event.pending_call_ids.append(call_id)
                if call_name == "TodoWrite" and archived is None:
                    self.builder.write_todos(coerce_todos(arguments.get("todos")), at)
        usage = _usage(message.get("usage"))
        if usage is not None:
            event.usage = usage
        stop = message.get("stop_reason")
        if isinstance(stop, str) and stop in STOP_REASONS:
            event.finish_reason = STOP_REASONS[stop]
        elif event.tool_calls:
            event.finish_reason = "tool_calls"

    def _user(
        self, number: int, at: datetime, record: dict[str, Any], archived: datetime | None
    ) -> None:
        content = record["message"]["content"]
        uuid = str(record.get("uuid") or "")
        blocks: list[dict[str, Any]] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else content
        )
        texts: list[str] = []
        parts: list[dict[str, Any]] = []
        for block in blocks:
            btype = block.get("type")
            if btype == "tool_result":
                self._result(at, record, block, archived)
            elif btype == "text":
                texts.append(str(block.get("text") or ""))
            elif btype == "image":
                source: dict[str, Any] = block.get("source") or {}
                parts.append(
                    {
                        "type": "image_base64",
                        "image_base64": source.get("data", ""),
                        "mime_type": source.get("media_type", ""),
                    }
                )
        if not texts and not parts:
            if not self.waiting and self.held:
                self._release()
            return
        joined = "\n\n".join(texts)
        event = ParsedEvent(
            role="user",
            created_at=at,
            author="user",
            source_id=uuid,
            text=joined,
            raw=record,
            archived_at=archived,
        )
        if parts:
            event.parts = [{"type": "text", "text": joined}, *parts] if joined else parts
        stripped = joined.lstrip()
        if record.get("isCompactSummary"):
            self._release()
            self._compaction(event, record)
            return
        if stripped.startswith(INTERRUPT_PREFIX):
            event.author, kind = "interrupt", "interrupt"
            self._release()
        elif record.get("isMeta") or stripped.startswith(META_PREFIXES) or not is_prompt(record):
            event.author, kind = "command", "meta"
        else:
            kind = "prompt"
        if self.waiting and kind != "interrupt":
            self.held.append((number, event, kind))
        else:
            self._place(number, event, kind)

    def _result(
        self, at: datetime, record: dict[str, Any], block: dict[str, Any], archived: datetime | None
    ) -> None:
        call_id = str(block.get("tool_use_id") or "")
        value = _result_text(block.get("content"))
        response: dict[str, Any] = {
            "tool_call_id": call_id,
            "name": self.call_names.get(call_id, ""),
        }
        if block.get("is_error"):
            response["error"] = value if isinstance(value, str) else json.dumps(value)
        else:
            response["result"] = value
        self.builder.add(
            tool_result_event(
                call_id=call_id,
                response=response,
                at=at,
                source_id=str(record.get("uuid") or ""),
                raw=record,
                archived_at=archived,
            )
        )
        self.waiting.discard(call_id)
        if not self.waiting and self.held:
            self._release()

    def _compaction(self, event: ParsedEvent, record: dict[str, Any]) -> None:
        """The compaction event: what was summarised, how, and whether the todos carried."""
        boundary = self.boundaries.get(str(record.get("parentUuid") or ""))
        meta = boundary.get("compactMetadata") if boundary else None
        meta = meta if isinstance(meta, dict) else {}
        self.builder.compaction(
            event,
            trigger=str(meta.get("trigger") or ""),
            pre_tokens=meta.get("preTokens") if isinstance(meta.get("preTokens"), int) else None,
            records=[r for r in (boundary, record) if r],
        )


class ClaudeFile:
    """What a Claude Code file says beyond its conversation records, read as its records
    go past (`note`): the main session id, the tree, the calls that started sub-agents,
    compaction boundaries and summaries; then which session each record belongs to
    (`key`, once `close`d) and each session's title and header (`build`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.main_id = ""
        self.tree = Tree()
        self.calls: dict[str, str] = {}
        self.boundaries: dict[str, dict[str, Any]] = {}
        self.summaries: list[dict[str, Any]] = []
        self.inherited: dict[str, str] = {}

    def note(self, at: datetime | None, record: dict[str, Any]) -> None:
        """Take in one typed record (`at`: its time when it is a usable user/assistant
        record, else None), in file order."""
        if at is not None and not self.main_id and isinstance(record.get("sessionId"), str):
            self.main_id = record["sessionId"]
        self.tree.add(record)
        note_agent_call(record, self.calls)
        rtype = record.get("type")
        if rtype == "system" and record.get("subtype") == "compact_boundary":
            self.boundaries[str(record.get("uuid"))] = record
        elif rtype == "summary" and isinstance(record.get("summary"), str):
            self.summaries.append(record)

    def close(self) -> None:
        """Every record was noted: work out what needs them all."""
        self.main_id = self.main_id or self.path.name.removesuffix(".jsonl")
        self.inherited = sidechain_agents(self.tree)

    def key(self, record: dict[str, Any]) -> str:
        """The session of the file `record` belongs to (`claude_tree.partition_key`)."""
        return partition_key(record, self.inherited)

    def conversation(self, key: str) -> _Conversation:
        """A new `_Conversation` for session `key` of the file."""
        return _Conversation(subagent_session_id(self.main_id, key), self.tree, self.boundaries)

    def title(self, key: str, conversation: _Conversation, leaf: str) -> str:
        """The title of session `key` (`leaf`: the uuid of its last record)."""
        title = first_line(conversation.first_prompt)
        if key.startswith("acompact"):
            title = f"Compaction summariser of {self.main_id}"
        elif key:
            title = f"Sub-agent: {title or key}"
        elif self.summaries:
            active = self.tree.path(leaf)
            on_branch = [r for r in self.summaries if r.get("leafUuid") in active]
            title = (on_branch or self.summaries)[-1 if on_branch else 0]["summary"]
        return title or conversation.builder.session_id

    def link(self, key: str, parsed: ParsedSession) -> ParsedSession:
        """`parsed` (session `key`) linked to its parent session and call."""
        if key:
            parsed.parent_session_id = self.main_id
            parsed.parent_call_id = self.calls.get(key, "")
        return parsed


#: What `SessionBuilder.build` / `header` take for every Claude Code session.
SESSION_FIELDS: dict[str, Any] = {
    "app_name": "claude-code",
    "user_id": "",
    "state": {},
    "source_format": Session.SourceFormat.CLAUDE_CODE,
}


def parse_claude_code(path: Path, text: JsonLinesText) -> ParseResult:
    """Parse one Claude Code JSONL file (see the module docstring for the rules): the main
    conversation and each sub-agent in it, one session each."""
    problems: list[ImportProblem] = []
    shape = ClaudeFile(path)
    records: list[tuple[int, datetime, dict[str, Any]]] = []
    for number, at, record in read_records(str(path), text, problems):
        shape.note(at, record)
        if at is not None:
            records.append((number, at, record))
    if not records:
        return ParseResult(sessions=[], problems=problems)
    shape.close()
    parts: dict[str, list[tuple[int, datetime, dict[str, Any]]]] = {}
    for item in records:
        parts.setdefault(shape.key(item[2]), []).append(item)
    sessions = []
    for key, items in parts.items():
        conversation = shape.conversation(key)
        conversation.run(items)
        title = shape.title(key, conversation, str(items[-1][2].get("uuid") or ""))
        parsed = conversation.builder.build(title=title, **SESSION_FIELDS)
        sessions.append(shape.link(key, parsed))
    return ParseResult(sessions=sessions, problems=problems)


def looks_like_claude_record(record: dict[str, Any]) -> bool:
    """True for a JSON Lines record with a Claude Code record `type` or a `sessionId`."""
    return record.get("type") in CLAUDE_TYPES or "sessionId" in record


FORMAT = JsonLinesFormat(
    name=Session.SourceFormat.CLAUDE_CODE,
    looks_like_record=looks_like_claude_record,
    parse_text=parse_claude_code,
)
