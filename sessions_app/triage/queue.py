"""The turns the triage queue holds, with what each is there for (`queue_status`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import models
from django.db.models import Case, Exists, F, OuterRef, Q, Subquery, Value, When

from sessions_app.models import Event, Session, Turn, TurnQuerySet
from sessions_app.triage.filters import DIMENSIONS

__all__ = [
    "TALLIED",
    "live_queue",
    "live_rows",
    "queue_page",
    "tallied_turns",
    "with_queue_status",
]


TALLIED = (Turn.Status.FAILED, Turn.Status.INTERRUPTED)
"""The queue's terminal statuses, whose turns the kept tally counts (`triage.tally`)."""


def with_queue_status(turns: TurnQuerySet) -> TurnQuerySet:
    """`turns` annotated with `queue_status` (str): the turn's status, "stuck" for a
    running turn, "blocks" for a completed one (only such turns are in the queue)."""
    return turns.annotate(
        queue_status=Case(
            When(status=Turn.Status.RUNNING, then=Value("stuck")),
            When(status=Turn.Status.COMPLETED, then=Value("blocks")),
            default=F("status"),
            output_field=models.CharField(),
        )
    )


def _live(stuck_before: datetime) -> Q:
    """The stuck and blocking turns as a condition.

    A running turn is stuck when its last event time (the newest `created_at` of its
    session's events with its `turn_id`, or `started_at` when it has none) is before
    `stuck_before` (aware UTC datetime: now minus AGENTOPS_STUCK_AFTER_SECONDS). Written as
    NOT EXISTS (no event at or after the cutoff) so the filter can use
    `event_session_turn_idx` and no per-turn MAX is computed for the whole table. A
    completed turn blocks when it is the latest of a session that cannot resume (its
    unanswered call blocks the next run, docs/runtime.md §5)."""
    events = Event.objects.filter(session=OuterRef("session"), turn_id=OuterRef("pk"))
    # Last event time < cutoff  <=>  no event at/after the cutoff, and (some event, or
    # started_at before the cutoff when there is none).
    stuck = (
        Q(status=Turn.Status.RUNNING)
        & ~Exists(events.filter(created_at__gte=stuck_before))
        & (Q(started_at__lt=stuck_before) | Exists(events))
    )
    # A completed turn whose unanswered call blocks the session: its latest turn. Found
    # from the sessions that cannot resume (few), not by reading every completed turn.
    latest = Turn.objects.filter(session=OuterRef("pk")).order_by("-started_at", "-id")
    latest_of_blocked = (
        Session.objects.filter(cannot_resume=True)
        .annotate(
            latest=Subquery(latest.values("pk")[:1]),
            latest_status=Subquery(latest.values("status")[:1]),
        )
        .filter(latest_status=Turn.Status.COMPLETED)
        .values("latest")
    )
    # The status is tested inside, so the planner looks the few ids up by key rather than
    # reading every completed turn.
    blocks = Q(pk__in=latest_of_blocked)
    return stuck | blocks


def live_queue(stuck_before: datetime) -> TurnQuerySet:
    """The part of the queue that the kept tally does not count: stuck running turns
    and blocking completed ones, with `queue_status`. Whether a turn is in it depends on
    the clock and on its session's resume status; such turns are few."""
    return with_queue_status(Turn.objects.filter(_live(stuck_before)))


def tallied_turns() -> TurnQuerySet:
    """The queue's failed and interrupted turns, with `queue_status` (a page of them in
    the queue's order can come from the partial index `turn_queue_order_idx`)."""
    return with_queue_status(Turn.objects.filter(status__in=TALLIED))


def live_rows(live: TurnQuerySet) -> list[dict[str, Any]]:
    """One query: the turns of `live` (few) as combinations (`facets.build_facets`),
    each one turn (`n` 1), with `started_at` and `pk`, so that the view counts them and
    places them in the page without another query."""
    lookups = [lookup for _, lookup in DIMENSIONS.values()]
    return [{**row, "n": 1} for row in live.values(*lookups, "started_at", "pk")]


def queue_page(
    terminal: TurnQuerySet, live: list[tuple[datetime, str]], start: int, stop: int
) -> list[str]:
    """The ids of the queue's rows `start` to `stop` (newest first, by started_at then id)
    from its two parts, each already filtered: `terminal` (failed and interrupted turns, at
    most `stop` of them read) and `live` ((started_at, id) of the stuck and blocking
    turns). One query."""
    keys = list(terminal.order_by("-started_at", "-id").values_list("started_at", "pk")[:stop])
    keys += live
    keys.sort(reverse=True)
    return [pk for _, pk in keys[start:stop]]
