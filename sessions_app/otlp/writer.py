"""Keeping received spans and rebuilding the turns they belong to.

`store_spans` runs in one transaction per request: new spans are kept (a span already
kept, e.g. from an exporter's retry, is skipped), then every trace that got new spans is
rebuilt from all its kept spans (`mapping`): its session and turn (moved when a later span
names the conversation), its events in time order (rows rewritten in place when an
earlier-starting span arrived late, new rows appended), its outcome. Each trace has its
own savepoint: a trace that cannot land (its session belongs to another app, its turn id
to a turn not received over OTLP) is rejected alone. The async `receive` broadcasts what
changed through `LiveSessionService`, so watchers see it live.

A running turn is leased to its exporter (`OWNER_HOST`) until AGENTOPS_STUCK_AFTER_SECONDS
after its trace's last batch. When the lease lapses the turn is recorded
interrupted/abandoned: by the next batch of any trace (`abandon_silent_turns`, that turn
alone), and, like any turn whose owner is gone, when its session page loads, when a server
starts, and on *Stop* (`sessions_app.live.stuck`). Spans arriving again make it running.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agentops.runtime.session import TurnReason
from sessions_app import models
from sessions_app.api.models import ApiKey
from sessions_app.ids import session_id_problem, turn_id_problem
from sessions_app.ingest.redaction import redact_value
from sessions_app.live import LiveSessionService
from sessions_app.otlp.decode import SpanRecord
from sessions_app.otlp.mapping import Draft, place, turn_drafts, turn_outcome
from sessions_app.otlp.models import OtlpSpan
from sessions_app.store.resume import refresh_resume_status
from sessions_app.store.rows import event_from_values

__all__ = ["Received", "abandon_silent_turns", "receive", "silent_turns", "store_spans"]

#: Session state key of sessions made by the receiver: {"content_captured": bool}.
STATE_KEY = "otlp"
NOTE_PREFIX = "via OTLP"
#: `Turn.owner_host` of a running OTLP turn: its owner is the exporter, leased until
#: AGENTOPS_STUCK_AFTER_SECONDS after the trace's last batch (`store.owner`: a lapsed
#: lease means the owner is gone, and the turn is recorded interrupted/abandoned).
OWNER_HOST = "otlp exporter"
#: Attribute names never kept: exception details and status descriptions.
_NEVER_KEPT = ("exception.", "otel.status_description", "error.message")


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass(slots=True)
class Received:
    """What a request did: spans accepted (new or already kept) and rejected, the first
    rejection's reason, and what to broadcast (new event ids, changed turn ids)."""

    accepted: int = 0
    rejected: int = 0
    reason: str = ""
    new_events: list[int] = field(default_factory=list)
    turns: list[str] = field(default_factory=list)

    def refuse(self, count: int, reason: str) -> None:
        """Count `count` spans as rejected for `reason` (the first reason is kept)."""
        self.rejected += count
        self.reason = self.reason or reason


def kept_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """The attributes that may be kept, redacted like imports."""
    kept = {k: v for k, v in attributes.items() if not k.startswith(_NEVER_KEPT)}
    return dict(redact_value(kept))


def _short(value: str, limit: int) -> str:
    if len(value) <= limit:
        return value
    return value[: limit - 17] + "-" + hashlib.sha256(value.encode()).hexdigest()[:16]


def session_id_for(key: str, trace_id: str) -> str:
    """The session id for a session key ("" = the trace's own session)."""
    if not key:
        return f"otlp-{trace_id}"
    key = key.strip()
    if session_id_problem(key) is None:
        return key
    return "otlp-" + hashlib.sha256(key.encode()).hexdigest()[:32]


def turn_id_for(session_id: str, key: str) -> str:
    """The turn id of a trace: ``<session id>/<turn key or trace id>``."""
    turn_id = _short(f"{session_id}/{key}", 255)
    return (
        turn_id
        if turn_id_problem(turn_id) is None
        else f"{session_id}/" + hashlib.sha256(key.encode()).hexdigest()[:32]
    )


def store_spans(records: Sequence[SpanRecord], key: ApiKey) -> Received:
    """Keep `records` and rebuild their traces' turns (one transaction; see module)."""
    done = Received()
    allowed: list[SpanRecord] = []
    for record in records:
        app = str(record.attributes.get("resource.service.name") or "otlp")
        if key.allows_app(app):
            allowed.append(record)
        else:
            done.refuse(1, f"key {key.prefix} may not use app {app[:100]!r}")
    now = timezone.now()
    with transaction.atomic():
        known = set(
            OtlpSpan.objects.filter(
                trace_id__in={r.trace_id for r in allowed}, span_id__in={r.span_id for r in allowed}
            ).values_list("trace_id", "span_id")
        )
        fresh: dict[tuple[str, str], SpanRecord] = {}
        for record in allowed:
            pair = (record.trace_id, record.span_id)
            if pair not in known:
                fresh.setdefault(pair, record)
        done.accepted += len(allowed) - len(fresh)
        by_trace: dict[str, list[SpanRecord]] = {}
        for record in fresh.values():
            by_trace.setdefault(record.trace_id, []).append(record)
        for trace_id, batch in by_trace.items():
            try:
                with transaction.atomic():
                    OtlpSpan.objects.bulk_create(_rows(batch, now))
                    _rebuild(trace_id, key, done)
                done.accepted += len(batch)
            except _Refused as refused:
                done.refuse(len(batch), refused.reason)
    return done


def _rows(batch: Sequence[SpanRecord], now: Any) -> list[OtlpSpan]:
    return [
        OtlpSpan(
            trace_id=r.trace_id,
            span_id=r.span_id,
            parent_span_id=r.parent_span_id,
            name=r.name,
            start_at=r.start_at,
            end_at=r.end_at,
            status_code=r.status_code,
            attributes=kept_attributes(r.attributes),
            received_at=now,
        )
        for r in batch
    ]


def _rebuild(trace_id: str, key: ApiKey, done: Received) -> None:
    spans = list(OtlpSpan.objects.filter(trace_id=trace_id).order_by("start_at", "span_id"))
    where = place(spans)
    session_id = session_id_for(where.session_key, trace_id)
    turn_id = turn_id_for(session_id, where.turn_key or trace_id)
    for old_session, old_turn in {(s.session_id, s.turn_id) for s in spans if s.turn_id}:
        if (old_session, old_turn) != (session_id, turn_id):
            _drop_turn(old_session, old_turn)
    if any((s.session_id, s.turn_id) != (session_id, turn_id) for s in spans):
        OtlpSpan.objects.filter(trace_id=trace_id).update(session_id=session_id, turn_id=turn_id)
    if not key.allows_app(where.app_name):
        raise _Refused(f"key {key.prefix} may not use app {where.app_name[:100]!r}")
    _ensure_session(session_id, where.app_name, where.user_id, where.content_captured)
    note = f"{NOTE_PREFIX} ({key.label})" + (
        "" if where.content_captured else "; message content was not captured"
    )
    turn, created = _ensure_turn(session_id, turn_id, spans[0].start_at, note)
    changed = _sync_events(session_id, turn_id, turn_drafts(spans), done)
    outcome = turn_outcome(spans)
    fields: dict[str, Any] = {"status_note": note[:500]}
    if outcome is not None:
        fields.update(
            status=outcome.status,
            reason=outcome.reason,
            failure_code=outcome.failure_code,
            failure_stage=outcome.failure_stage,
            finished_at=outcome.finished_at,
        )
    else:  # spans keep arriving without a finished root (again, after an abandonment)
        fields.update(
            status="running", reason="", failure_code="", failure_stage="", finished_at=None
        )
    if created or any(getattr(turn, name) != value for name, value in fields.items()):
        done.turns.append(turn_id)
    if outcome is None:  # the exporter's lease: renewed by every batch of the trace
        lease = {"owner_host": OWNER_HOST, "owner_pid": 0, "lease_until": _lease_end()}
        models.Turn.objects.filter(pk=turn_id).update(**fields, **lease)
    elif done.turns[-1:] == [turn_id]:
        models.Turn.objects.filter(pk=turn_id).update(**fields)
    if changed or created or done.turns[-1:] == [turn_id]:
        models.Session.objects.filter(pk=session_id).update(updated_at=timezone.now())
        refresh_resume_status(session_id)


def _lease_end() -> Any:
    return timezone.now() + timedelta(seconds=settings.AGENTOPS_STUCK_AFTER_SECONDS)


def _drop_turn(session_id: str, turn_id: str) -> None:
    models.Event.objects.filter(session_id=session_id, turn_id=turn_id).delete()
    models.Turn.objects.filter(pk=turn_id, status_note__startswith=NOTE_PREFIX).delete()
    session = models.Session.objects.filter(pk=session_id, state__has_key=STATE_KEY).first()
    if session is not None and not session.turns.exists() and not session.events.exists():
        session.delete()
    elif session is not None:
        refresh_resume_status(session_id)


def _ensure_session(session_id: str, app_name: str, user_id: str, captured: bool) -> None:
    row = models.Session.objects.filter(pk=session_id).first()
    if row is None:
        now = timezone.now()
        models.Session.objects.create(
            id=session_id,
            app_name=app_name[:255],
            user_id=user_id[:255],
            state={STATE_KEY: {"content_captured": captured}},
            created_at=now,
            updated_at=now,
        )
        return
    if row.app_name != app_name:
        raise _Refused(f"session {session_id[:100]!r} belongs to another app")
    mark = row.state.get(STATE_KEY) if isinstance(row.state, dict) else None
    if isinstance(mark, dict) and mark.get("content_captured") != captured and captured:
        models.Session.objects.filter(pk=session_id).update(
            state={**row.state, STATE_KEY: {"content_captured": True}}
        )


def _ensure_turn(
    session_id: str, turn_id: str, started: Any, note: str
) -> tuple[models.Turn, bool]:
    turn = models.Turn.objects.filter(pk=turn_id).first()
    if turn is None:
        turn = models.Turn.objects.create(
            id=turn_id,
            session_id=session_id,
            status="running",
            started_at=started,
            status_note=note[:500],
        )
        return turn, True
    if turn.session_id != session_id or not turn.status_note.startswith(NOTE_PREFIX):
        raise _Refused(f"turn {turn_id[:100]!r} exists and was not received over OTLP")
    if turn.started_at != started:
        models.Turn.objects.filter(pk=turn_id).update(started_at=started)
    return turn, False


_COLUMNS = (
    "source_id",
    "author",
    "role",
    "text",
    "tool_calls",
    "tool_response",
    "tool_call_id",
    "usage",
    "finish_reason",
)


def _columns(draft: Draft) -> dict[str, Any]:
    return {
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


def _sync_events(session_id: str, turn_id: str, drafts: list[Draft], done: Received) -> bool:
    """Make the turn's stored events equal `drafts`, in order; True when anything changed."""
    rows = list(
        models.Event.objects.filter(session_id=session_id, turn_id=turn_id)
        .order_by("id")
        .values("id", *_COLUMNS)
    )
    now = timezone.now()
    changed = False
    for index, draft in enumerate(drafts):
        wanted = _columns(draft)
        if index < len(rows):
            row = rows[index]
            if any(row[name] != value for name, value in wanted.items()):
                models.Event.objects.filter(pk=row["id"]).update(updated_at=now, **wanted)
                changed = True
            continue
        created = models.Event.objects.create(
            session_id=session_id,
            turn_id=turn_id,
            created_at=now,
            updated_at=now,
            raw={"otlp": {"span": draft.key}},
            **wanted,
        )
        done.new_events.append(created.id)
        changed = True
    surplus = [row["id"] for row in rows[len(drafts) :]]
    if surplus:
        models.Event.objects.filter(pk__in=surplus).delete()
        changed = True
    return changed


def silent_turns() -> dict[str, list[str]]:
    """Running OTLP turns whose trace sent nothing for AGENTOPS_STUCK_AFTER_SECONDS (their
    exporter's lease lapsed), by session id. One query."""
    found: dict[str, list[str]] = defaultdict(list)
    for session_id, turn_id in models.Turn.objects.filter(
        status=models.Turn.Status.RUNNING,
        owner_host=OWNER_HOST,
        lease_until__lt=timezone.now(),
    ).values_list("session_id", "id"):
        found[session_id].append(turn_id)
    return dict(found)


async def abandon_silent_turns() -> list[str]:
    """Record the `silent_turns` interrupted/abandoned (an open tool call among their events
    becomes the session's protocol issue), broadcast to watchers; returns their ids. Only
    those turns: others of the same session that still receive spans keep running."""
    ended: list[str] = []
    live = LiveSessionService()
    for session_id, turn_ids in (await sync_to_async(silent_turns)()).items():
        turns = await live.interrupt_running_turns(session_id, TurnReason.ABANDONED, only=turn_ids)
        ended += [turn.id for turn in turns]
    return ended


async def receive(records: Sequence[SpanRecord], key: ApiKey) -> Received:
    """`store_spans`, then broadcast the new events and changed turns to watchers, then
    end the silent turns (`abandon_silent_turns`) of any trace."""
    done = await sync_to_async(store_spans)(records, key)
    if done.new_events or done.turns:
        live = LiveSessionService()
        turns = list(dict.fromkeys(done.turns))
        for turn_id in turns:  # a new turn reaches watchers before its events
            await live.announce_turn(turn_id)
        for values in await sync_to_async(_event_values)(done.new_events):
            await live.announce_event(event_from_values(values))
        if done.new_events:  # with its event count once they are stored
            for turn_id in turns:
                await live.announce_turn(turn_id)
    await abandon_silent_turns()
    return done


def _event_values(ids: list[int]) -> list[dict[str, Any]]:
    from sessions_app.store.columns import EVENT_RUNTIME_COLUMNS

    return list(
        models.Event.objects.filter(pk__in=ids).order_by("id").values(*EVENT_RUNTIME_COLUMNS)
    )
