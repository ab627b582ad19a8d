"""Everything the triage page shows, read in a fixed number of queries however many turns
exist: `read_queue`.

The failed and interrupted turns are counted from the kept tally (`triage.tally`); the
stuck and blocking turns, which are few, are read live (`queue.live_queue`). A page of
rows is then placed from both parts and read by id with what a row shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.core.paginator import Page, Paginator

from sessions_app.models import Turn
from sessions_app.search.numbers import with_turn_tokens
from sessions_app.triage.chart import Chart, build_chart
from sessions_app.triage.facets import Facet, build_facets
from sessions_app.triage.filters import Filters
from sessions_app.triage.queue import (
    live_queue,
    live_rows,
    queue_page,
    tallied_turns,
    with_queue_status,
)
from sessions_app.triage.tally import tallied, tallied_chart
from sessions_app.triage.tools import merged_counts, tool_counts, tool_facet, turns_calling
from sessions_app.values import stuck_before

__all__ = ["QueueRead", "read_queue"]


@dataclass(frozen=True)
class QueueRead:
    """One page of the queue: `facets` (the tool facet last), the `chart` (None when there
    is nothing to draw), the paginator `page` (of row offsets) and its `turns`, newest
    first, annotated for `rows.QueueRow` and with their token totals."""

    facets: list[Facet]
    chart: Chart | None
    page: Page[int]
    turns: list[Turn]


def read_queue(filters: Filters, now: datetime, *, page: str | None, per_page: int) -> QueueRead:
    """The queue under `filters` at `now` (aware UTC): six queries (the tally, the chart's
    days, the live turns, their tools, the page's keys and its rows)."""
    lookups = filters.lookups()
    live = live_queue(stuck_before(now))
    live_narrowed = turns_calling(live, filters.tool) if filters.tool else live
    terminal = tallied_turns()
    terminal = turns_calling(terminal, filters.tool) if filters.tool else terminal

    kept = tallied(filters)
    live_turns = live_rows(live_narrowed)
    combos = kept.combos + live_turns
    facets = build_facets(combos, filters)
    tools = merged_counts(kept.tools, tool_counts(live.filter(**lookups)))
    facets.append(tool_facet(tools, filters))
    chart = build_chart(tallied_chart(filters), now.astimezone(UTC).date())
    total = sum(combo["n"] for combo in combos if filters.matches(combo))
    # The paginator pages row offsets; the turns at those offsets are then read by id.
    shown = Paginator(range(total), per_page).get_page(page)
    offsets = shown.object_list
    ids = queue_page(
        terminal.filter(**lookups),
        [(row["started_at"], row["pk"]) for row in live_turns if filters.matches(row)],
        offsets.start,  # type: ignore[attr-defined]
        offsets.stop,  # type: ignore[attr-defined]
    )
    rows = (
        with_queue_status(Turn.objects.filter(pk__in=ids))
        .select_related("session")
        .defer("session__state", "session__source_path")
        .with_last_event_at()
        .with_timeline_index()
        .order_by("-started_at", "-id")
    )
    return QueueRead(facets, chart, shown, list(with_turn_tokens(rows)))
