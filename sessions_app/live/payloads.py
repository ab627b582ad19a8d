"""What a session's group receives: plain values (JSON-ready, no HTML), one message each.

Messages sent to a session's group (`sessions_app.live.groups`), one consumer handler each:

- ``{"type": "live.event", "event": EventPayload}``: a complete, stored event.
- ``{"type": "live.partial", "partial": PartialPayload}``: a streaming fragment (never
  stored; replaced by the complete event that follows it).
- ``{"type": "live.turn", "turn": TurnPayload}``: a turn began or changed status.
- ``{"type": "live.outcome", "outcome": OutcomePayload}``: someone recorded what happened
  to a call that had no result, or decided on a call awaiting a person.
- ``{"type": "turn.cancel", "session_id", "turn_id"}``: stop request; the process that
  runs the turn cancels it (`turn_id` "" = every turn of the session it runs).
- ``{"type": "live.batch", "messages": [...]}``: several of the above, in order (what an
  outbox sends when messages queued up while it waited for the layer; `unbatched`).
- ``{"type": "live.resync"}``: messages were not kept (an outbox was full): every watcher
  resumes from the database.

Messages from a store's outbox also carry ``origin`` and ``seq`` (1, 2, ... per origin),
by which a receiver notices one it missed (`sessions_app.live.outbox`, `fanout`).

Payload shapes (times ISO 8601 UTC):

- EventPayload: the stored row's values (`EVENT_FIELDS`: ``id, session_id, turn_id,
  author, role, text, parts, reasoning, tool_calls, tool_response, tool_call_id,
  pending_call_ids, finish_reason, usage, state_delta, created_at, updated_at``) plus
  ``pair`` and ``event_count``. For a tool result that answers a call stored earlier in
  its turn, ``pair`` is ``{"event": <values of the calling assistant event>, "results":
  [<values of the results it already had>]}`` so watchers can show the call with its
  results folded in; None otherwise. ``event_count`` is the turn's number of stored
  events once this one is stored, None when unknown (catch-up from the database).
- PartialPayload: ``{turn_id, role, author, delta, reasoning, tool_calls, after_id}``:
  `delta` is the text fragment; `after_id` is the id of the turn's last stored event
  before this fragment, so a fragment whose complete event was already received can be
  dropped (a watcher that caught up after a reconnect).
- OutcomePayload: ``{session_id, turn_status, event, position, record}``: `event` the
  values of the assistant event holding the call, `position` the call's place among its
  calls (1, 2, ...), `record` the recorded outcome (``event_id, call_id, tool_name,
  outcome, result, reason, recorded_by, recorded_at``), `turn_status` its turn's status.
- TurnPayload: ``{id, session_id, status, reason, failure_code, failure_stage,
  failure_message, status_note, stopped_by, started_at, finished_at, event_count,
  session_turn_count}`` and, read with it, the turn's own token totals (``tokens_input``,
  ``_output``, ``_cached``: the turn head's figures) and the session's token totals and
  model (``session_tokens_input``, ``_output``, ``_cached``, ``session_model``) and its
  open tool-protocol issues and resume verdict (``session_protocol_issue_count``,
  ``session_cannot_resume``: the tabs' badges).

HTML for watchers is made from these values where they are watched
(`sessions_app.live.render`), not by the process that stores the events.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from datetime import datetime
from typing import Any

from django.db.models import Count, F, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from agentops.runtime.model import Event
from sessions_app import models
from sessions_app.search.numbers import TokenTotals, cost_of, with_turn_tokens
from sessions_app.store import row_fields_from_event

EVENT = "live.event"
PARTIAL = "live.partial"
TURN = "live.turn"
OUTCOME = "live.outcome"
CANCEL = "turn.cancel"
TODOS = "todos.changed"
BATCH = "live.batch"
RESYNC = "live.resync"

#: The event row fields an EventPayload carries (what the page's event partial shows).
EVENT_FIELDS = (
    "id", "session_id", "turn_id", "author", "role", "text", "parts", "reasoning",
    "tool_calls", "tool_response", "tool_call_id", "pending_call_ids", "finish_reason",
    "usage", "state_delta", "created_at", "updated_at",
)  # fmt: skip

# How far back a tool result caught up from the database looks for its call (events of
# the same turn), when the call is not among the events caught up.
_PAIR_WINDOW = 200


def unbatched(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages a group message carries: those of a ``live.batch``, else itself."""
    if message.get("type") == BATCH:
        return list(message.get("messages") or [])
    return [message]


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def event_values(event: Event) -> dict[str, Any]:
    """The row values (`EVENT_FIELDS`) of a stored runtime `event` (id > 0); no query."""
    now = timezone.now()
    return {
        "id": event.id,
        "session_id": event.session_id,
        **row_fields_from_event(event),
        "created_at": _iso(event.created_at or now),
        "updated_at": _iso(event.updated_at or now),
    }


def _values_of(row: dict[str, Any]) -> dict[str, Any]:
    # A `.values(*EVENT_FIELDS)` row, with JSON-ready timestamps.
    return {**row, "created_at": _iso(row["created_at"]), "updated_at": _iso(row["updated_at"])}


def event_row(values: dict[str, Any]) -> models.Event:
    """An unsaved `models.Event` equal to the stored event `values` (for rendering)."""
    fields = {name: values[name] for name in EVENT_FIELDS if name in values}
    for name in ("created_at", "updated_at"):
        fields[name] = parse_datetime(fields[name]) if fields.get(name) else timezone.now()
    return models.Event(**fields)


def _answered_call_id(values: dict[str, Any]) -> str:
    # As `models.Event.answered_call_id`: tool_response's call id, else tool_call_id.
    response = values.get("tool_response") or {}
    return str(response.get("tool_call_id") or values.get("tool_call_id") or "")


class TurnCalls:
    """The tool calls of one running turn still waiting for their results, kept by the
    store as it stores the turn's events, so a result's `pair` costs no query.

    A result answers the first earlier call with its id that has no result yet (as the
    page's `presenters.conversation` pairs them). An assistant event is forgotten once
    every one of its calls has its result.
    """

    def __init__(self) -> None:
        self.ids: set[int] = set()  # the turn's stored events (its count)
        # call id -> ids of events whose call with that id waits for its result, oldest first
        self._waiting: dict[str, list[int]] = {}
        # event id -> [its values, values of the results it has so far]
        self._groups: dict[int, list[dict[str, Any]]] = {}
        self._open: dict[int, int] = {}  # event id -> how many of its calls still wait

    def add(self, values: dict[str, Any]) -> dict[str, Any] | None:
        """Note a stored event (`event_values`); returns its `pair` (module docstring)."""
        self.ids.add(values["id"])
        if values["role"] == models.Event.Role.TOOL:
            waiting = self._waiting.get(_answered_call_id(values))
            if waiting:
                owner = waiting.pop(0)
                group = self._groups[owner]
                pair = {"event": group[0], "results": group[1:]}
                group.append(values)
                self._open[owner] -= 1
                if not self._open[owner]:
                    del self._groups[owner], self._open[owner]
                return pair
        calls = [str(call.get("id", "")) for call in values.get("tool_calls") or []]
        if calls:
            self._groups[values["id"]] = [values]
            self._open[values["id"]] = len(calls)
            for call_id in calls:
                self._waiting.setdefault(call_id, []).append(values["id"])
        return None


def earlier_pair(values: dict[str, Any]) -> dict[str, Any] | None:
    """The `pair` of a tool result whose call is not among the events caught up: from the
    turn's earlier events in the database (one query); None for an event that answers
    no call."""
    if values["role"] != models.Event.Role.TOOL or not _answered_call_id(values):
        return None
    rows = list(
        models.Event.objects.active()
        .filter(session_id=values["session_id"], turn_id=values["turn_id"], id__lt=values["id"])
        .order_by("-id")
        .values(*EVENT_FIELDS)[:_PAIR_WINDOW]
    )
    calls = TurnCalls()
    for row in reversed(rows):
        calls.add(_values_of(row))
    return calls.add(values)


def event_payloads_after(session_id: str, after: int, limit: int = 5000) -> list[dict[str, Any]]:
    """EventPayloads of the session's active events with id > `after`, in id order (at
    most `limit`): what a resuming watcher missed. One query, plus one for each tool
    result whose call was stored at or before `after`."""
    rows = (
        models.Event.objects.active()
        .filter(session_id=session_id, id__gt=after)
        .order_by("id")
        .values(*EVENT_FIELDS)[:limit]
    )
    calls: dict[str, TurnCalls] = {}
    payloads = []
    for row in rows:
        values = _values_of(row)
        pair = calls.setdefault(values["turn_id"], TurnCalls()).add(values)
        if pair is None:
            pair = earlier_pair(values)
        payloads.append({**values, "pair": pair, "event_count": None})
    return payloads


def partial_payload(event: Event, after_id: int) -> dict[str, Any]:
    """The PartialPayload of a partial runtime `event` (module docstring)."""
    content = event.content
    return {
        "turn_id": event.turn_id,
        "role": content.role.value,
        "author": event.author,
        "delta": content.text,
        "reasoning": content.reasoning,
        "tool_calls": [call.model_dump(mode="json") for call in content.tool_calls],
        "after_id": after_id,
    }


def _session_turn_count() -> Subquery:
    return Subquery(
        models.Turn.objects.filter(session_id=OuterRef("session_id"))
        .order_by()
        .values("session_id")
        .annotate(n=Count("id"))
        .values("n"),
        output_field=IntegerField(),
    )


def _with_session_facts(turns: QuerySet[models.Turn]) -> QuerySet[models.Turn]:
    """`turns` with their own token totals (`with_turn_tokens`), their session's turn count
    and the `SESSION_FIELDS` of its row, in one query."""
    return with_turn_tokens(turns).annotate(  # type: ignore[arg-type]
        session_turn_count=_session_turn_count(),
        **{name: F(f"session__{name.removeprefix('session_')}") for name in SESSION_FIELDS},
    )


def _turns_with_counts() -> QuerySet[models.Turn]:
    event_count = (
        models.Event.objects.active()
        .filter(session_id=OuterRef("session_id"), turn_id=OuterRef("id"))
        .order_by()
        .values("turn_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    return _with_session_facts(
        models.Turn.objects.annotate(event_count=Subquery(event_count, output_field=IntegerField()))
    )


def _turn_payload_of(row: models.Turn) -> dict[str, Any]:
    return turn_payload_from(
        row,
        getattr(row, "event_count", None) or 0,
        getattr(row, "session_turn_count", None) or 0,
        {name: getattr(row, name, None) for name in _FACT_FIELDS},
    )


def turn_facts(turn_ids: Iterable[str]) -> dict[str, tuple[int, dict[str, Any]]]:
    """For each stored turn of `turn_ids`: its session's turn count, and its own token
    totals and its session's facts (`TURN_TOKEN_FIELDS`, `SESSION_FIELDS`), as
    `turn_payload_from` takes them. One query."""
    rows = _with_session_facts(models.Turn.objects.filter(pk__in=list(turn_ids)))
    return {
        turn_id: (count or 0, dict(zip(_FACT_FIELDS, values, strict=True)))
        for turn_id, count, *values in rows.values_list("id", "session_turn_count", *_FACT_FIELDS)
    }


def turn_payload_from(
    row: models.Turn, event_count: int, session_turn_count: int, facts: dict[str, Any]
) -> dict[str, Any]:
    """The TurnPayload of turn `row` (as stored) with its active `event_count`, its
    session's `session_turn_count` and `facts`: its `TURN_TOKEN_FIELDS` and
    `SESSION_FIELDS` values (those that are None left out)."""
    return {
        "id": row.id,
        "session_id": row.session_id,
        "status": row.status,
        "reason": row.reason,
        "failure_code": row.failure_code,
        "failure_stage": row.failure_stage,
        "failure_message": row.failure_message,
        "status_note": row.status_note,
        "stopped_by": row.stopped_by,
        "started_at": _iso(row.started_at),
        "finished_at": _iso(row.finished_at),
        "event_count": event_count,
        "session_turn_count": session_turn_count,
        **{
            name: _iso(value) if isinstance(value, datetime) else value
            for name, value in facts.items()
            if value is not None
        },
    }


#: The turn's own token totals a TurnPayload carries when read with them (the turn head's).
TURN_TOKEN_FIELDS = ("tokens_input", "tokens_output", "tokens_cached")
#: What a TurnPayload carries of its session's row when read with it: the header's token
#: totals and model, and the tabs' badges (open tool-protocol issues, cannot resume).
SESSION_FIELDS = (
    "session_tokens_input",
    "session_tokens_output",
    "session_tokens_cached",
    "session_model",
    "session_protocol_issue_count",
    "session_cannot_resume",
    "session_updated_at",  # the header's last activity (an ISO string in the payload)
)
_FACT_FIELDS = (*TURN_TOKEN_FIELDS, *SESSION_FIELDS)


def turn_row(payload: dict[str, Any]) -> models.Turn:
    """An unsaved `models.Turn` equal to a TurnPayload, with `event_count` set (for
    rendering the page's turn partials)."""
    started = parse_datetime(payload["started_at"]) or timezone.now()
    finished = parse_datetime(payload["finished_at"]) if payload["finished_at"] else None
    row = models.Turn(
        id=payload["id"],
        session_id=payload["session_id"],
        status=payload["status"],
        reason=payload["reason"],
        failure_code=payload["failure_code"],
        failure_stage=payload["failure_stage"],
        failure_message=payload["failure_message"],
        status_note=payload.get("status_note", ""),
        stopped_by=payload.get("stopped_by", ""),
        started_at=started,
        finished_at=finished,
    )
    row.event_count = payload["event_count"]  # type: ignore[attr-defined]
    if "tokens_input" in payload:  # the turn head's figures, as a reloaded page shows them
        values = (payload["tokens_input"], payload["tokens_output"], payload["tokens_cached"])
        model = payload.get("session_model", "")
        row.tokens = TokenTotals(*values, cost=cost_of(model, *values))  # type: ignore[attr-defined]
    return row


def turn_payload(turn_id: str) -> dict[str, Any] | None:
    """The TurnPayload (module docstring) of a stored turn, or None when missing. One
    query."""
    row = _turns_with_counts().filter(pk=turn_id).first()
    return _turn_payload_of(row) if row else None


def turn_payloads(
    session_id: str, *, after: int, turn_ids: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """TurnPayloads a resuming watcher needs, in timeline order: the session's running
    turns, the turns of events with id > `after`, and `turn_ids` (those the watcher shows
    as running). One query plus one for the event turn ids."""
    wanted = set(turn_ids)
    wanted.update(
        models.Event.objects.active()
        .filter(session_id=session_id, id__gt=after)
        .exclude(turn_id="")
        .values_list("turn_id", flat=True)
        .distinct()
    )
    rows = (
        _turns_with_counts()
        .filter(Q(pk__in=wanted) | Q(status=models.Turn.Status.RUNNING), session_id=session_id)
        .order_by("started_at", "id")
    )
    return [_turn_payload_of(row) for row in rows]


def last_event_id(session_id: str) -> int:
    """The largest active event id of the session (0 when none): where a page's live
    stream resumes from."""
    value = (
        models.Event.objects.active()
        .filter(session_id=session_id)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    return int(value or 0)


def outcome_payload(session_id: str, event_id: int, call_id: str) -> dict[str, Any] | None:
    """The OutcomePayload of the recorded outcome of call `call_id` of event `event_id`
    (module docstring), or None when either is gone. Three queries."""
    from sessions_app.projector import load_outcomes

    record = load_outcomes(session_id, [event_id]).get((event_id, call_id))
    row = models.Event.objects.filter(pk=event_id, session_id=session_id).values(*EVENT_FIELDS)
    values = next(iter(row), None)
    if record is None or values is None:
        return None
    calls = [str(call.get("id", "")) for call in values.get("tool_calls") or []]
    status = (
        models.Turn.objects.filter(pk=values["turn_id"]).values_list("status", flat=True).first()
    )
    return {
        "session_id": session_id,
        "turn_status": status or "",
        "event": _values_of(values),
        "position": calls.index(call_id) + 1 if call_id in calls else 0,
        "record": {**asdict(record), "recorded_at": _iso(record.recorded_at)},
    }
