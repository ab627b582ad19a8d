"""Turn stored events into what the session page shows (presentation only, no rules).

`conversation()` pairs each tool call with the tool event that answers it (the first
unanswered call with that id, docs/runtime.md §5), so a call and its result render together; tool
events that answer no call in view are shown on their own.

Tool results are shown by `result_display`: images inside a result are taken out of the
text (`images.split_images`) and the text is cut at `RESULT_PREVIEW_CHARS` with a "show
all" link that loads the whole value. A call shows how long it took: from its event to
its result event, or to the outcome a person recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
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
from sessions_app.pages.calls import argument_preview, output_text
from sessions_app.pages.images import ResultImage, split_images
from sessions_app.pages.rendering import pretty_json, render_markdown
from sessions_app.projector import COMPACTION_AUTHOR, OUTCOME_AUTHOR, RecordedOutcome
from sessions_app.store import UnreadableRowError
from sessions_app.values import format_duration

#: Characters of a tool result shown before "show all".
RESULT_PREVIEW_CHARS = 20_000


@dataclass(frozen=True)
class ResultDisplay:
    """A tool result as the page shows it: `text` with images replaced by placeholders,
    and the `images`."""

    text: str
    images: list[ResultImage]

    @property
    def preview(self) -> str:
        """The first `RESULT_PREVIEW_CHARS` characters of the text."""
        return self.text[:RESULT_PREVIEW_CHARS]

    @property
    def cut(self) -> bool:
        """True when `preview` is not the whole text."""
        return len(self.text) > RESULT_PREVIEW_CHARS


def result_display(event: Event) -> ResultDisplay:
    """How the page shows the tool result `event`: the error, the result value (JSON
    unless a string), or the text, with images taken out (`split_images`)."""
    response = event.tool_response
    if isinstance(response, dict) and response:
        value = response.get("error") if "error" in response else response.get("result")
    elif response:  # stored around validation: shown as it is
        value = response
    else:
        value = event.text
    clean, images = split_images(value)
    text = output_text(clean)  # command output wrapped in JSON: shown as its text
    if text is None:
        text = clean if isinstance(clean, str) else pretty_json(clean)
    return ResultDisplay(text=text, images=images)


@dataclass
class ToolCallView:
    """One tool call of an assistant event and, when stored, its result event; `preview`
    is one line of its arguments, `outcome` what a person recorded for it (or None),
    `called_at` when the event holding the call was stored (None: unknown)."""

    id: str
    name: str
    arguments_json: str
    result: Event | None = None
    pending: bool = False
    preview: str = ""
    outcome: RecordedOutcome | None = None
    called_at: datetime | None = None

    @property
    def duration_seconds(self) -> float | None:
        """Seconds from the call to its result event, or to the outcome a person recorded
        when there is no result; None while neither exists (or a time is missing). Never
        negative: an import whose clock runs backwards reads 0."""
        if self.called_at is None:
            return None
        if self.result is not None:
            ended = self.result.created_at
        elif self.outcome is not None:
            ended = self.outcome.recorded_at
        else:
            return None
        if not isinstance(ended, datetime):
            return None
        return max((ended - self.called_at).total_seconds(), 0.0)

    @property
    def duration_text(self) -> str:
        """`duration_seconds` as a short phrase ("0.4 s", "3 min 5 s"); "" when unknown."""
        seconds = self.duration_seconds
        return "" if seconds is None else format_duration(seconds)

    @property
    def is_error(self) -> bool:
        return bool(
            self.result and self.result.tool_response and "error" in self.result.tool_response
        )

    @property
    def result_text(self) -> str:
        """The result as text (`result_display`: images as placeholders)."""
        return self.display.text if self.result is not None else ""

    @cached_property
    def display(self) -> ResultDisplay:
        """The result as shown (`result_display`); empty when there is no result."""
        return result_display(self.result) if self.result else ResultDisplay("", [])


@dataclass
class EventView:
    """An event ready to render: sanitised HTML of its text and its paired tool calls.

    `lineage` is "" for an event of the conversation, "compacted" for one before the
    session's last compaction (summarised, not sent), "abandoned" for an archived one (a
    rewound branch, not sent) and "compaction" for a compaction event, whose `compaction`
    holds its facts (trigger, pre_tokens, summarised_events, summarised_up_to,
    todo_carried).
    """

    event: Event
    html: SafeString
    images: list[dict[str, Any]] = field(default_factory=list)
    calls: list[ToolCallView] = field(default_factory=list)
    lineage: str = ""
    compaction: dict[str, Any] = field(default_factory=dict)

    @property
    def is_state_only(self) -> bool:
        e = self.event
        return not (e.text or e.parts or e.reasoning or e.tool_calls or e.tool_response) and bool(
            e.state_delta
        )

    @property
    def usage(self) -> dict[str, Any] | None:
        return self.event.usage or None

    @cached_property
    def display(self) -> ResultDisplay:
        """A standalone tool result as shown (`result_display`)."""
        return result_display(self.event)


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
                preview=argument_preview(call.get("arguments")),
                called_at=event.created_at if isinstance(event.created_at, datetime) else None,
            )
        )
    return views


@dataclass(frozen=True)
class Compactions:
    """A session's compaction events: `facts` by event id, and `last` (the id of the last
    one that is not archived: events before it are compacted; 0 = none)."""

    facts: dict[int, dict[str, Any]]
    last: int = 0


def last_compaction(session: Any) -> Compactions:
    """The compactions of `session` (a `Session`), one query."""
    rows = Event.objects.filter(
        session=session, author=COMPACTION_AUTHOR, role=Event.Role.USER, deleted_at__isnull=True
    ).values_list("id", "raw", "archived_at")
    facts: dict[int, dict[str, Any]] = {}
    last = 0
    for event_id, raw, archived_at in rows:
        value = raw.get("compaction") if isinstance(raw, dict) else None
        facts[event_id] = value if isinstance(value, dict) else {}
        if archived_at is None:
            last = max(last, event_id)
    return Compactions(facts=facts, last=last)


def conversation(
    events: Sequence[Event],
    compactions: Compactions | None = None,
    outcomes: Mapping[tuple[int, str], RecordedOutcome] | None = None,
    *,
    timed: bool = True,
) -> list[EventView]:
    """The events in order as EventViews, with tool results folded into their calls,
    recorded outcomes (keyed by (event id, call id)) beside theirs, and their lineage
    marked (`compactions`: the session's, see `last_compaction`). `timed` False (a
    source without timestamps, `values.UNTIMED_FORMATS`): calls get no duration.

    A tool event is folded into the first earlier call in `events` with the same id that
    has no result yet; otherwise it stays in the list as a standalone result.
    """
    compactions = compactions or Compactions(facts={})
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
        if event.archived_at is not None:
            view.lineage = "abandoned"
        elif event.id in compactions.facts:
            view.lineage, view.compaction = "compaction", compactions.facts[event.id]
        elif event.id < compactions.last:
            view.lineage = "compacted"
        for call_view in _calls(event):
            if not timed:
                call_view.called_at = None
            call_view.outcome = (outcomes or {}).get((event.id, call_view.id))
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
        value, _images = split_images(response.error if response.is_error else response.result)
        summary = value if isinstance(value, str) else pretty_json(value)
    elif content.role == "tool":
        # A plain tool result (tool_call_id + text, docs/runtime.md §1): its value is the text.
        plain, _images = split_images(text)
        summary, text = str(plain), ""
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
