"""HTML frames for watchers: what the live websocket sends, made from payload values.

Each frame is a fragment for htmx's websocket extension, which swaps every top-level
element out of band (``hx-swap-oob``) into the page by id; the markup comes from the
page's own partials (``sessions/detail.html#turn``, ``#turn_head``, ``#event_count``,
``#turn_count``, ``#session_tokens``, ``#last_activity``, ``#session_model``,
``#indicator``, ``#stop_note``, ``sessions/_tabs.html#protocol_badge``,
``#resume_badge`` and ``sessions/turn_events.html#event``),
so a live page looks like a reloaded one. Every frame begins with the watcher's state,
``<span id="live-state" hidden data-kind=... data-last-id=...>``: what the frame is and
the last event id sent to this watcher (where a reconnect resumes); see `state`.

Frames by kind (T = turn id, N = event id):

- event: clears ``#live-stream-T``; appends the event to ``#live-events-T``, or for a tool
  result with a `pair` replaces ``#event-<call>`` with the call shown with its results;
  replaces ``#event-count-T`` when the count is known. State: event-id, turn-id, role,
  pair-id.
- turn: adds the turn's article before ``#timeline-end`` (the latest page's end; the page
  skips it when the turn is already shown), replaces ``#turn-head-T``, ``#turn-count``,
  the header's ``#session-tokens``, ``#last-activity`` and ``#session-model``, and the
  tabs' ``#protocol-badge`` and ``#resume-badge``; a running turn clears ``#stop-note``,
  an ended one ``#live-stream-T``. State: turn-id, status, reason.
- partial: the first of a stream replaces ``#live-stream-T`` with a streaming box, the
  next ones append their text to ``#stream-text-T``. State: turn-id, after-id.
- hello (``#live-indicator`` says Live), cancel (``#stop-note``), todos (state only:
  session-id, version), error (state only: error).

The bodies of event and turn frames depend only on the payload, so they are rendered
once per process (a small cache keyed by the event's id and update time, or the turn's
values), however many watchers the process serves.
"""

from __future__ import annotations

from collections import OrderedDict
from types import SimpleNamespace
from typing import Any

from django.template.loader import render_to_string
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from sessions_app import models
from sessions_app.live.payloads import event_row, turn_row
from sessions_app.pages import presenters
from sessions_app.projector import RecordedOutcome
from sessions_app.search.numbers import TokenTotals, cost_of

RUNNING = models.Turn.Status.RUNNING

#: How many rendered frame bodies a process keeps (recent events and turn changes).
CACHE_SIZE = 512

_cache: OrderedDict[tuple[Any, ...], SafeString] = OrderedDict()


def _cached(key: tuple[Any, ...], make: Any) -> SafeString:
    body = _cache.get(key)
    if body is None:
        body = make()
        _cache[key] = body
        if len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    else:
        _cache.move_to_end(key)
    return body


def state(kind: str, last_id: int, **attrs: object) -> SafeString:
    """The frame's first element: ``#live-state`` with ``data-kind``, ``data-last-id`` (the
    last event id sent to this watcher) and one ``data-<name>`` per keyword (underscores
    become hyphens; None is left out)."""
    extra = format_html_join(
        "",
        ' data-{}="{}"',
        ((name.replace("_", "-"), value) for name, value in attrs.items() if value is not None),
    )
    return format_html(
        '<span id="live-state" hidden hx-swap-oob="true" data-kind="{}" data-last-id="{}"{}>'
        "</span>",
        kind,
        last_id,
        extra,
    )


def _session(session_id: str) -> SimpleNamespace:
    # The partials only need `session.id` (for URLs).
    return SimpleNamespace(id=session_id)


def _cleared_stream(turn_id: str) -> SafeString:
    return format_html(
        '<div class="live-stream" id="live-stream-{}" hx-swap-oob="true"></div>', turn_id
    )


def _event_html(events: list[dict[str, Any]], shown: int, *, oob: bool) -> str:
    """The event with id `shown` among `events` (values, in order), with the results among
    them folded into its calls, rendered by the page's event partial."""
    views = presenters.conversation([event_row(values) for values in events])
    view = next(v for v in views if v.event.id == shown)
    # Live events belong to a running turn: a call without a result yet is in flight.
    context = {
        "item": view,
        "session": _session(events[-1]["session_id"]),
        "turn": SimpleNamespace(status=RUNNING),
        "oob_event": oob,
    }
    return render_to_string("sessions/turn_events.html#event", context)


def _event_body(event: dict[str, Any]) -> SafeString:
    turn_id = event["turn_id"]
    parts: list[str] = []
    if turn_id:
        parts.append(_cleared_stream(turn_id))
    pair = event.get("pair")
    if pair:
        group = [pair["event"], *pair["results"], event]
        parts.append(_event_html(group, pair["event"]["id"], oob=True))
    elif turn_id:
        html = mark_safe(_event_html([event], event["id"], oob=False))
        parts.append(
            format_html('<div id="live-events-{}" hx-swap-oob="beforeend">{}</div>', turn_id, html)
        )
    if turn_id and event.get("event_count") is not None:
        turn = SimpleNamespace(id=turn_id, event_count=event["event_count"])
        context = {"turn": turn, "oob_count": True}
        parts.append(render_to_string("sessions/detail.html#event_count", context))
    return mark_safe("".join(parts))


def event_frame(event: dict[str, Any]) -> SafeString:
    """The frame of an EventPayload for a watcher whose last event is now this one."""
    pair = event.get("pair")
    key = (
        "event",
        event["id"],
        event["updated_at"],
        pair["event"]["id"] if pair else None,
        len(pair["results"]) if pair else None,
        event.get("event_count"),
    )
    body = _cached(key, lambda: _event_body(event))
    head = state(
        "event",
        event["id"],
        event_id=event["id"],
        turn_id=event["turn_id"],
        role=event["role"],
        pair_id=pair["event"]["id"] if pair else None,
    )
    return head + body


def _turn_body(turn: dict[str, Any]) -> SafeString:
    context = {"turn": turn_row(turn), "session": _session(turn["session_id"])}
    article = mark_safe(render_to_string("sessions/detail.html#turn", context))
    parts = [
        format_html('<div id="timeline-end" hx-swap-oob="beforebegin">{}</div>', article),
        render_to_string("sessions/detail.html#turn_head", {**context, "oob_head": True}),
        render_to_string(
            "sessions/detail.html#turn_count",
            {"turn_count": turn["session_turn_count"], "oob": True},
        ),
    ]
    if "session_tokens_input" in turn:
        # The header's token totals, as a reloaded page shows them.
        values = (
            turn["session_tokens_input"],
            turn["session_tokens_output"],
            turn["session_tokens_cached"],
        )
        tokens = TokenTotals(*values, cost=cost_of(turn.get("session_model", ""), *values))
        parts.append(
            render_to_string("sessions/detail.html#session_tokens", {"tokens": tokens, "oob": True})
        )
    if "session_updated_at" in turn:
        # The header's last activity and model, as a reloaded page shows them.
        session = SimpleNamespace(
            updated_at=parse_datetime(turn["session_updated_at"]),
            model=turn.get("session_model", ""),
        )
        for part in ("last_activity", "session_model"):
            context = {"session": session, "oob": True}
            parts.append(render_to_string(f"sessions/detail.html#{part}", context))
    if "session_protocol_issue_count" in turn:
        # The tabs' badges: a call left open, or a session that can no longer resume.
        session = SimpleNamespace(
            protocol_issue_count=turn["session_protocol_issue_count"],
            cannot_resume=turn["session_cannot_resume"],
        )
        for badge in ("protocol_badge", "resume_badge"):
            context = {"session": session, "oob": True}
            parts.append(render_to_string(f"sessions/_tabs.html#{badge}", context))
    if turn["status"] == RUNNING:
        # A turn begins: a stop note is about an earlier one.
        parts.append(render_to_string("sessions/detail.html#stop_note", {"oob": True}))
    elif turn["status"] == "interrupted":
        # Text streaming when the turn stopped stays on screen, saying it was cut (it is
        # not stored); with nothing streaming there is no target and nothing changes.
        parts.append(
            format_html(
                '<span class="stream-state stream-stopped" id="stream-state-{}" '
                'hx-swap-oob="true">cut by the stop: this text was not stored</span>',
                turn["id"],
            )
        )
    else:
        parts.append(_cleared_stream(turn["id"]))
    return mark_safe("".join(parts))


def turn_frame(turn: dict[str, Any], last_id: int) -> SafeString:
    """The frame of a TurnPayload; `last_id` is the last event id sent to the watcher."""
    key = ("turn", *sorted(turn.items()))
    body = _cached(key, lambda: _turn_body(turn))
    head = state("turn", last_id, turn_id=turn["id"], status=turn["status"], reason=turn["reason"])
    return head + body


def outcome_frame(payload: dict[str, Any], last_id: int) -> SafeString:
    """The frame of an OutcomePayload: the call shown again, with the outcome recorded
    beside it (who, when, why), in place of its "awaiting the user" or "no result"."""
    head = state("outcome", last_id, event_id=payload["event"]["id"])
    return head + _cached(("outcome", repr(payload)), lambda: _outcome_body(payload))


def _outcome_body(payload: dict[str, Any]) -> SafeString:
    record = payload["record"]
    outcome = RecordedOutcome(**{**record, "recorded_at": parse_datetime(record["recorded_at"])})
    event = event_row(payload["event"])
    views = presenters.conversation([event], outcomes={(event.id, outcome.call_id): outcome})
    position = payload["position"]
    if not 0 < position <= len(views[0].calls):
        return mark_safe("")
    context = {
        "e": event,
        "call": views[0].calls[position - 1],
        "forloop": {"counter": position},  # the call's element id, as in the page's loop
        "turn": SimpleNamespace(status=payload["turn_status"]),
        "session": _session(payload["session_id"]),
        "oob_call": True,
    }
    return mark_safe(render_to_string("sessions/turn_events.html#call", context))


def partial_frame(partial: dict[str, Any], last_id: int, *, opens: bool) -> SafeString:
    """The frame of a PartialPayload: with `opens`, a new streaming box for the turn
    showing `delta`; else `delta` appended to the turn's streaming text. Text only: model
    output is never HTML here."""
    turn_id = partial["turn_id"]
    head = state("partial", last_id, turn_id=turn_id, after_id=partial.get("after_id", 0))
    delta = partial.get("delta") or ""
    if not opens:
        return head + format_html(
            '<div id="stream-text-{}" hx-swap-oob="beforeend">{}</div>', turn_id, delta
        )
    role = partial.get("role") or "assistant"
    author = partial.get("author") or ""
    return head + format_html(
        '<div class="live-stream" id="live-stream-{}" hx-swap-oob="true">'
        '<div class="event role-{} streaming"><div class="event-meta small">'
        '<span class="role">{}</span>{} · <span class="stream-state" id="stream-state-{}">'
        "streaming…</span></div>"
        '<div class="stream-text" id="stream-text-{}">{}</div></div></div>',
        turn_id,
        role,
        role,
        f" · {author}" if author else "",
        turn_id,
        turn_id,
        delta,
    )


def hello_frame(last_id: int) -> SafeString:
    """Caught up: the indicator says Live."""
    context = {"indicator_state": "live", "indicator_text": "Live", "oob": True}
    body = _cached(("hello",), lambda: render_to_string("sessions/detail.html#indicator", context))
    return state("hello", last_id) + body


def cancel_frame(turn_id: str, last_id: int) -> SafeString:
    """Someone asked to stop a turn (`turn_id` "" = every running turn)."""
    context = {"stop_note": "Stop requested…", "oob": True}
    body = _cached(("cancel",), lambda: render_to_string("sessions/detail.html#stop_note", context))
    return state("cancel", last_id, turn_id=turn_id) + body


def todos_frame(session_id: str, version: object, last_id: int) -> SafeString:
    """The session's todo list changed (the page's todo panel refreshes itself)."""
    return state("todos", last_id, session_id=session_id, version=version)


def error_frame(error: str, last_id: int) -> SafeString:
    """A frame from the watcher that is not the protocol."""
    return state("error", last_id, error=error)
