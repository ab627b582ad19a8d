"""Turn stored events into what the session page shows (presentation only, no rules).

`conversation()` pairs each tool call with the tool event that answers it (the first
unanswered call with that id, docs/runtime.md §5), so a call and its result render together; tool
events that answer no call in view are shown on their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from agentops.runtime.model import Event as RuntimeEvent
from agentops.runtime.projection import ProjectionEntry
from agentops.runtime.protocol import ToolProtocolIssue
from agentops.runtime.session import Turn
from sessions_app.models import Event
from sessions_app.pages.rendering import pretty_json, render_markdown
from sessions_app.projector import OUTCOME_AUTHOR, RecordedOutcome
from sessions_app.store import UnreadableRowError


@dataclass
class ToolCallView:
    """One tool call of an assistant event and, when stored, its result event."""

    id: str
    name: str
    arguments_json: str
    result: Event | None = None
    pending: bool = False

    @property
    def is_error(self) -> bool:
        return bool(
            self.result and self.result.tool_response and "error" in self.result.tool_response
        )

    @property
    def result_text(self) -> str:
        """The result as text: the error, the result value (JSON unless a string), or text."""
        if self.result is None:
            return ""
        response = self.result.tool_response
        if response:
            value = response.get("error") if "error" in response else response.get("result")
            return value if isinstance(value, str) else pretty_json(value)
        return self.result.text


@dataclass
class EventView:
    """An event ready to render: sanitised HTML of its text and its paired tool calls."""

    event: Event
    html: SafeString
    images: list[dict[str, Any]] = field(default_factory=list)
    calls: list[ToolCallView] = field(default_factory=list)

    @property
    def is_state_only(self) -> bool:
        e = self.event
        return not (e.text or e.parts or e.reasoning or e.tool_calls or e.tool_response) and bool(
            e.state_delta
        )

    @property
    def usage(self) -> dict[str, Any] | None:
        return self.event.usage or None


def _raw_html(value: Any) -> SafeString:
    """A stored value of an unexpected shape, shown as it is (escaped JSON)."""
    return format_html('<pre class="raw unreadable">{}</pre>', pretty_json(value))


def _message_html(event: Event) -> tuple[SafeString, list[dict[str, Any]]]:
    # Parts take precedence over plain text (docs/runtime.md §1).
    if event.parts:
        parts = event.parts if isinstance(event.parts, list) else None
        if parts is None or not all(isinstance(p, dict) for p in parts):
            return _raw_html(event.parts), []  # stored around validation: shown raw
        texts = [str(p.get("text") or "") for p in parts if p.get("type") == "text"]
        images = [p for p in parts if p.get("type") in {"image_url", "image_base64"}]
        return mark_safe(render_markdown("\n\n".join(texts))), images
    return mark_safe(render_markdown(event.text)), []


def _calls(event: Event) -> list[ToolCallView]:
    calls = event.tool_calls if isinstance(event.tool_calls, list) else [event.tool_calls]
    pending = set(event.pending_call_ids) if isinstance(event.pending_call_ids, list) else set()
    views = []
    for call in calls or []:
        if not isinstance(call, dict):  # stored around validation: shown raw
            views.append(
                ToolCallView(id="", name="(unreadable call)", arguments_json=pretty_json(call))
            )
            continue
        views.append(
            ToolCallView(
                id=str(call.get("id", "")),
                name=str(call.get("name", "")),
                arguments_json=pretty_json(call.get("arguments", {})),
                pending=str(call.get("id")) in pending,
            )
        )
    return views


def conversation(events: Sequence[Event]) -> list[EventView]:
    """The events in order as EventViews, with tool results folded into their calls.

    A tool event is folded into the first earlier call in `events` with the same id that
    has no result yet; otherwise it stays in the list as a standalone result.
    """
    views: list[EventView] = []
    open_calls: dict[str, list[ToolCallView]] = {}
    for event in events:
        if event.role == Event.Role.TOOL:
            waiting = open_calls.get(event.answered_call_id)
            if waiting:
                waiting.pop(0).result = event
                continue
        html, images = _message_html(event)
        view = EventView(event=event, html=html, images=images)
        for call_view in _calls(event):
            view.calls.append(call_view)
            open_calls.setdefault(call_view.id, []).append(call_view)
        views.append(view)
    return views


def query_without(params: QueryDict, *names: str) -> str:
    """The query string of `params` without `names`, for pagination links ("" if empty)."""
    kept: Iterable[tuple[str, str]] = (
        (key, value) for key, values in params.lists() if key not in names for value in values
    )
    return urlencode(list(kept))


@dataclass
class RuntimeEventView:
    """A runtime `Event` (from the projector or inspector) ready to render."""

    event: RuntimeEvent
    html: SafeString
    calls: list[dict[str, Any]]
    result_summary: str

    @property
    def answered_call_id(self) -> str:
        return self.event.content.answered_call_id


def runtime_event(event: RuntimeEvent) -> RuntimeEventView:
    """Render a runtime event: sanitised markdown text, its calls, a result summary."""
    content = event.content
    if content.parts:
        text = "\n\n".join(part.text for part in content.parts if part.type == "text")
    else:
        text = content.text
    summary = ""
    if content.tool_response is not None:
        response = content.tool_response
        value = response.error if response.is_error else response.result
        summary = value if isinstance(value, str) else pretty_json(value)
    elif content.role == "tool":
        # A plain tool result (tool_call_id + text, docs/runtime.md §1): its value is the text.
        summary, text = text, ""
    return RuntimeEventView(
        event=event,
        html=mark_safe(render_markdown(text)),  # sanitised by nh3
        calls=[
            {"id": call.id, "name": call.name, "arguments_json": pretty_json(call.arguments)}
            for call in content.tool_calls
        ],
        result_summary=summary,
    )


@dataclass
class ProjectionEntryView:
    """One row of the projected-context page: the entry and its rendered event."""

    entry: ProjectionEntry
    view: RuntimeEventView

    @property
    def kind(self) -> str:
        return self.entry.kind.value

    @property
    def label(self) -> str:
        """Why the entry is there: the projector's reason, or "recorded tool outcome"."""
        event = self.entry.event
        if event.id == 0 and event.author == OUTCOME_AUTHOR:
            return "recorded tool outcome (not stored; closes the call)"
        return self.entry.reason


def projection_entry(entry: ProjectionEntry) -> ProjectionEntryView:
    """Wrap a `ProjectionEntry` (runtime) with the rendered event."""
    return ProjectionEntryView(entry=entry, view=runtime_event(entry.event))


@dataclass
class ProtocolIssueView:
    """One tool-protocol issue (docs/runtime.md §5) with its turn record and pending markers.

    `turn` is None for legacy events (no turn record); `calls` are dicts of
    {id, name, arguments_json, pending} where pending means the source marked the call as
    awaiting approval or long-running.
    """

    issue: ToolProtocolIssue
    turn: Turn | None
    calls: list[dict[str, Any]]

    @property
    def all_pending(self) -> bool:
        return all(call["pending"] for call in self.calls)

    @property
    def all_recorded(self) -> bool:
        return all(call["outcome"] is not None for call in self.calls)


def protocol_issue(
    issue: ToolProtocolIssue,
    turn: Turn | None,
    pending_call_ids: list[str] | None,
    outcomes: Mapping[tuple[int, str], RecordedOutcome] | None = None,
) -> ProtocolIssueView:
    """Present `issue` with its turn, which of its calls are pending approval and which
    have a recorded outcome (`outcome`: a RecordedOutcome or None; `result_json` its
    result as JSON text)."""
    pending = set(pending_call_ids or [])
    calls = []
    for call in issue.tool_calls:
        outcome = (outcomes or {}).get((issue.event_id, call.id))
        calls.append(
            {
                "id": call.id,
                "name": call.name,
                "arguments_json": pretty_json(call.arguments),
                "pending": call.id in pending,
                "outcome": outcome,
                "result_json": pretty_json(outcome.result) if outcome else "",
            }
        )
    return ProtocolIssueView(issue=issue, turn=turn, calls=calls)


def unreadable(error: UnreadableRowError) -> dict[str, Any]:
    """Template context for a stored row the runtime cannot read (`_unreadable.html`):
    ``{"unreadable": error, "unreadable_json": its raw column values as JSON text}``."""
    return {"unreadable": error, "unreadable_json": pretty_json(error.raw)}
