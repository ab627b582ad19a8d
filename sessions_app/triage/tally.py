"""The triage queue's failed and interrupted turns, read from the kept counts
(`triage.models.TriageTally`) instead of counted over every turn.

Two queries whatever the number of turns: `tallied` (facet combinations and tool counts)
and `tallied_chart` (the chart's days). Both apply the filters as `triage.filters` does;
the stuck and blocking turns, which the tally does not hold, are counted live by the view
(`queue.live_queue`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from django.db.models import Q, Sum

from sessions_app.triage.chart import CHART_DAYS
from sessions_app.triage.filters import Filters
from sessions_app.triage.models import TOOL_LENGTH, TriageTally

__all__ = ["Tallied", "tallied", "tallied_chart"]

# A combination's key (`facets.build_facets`) -> the tally's column.
COLUMNS = {
    "queue_status": "status",
    "failure_code": "failure_code",
    "failure_stage": "failure_stage",
    "reason": "reason",
    "session__app_name": "app_name",
}


@dataclass(frozen=True)
class Tallied:
    """The tallied turns: `combos` as combinations (`facets.build_facets`) (the
    turns calling the filtered tool, or all), `tools` as (tool, turns) for the turns that
    pass every dimension filter, most called first, then by name."""

    combos: list[dict[str, Any]]
    tools: list[tuple[str, int]]


def _tool(filters: Filters) -> str:
    """The tally's `tool` value for the tool filter ("" = every turn)."""
    return filters.tool[:TOOL_LENGTH]


def tallied(filters: Filters) -> Tallied:
    """One query: the tally summed over days, per combination and tool."""
    rows = (
        TriageTally.objects.values(*COLUMNS.values(), "tool")
        .annotate(total=Sum("n"))
        .filter(total__gt=0)
        .order_by()
    )
    combos: list[dict[str, Any]] = []
    tools: dict[str, int] = {}
    wanted = _tool(filters)
    for row in rows:
        combo = {key: row[column] for key, column in COLUMNS.items()}
        combo["n"] = row["total"]
        if row["tool"] == wanted:
            combos.append(combo)
        if row["tool"] and filters.matches(combo):
            tools[row["tool"]] = tools.get(row["tool"], 0) + row["total"]
    return Tallied(combos, sorted(tools.items(), key=lambda item: (-item[1], item[0])))


def tallied_chart(filters: Filters) -> list[tuple[date, str, int]]:
    """One query: the chart's counts for the filtered queue, from the tally:
    (UTC day, status, turns), newest day first, at most the newest CHART_DAYS days' groups."""
    lookups = {COLUMNS[key]: value for key, value in filters.lookups().items()}
    rows = (
        TriageTally.objects.filter(Q(**lookups), tool=_tool(filters))
        .values("day", "status")
        .annotate(total=Sum("n"))
        .filter(total__gt=0)
        .order_by("-day", "status")[: 2 * CHART_DAYS]
    )
    return [(row["day"], row["status"], row["total"]) for row in rows]
