"""Landing the traces of one request: their sessions, turns and events, in bulk.

`plan_trace` works out, from all the kept and new spans of a trace (pure: `mapping`),
where it lands and what its turn holds; `refusal` says why a plan cannot land (another
app's session or key, a turn not received over OTLP); `land` writes the accepted plans
with a fixed number of queries for the whole request (sessions, turns, events created or
updated in bulk), whatever the number of traces, plus one `refresh_resume_statuses` of
the sessions that changed, and one read of their turn counts and token totals for the
watchers' turn payloads. A trace that moves into its conversation's session when its
root arrives leaves its old turn (`drop_turn`, rare: a few queries per move).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from sessions_app import models
from sessions_app.ingest.normalise import storable
from sessions_app.ingest.writer import insert_rows
from sessions_app.live.payloads import EVENT_FIELDS
from sessions_app.otlp.decode import SPAN_FIELDS, SpanRecord
from sessions_app.otlp.log_mapping import place, turn_drafts, turn_outcome
from sessions_app.otlp.mapping import Draft, Outcome, Place
from sessions_app.otlp.models import OtlpSpan
from sessions_app.otlp.resume_batch import refresh_resume_statuses
from sessions_app.otlp.session_rows import STATE_KEY, land_sessions
from sessions_app.otlp.watched import (
    event_payloads,
    new_values,
    stored_values,
    turn_payloads_written,
)
from sessions_app.store.resume import refresh_resume_status

__all__ = ["NOTE_PREFIX", "OWNER_HOST", "STATE_KEY", "Plan", "keep_unlanded", "land", "refusal"]

#: `Turn.status_note` of every turn the receiver made starts with it.
NOTE_PREFIX = "via OTLP"
#: `Turn.owner_host` of a running OTLP turn: its owner is the exporter, leased until
#: AGENTOPS_STUCK_AFTER_SECONDS after the trace's last batch (`store.owner`: a lapsed
#: lease means the owner is gone, and the turn is recorded interrupted/abandoned).
OWNER_HOST = "otlp exporter"


@dataclass(slots=True)
class Plan:
    """One trace of the request: all its spans (kept and `fresh`), the (session, turn)
    pairs its kept spans landed in, where it lands now, its events, its outcome (None:
    running) and the turn's note."""

    trace_id: str
    spans: list[SpanRecord]
    fresh: list[SpanRecord]
    previous: set[tuple[str, str]]
    where: Place
    session_id: str
    turn_id: str
    note: str
    drafts: list[Draft] = field(default_factory=list)
    outcome: Outcome | None = None

    @property
    def moved_from(self) -> set[tuple[str, str]]:
        """(session, turn) pairs the trace's kept spans landed in before, if not here."""
        return self.previous - {(self.session_id, self.turn_id)}


def plan_trace(
    trace_id: str,
    spans: list[SpanRecord],
    fresh: list[SpanRecord],
    previous: set[tuple[str, str]],
    ids: Any,
    note: str,
) -> Plan:
    """The plan of a trace from all its spans and log records (`log_mapping`;
    `previous`: see `Plan`); `ids(place, trace_id)` names its session and turn, `note`
    is the turn's status note (content capture is added here)."""
    spans.sort(key=lambda s: (s.start_at, s.span_id))
    where = place(spans)
    session_id, turn_id = ids(where, trace_id)
    if not where.content_captured:
        note += "; message content was not captured"
    return Plan(
        trace_id, spans, fresh, previous, where, session_id, turn_id, note[:500],
        drafts=[_storable(draft) for draft in turn_drafts(spans)], outcome=turn_outcome(spans),
    )  # fmt: skip


def _storable(draft: Draft) -> Draft:
    """`draft` with NUL and the lone surrogates of its texts as U+FFFD
    (`normalise.storable`): a message's JSON text may escape either (``"\\u0000"``,
    ``"\\ud800"``), which PostgreSQL does not store."""
    draft.text, draft.author = storable(draft.text), storable(draft.author)
    draft.finish_reason, draft.tool_calls = (
        storable(draft.finish_reason),
        storable(draft.tool_calls),
    )
    draft.tool_response = storable(draft.tool_response)
    return draft


def refusal(
    plan: Plan,
    allows_app: Any,
    sessions: dict[str, models.Session],
    turns: dict[str, models.Turn],
    claimed: dict[str, str],
) -> str:
    """Why `plan` cannot land ("" when it can): its app is not the key's, its session is
    another app's, or its turn was not received over OTLP (or is another trace's in this
    request: `claimed` turn id -> trace id)."""
    app = plan.where.app_name
    if not allows_app(app):
        return f"app {app[:100]!r} is not allowed for this key"
    session = sessions.get(plan.session_id)
    if session is not None and session.app_name != app[:255]:
        return f"session {plan.session_id[:100]!r} belongs to another app"
    turn = turns.get(plan.turn_id)
    if turn is not None and (
        turn.session_id != plan.session_id or not turn.status_note.startswith(NOTE_PREFIX)
    ):
        return f"turn {plan.turn_id[:100]!r} exists and was not received over OTLP"
    if claimed.setdefault(plan.turn_id, plan.trace_id) != plan.trace_id:
        return f"turn {plan.turn_id[:100]!r} is named by two traces of this request"
    return ""


@dataclass(slots=True)
class Landed:
    """What `land` changed: new event ids (in order), the turns whose row or events
    changed, those of them it created, and the new events' payloads."""

    new_events: list[int] = field(default_factory=list)
    turns: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    #: The watchers' payloads of the new events, in id order (`watched.event_payloads`).
    events: list[dict[str, Any]] = field(default_factory=list)
    #: The TurnPayloads of `turns`, by id (`watched.turn_payloads_written`).
    turn_payloads: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The sessions a trace left (it moved into its conversation's session): their
    #: watchers resume from the database (a session deleted as empty: its page reloads
    #: into the one the trace moved to).
    left: list[str] = field(default_factory=list)


def land(
    plans: Sequence[Plan],
    sessions: dict[str, models.Session],
    turns: dict[str, models.Turn],
    received_at: datetime,
) -> Landed:
    """Write the accepted `plans` (see the module docstring); `sessions` and `turns` are
    the existing rows of their ids, as read for `refusal`; new spans are kept as
    received at `received_at`."""
    done = Landed()
    now = timezone.now()
    for plan in plans:
        for old_session, old_turn in plan.moved_from:
            drop_turn(old_session, old_turn)
            done.left.append(old_session)
        if plan.moved_from:  # its kept spans follow it (new ones are created in place)
            OtlpSpan.objects.filter(trace_id=plan.trace_id).update(
                session_id=plan.session_id, turn_id=plan.turn_id
            )
    insert_rows(
        OtlpSpan,
        _SPAN_COLUMNS,
        (
            [
                *(getattr(span, name) for name in SPAN_FIELDS),
                received_at,
                plan.session_id,
                plan.turn_id,
            ]
            for plan in plans
            for span in plan.fresh
        ),
    )
    created = {plan.session_id for plan in plans if plan.session_id not in sessions}
    land_sessions(plans, sessions, now)
    known = set(turns)
    written: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    _without_repeated_system(plans, sessions)
    changed = _land_turns(plans, turns, now) | _land_events(plans, now, done, written)
    done.created = [plan.turn_id for plan in plans if plan.turn_id not in known]
    # Watchers get these turns again: their status or their event count changed.
    done.turns = [plan.turn_id for plan in plans if plan.turn_id in changed]
    touched = {plan.session_id for plan in plans if plan.turn_id in changed}
    if touched:
        refresh_resume_statuses(touched, created & touched, written, turns, now)
    done.turn_payloads = turn_payloads_written(done.turns, turns, written)
    return done


def keep_unlanded(
    records: Sequence[SpanRecord], received_at: datetime, landed: Sequence[Plan] = ()
) -> None:
    """Keep `records`, spans of traces that land nowhere yet (`autogen.bookkeeping_only`):
    no session, no turn, until a later span of their trace makes it land; the spans so
    kept of the traces of `landed` (plans just landed) take their session and turn (one
    query per trace: only AutoGen's traces are ever kept so)."""
    if records:
        rows = ([*(getattr(r, name) for name in SPAN_FIELDS), received_at, "", ""] for r in records)
        insert_rows(OtlpSpan, _SPAN_COLUMNS, rows)
    for plan in landed:
        OtlpSpan.objects.filter(trace_id=plan.trace_id, turn_id="").update(
            session_id=plan.session_id, turn_id=plan.turn_id
        )


def _without_repeated_system(plans: Sequence[Plan], sessions: dict[str, models.Session]) -> None:
    """Drop from each plan the system prompt its session's turn before it holds (frameworks
    send it with every call; the model gets it once, and the next context replays every
    stored event). One query, for the sessions that existed before."""
    ours, earlier = {plan.turn_id for plan in plans}, defaultdict(list)
    existing = {plan.session_id for plan in plans if plan.session_id in sessions}
    for session_id, turn_id, text, at in (
        models.Event.objects.active()
        .filter(session_id__in=existing, role="system")
        .values_list("session_id", "turn_id", "text", "created_at")
        if existing
        else ()
    ):
        if turn_id not in ours:  # this request's turns: from their drafts, below
            earlier[session_id].append((at, text))
    for plan in sorted(plans, key=lambda plan: plan.spans[0].start_at):
        start = plan.spans[0].start_at
        before = [found for found in earlier[plan.session_id] if found[0] < start]
        system = [draft for draft in plan.drafts if draft.role == "system"]
        if system and before and max(before)[1] == system[0].text:
            plan.drafts = [draft for draft in plan.drafts if draft is not system[0]]
        earlier[plan.session_id] += [(draft.at, draft.text) for draft in system]


#: The columns of a new span row: a `SpanRecord`'s, then where it was received and landed.
_SPAN_COLUMNS = (*SPAN_FIELDS, "received_at", "session_id", "turn_id")
#: `stopped_by`: new spans of a turn someone stopped (*Stop* records an OTLP turn
#: abandoned: no process here can stop its agent) show the agent went on, so the turn
#: says what its spans say, not that a stop was asked for.
_TURN_FIELDS = ("status", "reason", "failure_code", "failure_stage", "finished_at",
                "status_note", "started_at", "stopped_by")  # fmt: skip
_LEASE_FIELDS = ("owner_host", "owner_pid", "lease_until")
_NEW_TURN_COLUMNS = ("id", "session_id", *_TURN_FIELDS, *_LEASE_FIELDS)


def _land_turns(plans: Sequence[Plan], turns: dict[str, models.Turn], now: datetime) -> set[str]:
    """Create or update the plans' turns (two queries); returns the ids whose row changed."""
    lease_until = now + timedelta(seconds=settings.AGENTOPS_STUCK_AFTER_SECONDS)
    new: list[list[Any]] = []
    updated: list[models.Turn] = []
    changed: set[str] = set()
    for plan in plans:
        outcome = plan.outcome
        wanted: dict[str, Any] = {
            "status": outcome.status if outcome else "running",
            "reason": outcome.reason if outcome else "",
            "failure_code": outcome.failure_code if outcome else "",
            "failure_stage": outcome.failure_stage if outcome else "",
            "finished_at": outcome.finished_at if outcome else None,
            "status_note": plan.note,
            "started_at": plan.spans[0].start_at,
            "stopped_by": "",
        }
        if outcome is None:  # the exporter's lease: renewed by every batch of the trace
            wanted.update(owner_host=OWNER_HOST, owner_pid=0, lease_until=lease_until)
        row = turns.get(plan.turn_id)
        if row is None:
            row = models.Turn(id=plan.turn_id, session_id=plan.session_id, **wanted)
            new.append([getattr(row, name) for name in _NEW_TURN_COLUMNS])
            turns[plan.turn_id] = row
            changed.add(plan.turn_id)
            continue
        if any(getattr(row, name) != wanted[name] for name in _TURN_FIELDS):
            changed.add(plan.turn_id)
        for name, value in wanted.items():
            setattr(row, name, value)
        updated.append(row)
    insert_rows(models.Turn, _NEW_TURN_COLUMNS, new)  # as bulk_create, without the ORM's cost
    if updated:
        models.Turn.objects.bulk_update(updated, [*_TURN_FIELDS, *_LEASE_FIELDS])
    return changed


#: The event columns a draft sets (`_columns`), compared to decide an update.
_EVENT_COLUMNS = ("created_at", "source_id", "author", "role", "text", "tool_calls",
                  "tool_response", "tool_call_id", "usage", "finish_reason")  # fmt: skip


_NEW_EVENT_COLUMNS = ("session_id", "turn_id", "updated_at", "raw", *_EVENT_COLUMNS)
#: What is read of a turn's stored events: to compare them to the drafts, and to make
#: the payloads of the turn's new tool results (their calls may be stored already).
_STORED_COLUMNS = tuple(
    dict.fromkeys(("id", "turn_id", *_EVENT_COLUMNS, *EVENT_FIELDS, "deleted_at", "archived_at"))
)


def _columns(draft: Draft) -> dict[str, Any]:
    """An event's columns from its draft; it was created when its span says (a model
    span's input at its start, its output at its end), not when it was received."""
    return {
        "created_at": draft.at,
        "source_id": draft.key[:255],
        "author": draft.author,
        "role": draft.role,
        "text": draft.text,
        "tool_calls": draft.tool_calls,
        "tool_response": draft.tool_response,
        "tool_call_id": "",
        "usage": draft.usage,
        "finish_reason": draft.finish_reason,
    }


def _land_events(
    plans: Sequence[Plan],
    now: datetime,
    done: Landed,
    written: dict[str, tuple[str, list[dict[str, Any]]]],
) -> set[str]:
    """Make each plan's stored events equal its drafts, in order: rows rewritten in place,
    new ones appended, the surplus deleted (at most four queries); returns the turn ids
    whose events changed. Sets `done.new_events` and their payloads (`watched`), and
    `written`: {turn id: (session id, its active events' values in id order)}."""
    stored: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in (
        models.Event.objects.filter(  # the session first: index event_session_turn_idx
            session_id__in={p.session_id for p in plans}, turn_id__in=[p.turn_id for p in plans]
        )
        .order_by("id")
        .values(*_STORED_COLUMNS)
    ):
        stored[row["turn_id"]].append(row)
    new: list[list[Any]] = []
    updated: list[models.Event] = []
    surplus: list[int] = []
    changed: set[str] = set()
    timelines: list[list[dict[str, Any]]] = []  # each turn's active events, in id order
    waiting: dict[tuple[str, str], dict[str, Any]] = {}  # new events' values by source
    for plan in plans:
        rows = stored.get(plan.turn_id, [])
        timeline: list[dict[str, Any]] = []
        for index, draft in enumerate(plan.drafts):
            wanted = _columns(draft)
            if index < len(rows):
                row = rows[index]
                rewrite = any(row[name] != value for name, value in wanted.items())
                if rewrite:
                    updated.append(models.Event(id=row["id"], updated_at=now, **wanted))
                    changed.add(plan.turn_id)
                if row["deleted_at"] is None and row["archived_at"] is None:
                    timeline.append(stored_values(row, wanted if rewrite else None, now))
                continue
            new.append(
                [plan.session_id, plan.turn_id, now, {"otlp": {"span": draft.key}},
                 *wanted.values()]
            )  # fmt: skip
            values = new_values(plan.session_id, plan.turn_id, wanted, now)
            waiting[plan.turn_id, wanted["source_id"]] = values
            timeline.append(values)
            changed.add(plan.turn_id)
        timelines.append(timeline)
        written[plan.turn_id] = (plan.session_id, timeline)
        if len(rows) > len(plan.drafts):
            surplus += [row["id"] for row in rows[len(plan.drafts) :]]
            changed.add(plan.turn_id)
    if surplus:
        models.Event.objects.filter(pk__in=surplus).delete()
    if updated:
        models.Event.objects.bulk_update(updated, ["updated_at", *_EVENT_COLUMNS])
    if new:  # in one transaction: the new rows of these turns are the ids after `before`
        before = models.Event.objects.order_by("-id").values_list("id", flat=True).first() or 0
        insert_rows(models.Event, _NEW_EVENT_COLUMNS, new)
        for event_id, turn_id, source_id in (
            models.Event.objects.filter(turn_id__in=[p.turn_id for p in plans], id__gt=before)
            .order_by("id")
            .values_list("id", "turn_id", "source_id")
        ):
            inserted = waiting.get((turn_id, source_id))
            if inserted is not None and inserted["id"] is None:
                inserted["id"] = event_id
                done.new_events.append(event_id)
        done.events = event_payloads(timelines, set(done.new_events))
    return changed


def drop_turn(session_id: str, turn_id: str) -> None:
    """Delete a turn the receiver made, with its events (its trace moved into another
    session); its session too when that leaves it empty and the receiver made it."""
    models.Event.objects.filter(session_id=session_id, turn_id=turn_id).delete()
    models.Turn.objects.filter(pk=turn_id, status_note__startswith=NOTE_PREFIX).delete()
    session = models.Session.objects.filter(pk=session_id, state__has_key=STATE_KEY).first()
    if session is not None and not session.turns.exists() and not session.events.exists():
        session.delete()
    elif session is not None:
        refresh_resume_status(session_id)


def existing_rows(
    plans: Sequence[Plan],
) -> tuple[dict[str, models.Session], dict[str, models.Turn]]:
    """The stored sessions and turns the plans name (two queries)."""
    sessions = models.Session.objects.in_bulk([p.session_id for p in plans])
    return dict(sessions), dict(models.Turn.objects.in_bulk([p.turn_id for p in plans]))
