"""Reading OpenAI Responses-API items (the conversation items of the Responses API, of
Agents SDK RunState `raw_item`s and of Codex rollouts) into `SessionBuilder` events.

Item types (openai-python `ResponseInputItem` / `ResponseOutputItem`, Agents SDK
`run_state.py` deserialisers): `message` (or a bare `{role, content}`), `reasoning`,
calls with their outputs matched by `call_id` (`function_call`, `custom_tool_call`,
`computer_call`, `local_shell_call`, `shell_call`, `apply_patch_call`,
`tool_search_call`, `program`, each with its `*_output`), hosted tool calls that carry
their own result (`mcp_call`, `web_search_call`, `file_search_call`,
`code_interpreter_call`, `image_generation_call`), MCP approval requests (a call awaiting
a person's answer: pending) and responses (the person's decision, `{approve, reason}`: the
result of the request it names; one naming no request read is kept as a note),
`mcp_list_tools` and `compaction` (kept as system notes, never sent as conversation
turns), `item_reference` (a pointer, skipped).

Rules: consecutive calls (after an assistant message) form one assistant event, as a
model emits parallel calls; reasoning summaries are held for the next assistant event; a
user message is a real prompt unless `prompts=False`.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sessions_app.ingest.builder import SessionBuilder
from sessions_app.ingest.normalise import decode_output, normalise_arguments
from sessions_app.ingest.parsed import ParsedEvent, tool_result_event

#: call type -> the output type that answers it (both matched by `call_id`).
CALL_OUTPUTS = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "tool_search_call": "tool_search_output",
    "program": "program_output",
}
OUTPUT_TYPES = frozenset(CALL_OUTPUTS.values())
#: Hosted tools: the call item carries its own result (no separate output item).
HOSTED_CALLS = frozenset(
    {
        "mcp_call",
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
    }
)
#: Items kept as system notes (facts of the run, not conversation turns).
NOTE_TYPES = frozenset({"mcp_list_tools", "compaction", "mcp_approval_response"})
#: Every item type this module reads (detection of bare Responses item lists).
ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "item_reference",
        "mcp_approval_request",
        *CALL_OUTPUTS,
        *OUTPUT_TYPES,
        *HOSTED_CALLS,
        *NOTE_TYPES,
    }
)
TEXT_PART_TYPES = ("text", "input_text", "output_text", "refusal", "summary_text")


def content_text(content: Any) -> str:
    """The text of a message `content`: the string, or its text parts joined by blank
    lines (image and file parts are left to `content_parts`)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") in TEXT_PART_TYPES:
                value = part.get("text", part.get("refusal"))
                texts.append(value if isinstance(value, str) else "")
        return "\n\n".join(texts)
    return ""


def content_parts(content: Any) -> list[dict[str, Any]]:
    """Image parts of a message `content` as runtime content parts (docs/runtime.md §1):
    `input_image` with a URL or data: URL, `image_url` parts; text parts come along when
    there is an image, so parts (which take precedence over text) lose nothing."""
    if not isinstance(content, list):
        return []
    parts: list[dict[str, Any]] = []
    has_image = False
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in TEXT_PART_TYPES:
            value = part.get("text", part.get("refusal"))
            parts.append({"type": "text", "text": value if isinstance(value, str) else ""})
        elif kind in ("input_image", "image_url"):
            url = part.get("image_url")
            if isinstance(url, dict):
                url = url.get("url")
            if isinstance(url, str) and url:
                parts.append({"type": "image_url", "image_url": url})
                has_image = True
    return parts if has_image else []


class ResponsesReader:
    """Adds Responses-API items to `builder`, one `add(item, at, raw, author)` at a time.

    `prompts`: user messages start turns (False for items that replay earlier history
    without being prompts, unused by default). `pending` holds call ids that await a
    person's approval (`pending_call_ids`). `first_prompt` is the text of the first user
    message read.
    """

    def __init__(self, builder: SessionBuilder, pending: set[str] | None = None) -> None:
        self.builder = builder
        self.pending = pending if pending is not None else set()
        self.call_names: dict[str, str] = {}
        self.first_prompt = ""
        self._reasoning: list[str] = []
        # The assistant event that calls join (parallel calls after a message).
        self._group: ParsedEvent | None = None
        self._idless: defaultdict[str, deque[str]] = defaultdict(deque)

    def _assistant(self, at: datetime, author: str, raw: Any, source_id: str) -> ParsedEvent:
        event = ParsedEvent(
            role="assistant", created_at=at, author=author, source_id=source_id, raw=raw
        )
        if self._reasoning:
            event.reasoning = "\n\n".join(self._reasoning)
            self._reasoning.clear()
        return self.builder.add(event)

    def _call(
        self, item: dict[str, Any], at: datetime, raw: Any, author: str, kind: str
    ) -> tuple[str, ParsedEvent]:
        call_id = str(item.get("call_id") or item.get("id") or "")
        if not call_id:
            # Server-run calls (tool_search) have no id: their output comes next, in order.
            call_id = f"{kind}-{len(self.call_names) + 1}"
            self._idless[CALL_OUTPUTS.get(kind, "")].append(call_id)
        name = item.get("name")
        call_name = name if isinstance(name, str) and name else kind
        if kind == "mcp_call" and isinstance(item.get("server_label"), str):
            call_name = f"{item['server_label']}.{item.get('name') or ''}"
        args: Any = None
        for key in ("arguments", "input", "action", "code", "operation", "query", "queries"):
            if key in item:
                args = item[key]
                break
        arguments = normalise_arguments(args)
        last = self.builder.last_event()
        if last is not None and last is self._group and last.author == author:
            event = last
            if not isinstance(event.raw, list):
                event.raw = [event.raw]
        else:
            event = self._assistant(at, author, [], call_id)
            self._group = event
        if isinstance(event.raw, list):
            event.raw.append(raw)
        event.tool_calls.append({"id": call_id, "name": call_name, "arguments": arguments})
        event.finish_reason = "tool_calls"
        if call_id in self.pending:
            event.pending_call_ids.append(call_id)
        self.call_names[call_id] = call_name
        return call_id, event

    def _result(
        self, call_id: str, at: datetime, raw: Any, result: Any, *, error: Any = None
    ) -> None:
        response: dict[str, Any] = {
            "tool_call_id": call_id,
            "name": self.call_names.get(call_id, ""),
        }
        if error not in (None, ""):
            response["error"] = error if isinstance(error, str) else json.dumps(error)
        else:
            response["result"] = result
        self.builder.add(
            tool_result_event(call_id=call_id, response=response, at=at, source_id=call_id, raw=raw)
        )

    def add(
        self,
        item: dict[str, Any],
        at: Callable[[], datetime],
        raw: Any,
        author: str = "assistant",
    ) -> bool:
        """Add one item; `at()` gives the time of each event it makes. Returns False for
        an item this reader does not know (the caller reports it)."""
        kind = item.get("type")
        role = item.get("role")
        if kind in (None, "message") and isinstance(role, str):
            self._message(item, role, at(), raw, author)
        elif kind == "reasoning":
            summary = item.get("summary") or []
            texts = (
                [str(s.get("text") or "") for s in summary if isinstance(s, dict) and s.get("text")]
                if isinstance(summary, list)
                else []
            )
            if not texts:
                texts = [content_text(item.get("content"))] if item.get("content") else []
            if texts:
                self._reasoning.append("\n\n".join(texts))
        elif kind in CALL_OUTPUTS:
            self._call(item, at(), raw, author, str(kind))
        elif kind in OUTPUT_TYPES:
            call_id = str(item.get("call_id") or "")
            if not call_id and self._idless[str(kind)]:
                call_id = self._idless[str(kind)].popleft()
            output = item.get("output", item.get("result", item.get("tools")))
            self._result(call_id, at(), raw, decode_output(output), error=item.get("error"))
        elif kind in HOSTED_CALLS:
            when = at()
            call_id, _event = self._call(item, when, raw, author, str(kind))
            result = {
                k: v
                for k, v in item.items()
                if k in ("output", "outputs", "results", "result", "status", "action")
            }
            self._result(call_id, when, raw, result, error=item.get("error"))
        elif kind == "mcp_approval_request":
            call_id = str(item.get("id") or "")
            self.pending.add(call_id)
            self._call({**item, "call_id": call_id}, at(), raw, author, "mcp_approval_request")
        elif kind == "mcp_approval_response" and self._requested(item):
            # A person's decision answers the approval request it names.
            decision = {k: item[k] for k in ("approve", "reason") if k in item}
            self._result(str(item["approval_request_id"]), at(), raw, decision)
        elif kind in NOTE_TYPES:
            note = {"mcp_list_tools": "MCP tools listed", "compaction": "history compacted"}
            self.builder.add(
                ParsedEvent(
                    role="system",
                    created_at=at(),
                    author=str(kind),
                    text=note.get(str(kind), f"MCP approval: {bool(item.get('approve'))}"),
                    raw=raw,
                )
            )
        elif kind == "item_reference":
            return True
        else:
            return False
        return True

    def _requested(self, item: dict[str, Any]) -> bool:
        """True when `item` (an `mcp_approval_response`) names an approval request read."""
        request_id = item.get("approval_request_id")
        return isinstance(request_id, str) and request_id in self.call_names

    def _message(
        self, item: dict[str, Any], role: str, at: datetime, raw: Any, author: str
    ) -> None:
        content = item.get("content")
        text = content_text(content)
        parts = content_parts(content)
        if role == "user":
            self.builder.add(
                ParsedEvent(
                    role="user", created_at=at, author="user", text=text, parts=parts, raw=raw
                ),
                prompt=True,
            )
            self.first_prompt = self.first_prompt or text
        elif role in ("system", "developer"):
            self.builder.add(
                ParsedEvent(role="system", created_at=at, author=role, text=text, raw=raw)
            )
        else:
            event = self._assistant(at, author, raw, str(item.get("id") or ""))
            event.text, event.parts, event.finish_reason = text, parts, "stop"
            self._group = event

    def finish(self, at: datetime) -> None:
        """Keep reasoning that nothing followed (the transcript stops there)."""
        if self._reasoning:
            self._assistant(at, "assistant", None, "")

    @property
    def has_reasoning(self) -> bool:
        """True while reasoning waits for the next assistant event."""
        return bool(self._reasoning)
