"""What the OTLP tests compare of stored events: one row per event, in id order."""

from __future__ import annotations

from typing import Any

from sessions_app import models

#: (role, text, the ids of its tool calls, the call id a tool result answers).
EventRow = tuple[str, str, list[str], str]


def event_rows(**event_filter: Any) -> list[EventRow]:
    """The `EventRow`s of the events matching `event_filter`, in id order."""
    return [
        (
            e.role,
            e.text,
            [c["id"] for c in e.tool_calls],
            (e.tool_response or {}).get("tool_call_id", ""),
        )
        for e in models.Event.objects.filter(**event_filter).order_by("id")
    ]
