"""Small readable views of stored values for the timeline (presentation only, no rules).

- `argument_preview`: one line saying what a tool call did (the command, the path, the
  query), shown on the collapsed call so 34 identical ``shell`` rows tell apart;
- `output_text`: a tool result that is JSON text wrapping command output (Codex's
  ``{"output": "...", "metadata": {...}}``) shown as the text it holds;
- `state_changes`: an event's `state_delta` as rows of keys and the values they were set to.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sessions_app.pages.rendering import pretty_json

#: Characters of an argument preview.
PREVIEW_CHARS = 100
#: Argument keys that say what a call did, most telling first.
PREVIEW_KEYS = (
    "command",
    "cmd",
    "file_path",
    "path",
    "query",
    "pattern",
    "url",
    "q",
    "prompt",
    "description",
)


def _one_line(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        # Codex's ["bash", "-lc", "ls -la"]: the script is what a person reads.
        words = value[2:] if len(value) >= 3 and value[1] in {"-lc", "-c"} else value
        value = " ".join(words)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def argument_preview(arguments: Any) -> str:
    """One line (at most PREVIEW_CHARS) saying what a call with `arguments` did: the value
    of the first known key (PREVIEW_KEYS), else the first string argument, else ""."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return _one_line(arguments)
    if not isinstance(arguments, dict):
        return ""
    for key in PREVIEW_KEYS:
        if arguments.get(key) not in (None, "", []):
            return _one_line(arguments[key])
    for value in arguments.values():
        if isinstance(value, str) and value.strip():
            return _one_line(value)
    return ""


def output_text(value: Any) -> str | None:
    """The text a tool result holds when it is command output wrapped in JSON: a string
    that is a JSON string, or an object (or JSON text of one) whose "output" is a string,
    given as that text followed by the other keys as JSON. None for any other value."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] not in {"{", '"'}:
            return None
        try:
            value = json.loads(stripped)
        except ValueError:
            return None
        if isinstance(value, str):
            return value
    if isinstance(value, dict) and isinstance(value.get("output"), str):
        rest = {key: item for key, item in value.items() if key != "output"}
        tail = f"\n\n{json.dumps(rest, ensure_ascii=False)}" if rest else ""
        return str(value["output"]) + tail
    return None


@dataclass(frozen=True)
class StateChange:
    """One key of a state update and the value it was set to, as JSON text."""

    key: str
    value: str


def state_changes(delta: Any) -> list[StateChange]:
    """The keys of `state_delta` `delta` in order with their new values as JSON (storing an
    event merges these top-level keys into the session state, docs/runtime.md §1); [] for
    a value that is not an object."""
    if not isinstance(delta, dict):
        return []
    return [StateChange(str(key), pretty_json(value)) for key, value in delta.items()]
