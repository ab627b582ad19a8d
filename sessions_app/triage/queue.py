"""The turns the triage queue holds, with what each is there for (`queue_status`)."""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.db.models import Case, Exists, F, OuterRef, Q, Subquery, Value, When

from sessions_app.models import Event, Turn, TurnQuerySet

__all__ = ["triage_queue"]


def triage_queue(stuck_before: datetime) -> TurnQuerySet:
    """Turns that need a look: failed, interrupted and stuck running turns, and the
    latest turn of a session that cannot resume when it completed ("blocks": its
    unanswered call blocks the next run, docs/runtime.md §5).

    A running turn is stuck when its last event time (the newest `created_at` of its
    session's events with its `turn_id`, or `started_at` when it has none) is before
    `stuck_before` (aware UTC datetime: now minus AGENTOPS_STUCK_AFTER_SECONDS).
    Adds `queue_status` (str): the turn's status, "stuck" or "blocks".
    Written as NOT EXISTS (no event at or after the cutoff) so the filter can use
    `event_session_turn_idx` and no per-turn MAX is computed for the whole table.
    """
    events = Event.objects.filter(session=OuterRef("session"), turn_id=OuterRef("pk"))
    # Last event time < cutoff  <=>  no event at/after the cutoff, and (some event, or
    # started_at before the cutoff when there is none).
    stuck = (
        Q(status=Turn.Status.RUNNING)
        & ~Exists(events.filter(created_at__gte=stuck_before))
        & (Q(started_at__lt=stuck_before) | Exists(events))
    )
    # A completed turn whose unanswered call blocks the session: its latest turn.
    latest = Turn.objects.filter(session=OuterRef("session")).order_by("-started_at", "-id")
    blocks = Q(status=Turn.Status.COMPLETED, session__cannot_resume=True) & Q(
        pk=Subquery(latest.values("pk")[:1])
    )
    return Turn.objects.filter(
        Q(status__in=[Turn.Status.FAILED, Turn.Status.INTERRUPTED]) | stuck | blocks
    ).annotate(
        queue_status=Case(
            When(status=Turn.Status.RUNNING, then=Value("stuck")),
            When(status=Turn.Status.COMPLETED, then=Value("blocks")),
            default=F("status"),
            output_field=models.CharField(),
        )
    )
