"""A model span's input as the turn reads it: only the messages after the last assistant
message (the rest is history already stored). Reading only that tail of the GenAI
attribute gives the same messages as reading it all and cutting."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sessions_app.otlp.messages import input_messages


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


HISTORIES = [
    [],
    [_text("user", "hi")],
    [_text("system", "be brief"), _text("user", "hi"), _text("assistant", "hello")],
    [_text("user", "a"), _text("model", "b"), "not a message", _text("user", "c")],
    [_text("user", "a"), _text("AI", "b"), {"role": "tool", "parts": [
        {"type": "tool_call_response", "id": "c1", "response": {"ok": 1}}]}, 7],
    [_text("assistant", "x"), _text("human", "y"), _text("system", "z"), _text("user", "w")],
]  # fmt: skip


def _cut(messages: list[Any]) -> list[Any]:
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    return messages[last + 1 :]


@pytest.mark.parametrize("history", HISTORIES)
def test_reading_only_the_tail_gives_the_tail(history: list[Any]) -> None:
    attributes = {"gen_ai.input.messages": json.dumps(history)}
    whole = input_messages(attributes)
    assert input_messages(attributes, after_last_assistant=True) == _cut(whole)
