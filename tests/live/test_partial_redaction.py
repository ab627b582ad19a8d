"""Partial events reach watchers redacted, like the events the store keeps."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync

from agentops.runtime.model import Content, Event, Role, ToolCall
from sessions_app import live
from sessions_app.live import groups
from tests.redaction_cases import SHAPES

SECRET = next(shape for shape in SHAPES if shape.name.startswith("github")).text


def _sent_partial(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    sent: list[dict[str, Any]] = []

    async def record(session_id: str, message: dict[str, Any]) -> None:
        sent.append(message)

    monkeypatch.setattr(groups, "broadcast", record)
    call = ToolCall(id="c1", name="deploy", arguments={"token": SECRET})
    content = Content(role=Role.ASSISTANT, text=f"use {SECRET}", tool_calls=(call,))
    event = Event(session_id="s", turn_id="t", author="agent", content=content, partial=True)
    async_to_sync(live.LiveSessionService().broadcast_partial)(event)
    [message] = sent
    partial: dict[str, Any] = message["partial"]
    return partial


def test_a_partial_event_is_broadcast_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    partial = _sent_partial(monkeypatch)
    assert SECRET not in repr(partial)
    assert "[REDACTED:" in partial["delta"]


def test_partial_redaction_follows_the_runtime_setting(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.AGENTOPS_REDACT_RUNTIME_EVENTS = False
    assert SECRET in _sent_partial(monkeypatch)["delta"]
