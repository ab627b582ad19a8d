"""Minimal Claude Code JSONL lines for tests (the real record shapes, few fields)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SID = "s-claude"


class Lines:
    """Builds one transcript: each method appends a record and returns its uuid."""

    def __init__(self, session_id: str = SID, **common: Any) -> None:
        self.session_id = session_id
        self.common = common
        self.records: list[dict[str, Any]] = []
        self.last = ""
        self.clock = 0

    def _add(self, record: dict[str, Any], parent: str | None) -> str:
        self.clock += 1
        uuid = f"{self.common.get('agentId', 'm')}-u{len(self.records) + 1}"
        record = {
            "parentUuid": self.last if parent is None else (parent or None),
            "sessionId": self.session_id,
            "uuid": uuid,
            "timestamp": f"2026-02-01T10:{self.clock // 60:02d}:{self.clock % 60:02d}.000Z",
            **self.common,
            **record,
        }
        self.records.append(record)
        self.last = uuid
        return uuid

    def prompt(self, text: str, parent: str | None = None, **extra: Any) -> str:
        message = {"role": "user", "content": text}
        return self._add({"type": "user", "message": message, **extra}, parent)

    def use(self, msg_id: str, call_id: str, name: str = "Bash", **extra: Any) -> str:
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {"command": "ls"}}
        message = {"id": msg_id, "role": "assistant", "model": "claude", "content": [block]}
        return self._add({"type": "assistant", "message": message, **extra}, None)

    def todo_write(self, msg_id: str, call_id: str, todos: list[dict[str, str]]) -> str:
        block = {"type": "tool_use", "id": call_id, "name": "TodoWrite", "input": {"todos": todos}}
        message = {"id": msg_id, "role": "assistant", "model": "claude", "content": [block]}
        return self._add({"type": "assistant", "message": message}, None)

    def say(self, msg_id: str, text: str, parent: str | None = None) -> str:
        message = {
            "id": msg_id,
            "role": "assistant",
            "model": "claude",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
        }
        return self._add({"type": "assistant", "message": message}, parent)

    def result(self, call_id: str, text: str = "ok", **extra: Any) -> str:
        block = {"type": "tool_result", "tool_use_id": call_id, "content": text}
        message = {"role": "user", "content": [block]}
        return self._add({"type": "user", "message": message, **extra}, None)

    def compaction(self, summary: str) -> str:
        boundary = self._add(
            {
                "type": "system",
                "subtype": "compact_boundary",
                "parentUuid": None,
                "logicalParentUuid": self.last,
                "compactMetadata": {"trigger": "auto", "preTokens": 1234},
            },
            None,
        )
        self.records[-1]["parentUuid"] = None
        message = {"role": "user", "content": summary}
        return self._add({"type": "user", "message": message, "isCompactSummary": True}, boundary)

    def raw(self, record: dict[str, Any]) -> None:
        self.records.append(record)

    def text(self) -> str:
        return "".join(json.dumps(r) + "\n" for r in self.records)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.text())
        return path


def project_folder(root: Path) -> list[Path]:
    """A real-shaped project folder: main session (a Task call whose result names agent
    a1, then a compaction), subagents/agent-a1.jsonl and subagents/agent-acompact-x.jsonl."""
    main = Lines()
    main.prompt("explore")
    main.use("msg_1", "task-1", name="Task")
    main.result("task-1", "report", toolUseResult={"status": "completed", "agentId": "a1"})
    main.say("msg_2", "explored")
    main.compaction("This session is being continued from a previous conversation.")
    main.say("msg_3", "continuing")
    sub = Lines(agentId="a1", isSidechain=True)
    sub.prompt("look around")
    sub.say("msg_s1", "found it")
    compact = Lines(agentId="acompact-x", isSidechain=True)
    compact.prompt("Your task is to create a detailed summary of the conversation so far")
    compact.say("msg_c1", "<summary>...</summary>")
    return [
        main.write(root / f"{SID}.jsonl"),
        sub.write(root / SID / "subagents" / "agent-a1.jsonl"),
        compact.write(root / SID / "subagents" / "agent-acompact-x.jsonl"),
    ]
