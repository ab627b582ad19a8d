"""The failure triage queue, GET /turns/: failed, interrupted and stuck turns of all sessions.

Turn statuses, reasons and failure stages are those of SPEC.md 2. "Stuck" is not a
status: it is a running turn whose last event time is older than
`settings.AGENTOPS_STUCK_AFTER_SECONDS` (see `TurnQuerySet.triage_queue`).

Filters live in the URL (`?status=&code=&stage=&reason=&app=&page=`) and combine with AND.
Each facet's counts apply every *other* active filter, so a count is the number of rows
that clicking it would show. The value `(none)` selects turns whose code, stage or reason
is empty (it cannot collide with a real one: SPEC.md 2 allows only `[a-z0-9_.-]` in
codes, and stages/reasons are fixed words).

An htmx request whose target is `triage-results` gets only the `results` partial of
`turns/triage.html`; every link and the filter form also work without JavaScript.
All dates and times are UTC.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.core.paginator import Paginator
from django.db.models import Count
from django.db.models.functions import TruncDate
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import path, reverse
from django.utils import timezone
from django.views.decorators.http import require_GET
from django_htmx.http import push_url
from django_htmx.middleware import HtmxDetails

from sessions_app.access import require_viewer
from sessions_app.models import Turn, TurnQuerySet, stuck_before

PER_PAGE = 50
"""Rows per page of the queue."""

CHART_DAYS = 30
"""Most days the chart shows (fewer when the data spans fewer days)."""

NONE = "(none)"
"""Facet value that selects an empty failure code, stage or reason."""

# URL parameter -> how the NONE value reads on the page.
NONE_LABELS = {"code": "no code", "stage": "no stage", "reason": "no reason", "app": "no app"}

STATUSES = ("failed", "interrupted", "stuck")
"""The queue statuses: two terminal statuses of SPEC.md 2 plus the derived "stuck"."""

# URL parameter -> (label, queryset lookup). Order = order of the facets on the page.
DIMENSIONS: dict[str, tuple[str, str]] = {
    "status": ("Status", "queue_status"),
    "code": ("Failure code", "failure_code"),
    "stage": ("Stage", "failure_stage"),
    "reason": ("Reason", "reason"),
    "app": ("App", "session__app_name"),
}


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


@dataclass(frozen=True)
class Filters:
    """The active filters, by URL parameter name ("" = not filtering on it).

    `status` is one of STATUSES or ""; the other values are taken as given (a value that
    matches nothing simply shows an empty queue).
    """

    values: Mapping[str, str]

    @classmethod
    def from_query(cls, params: QueryDict) -> Filters:
        """Read the filters from a query string; an unknown status is ignored."""
        values = {name: params.get(name, "").strip() for name in DIMENSIONS}
        if values["status"] not in STATUSES:
            values["status"] = ""
        return cls(values)

    @property
    def active(self) -> bool:
        """True when at least one filter is set."""
        return any(self.values.values())

    def lookups(self, skip: str = "") -> dict[str, str]:
        """ORM lookups for every active filter except `skip` ((none) -> empty string)."""
        return {
            DIMENSIONS[name][1]: "" if value == NONE else value
            for name, value in self.values.items()
            if value and name != skip
        }

    def matches(self, combo: Mapping[str, Any], skip: str = "") -> bool:
        """True when a row of `facet_combinations` passes every filter except `skip`."""
        return all(combo[lookup] == value for lookup, value in self.lookups(skip).items())

    def query(self, page: int = 1, /, **changes: str) -> str:
        """The query string of these filters with `changes` applied, and `page` when it is
        not the first ("" when nothing is left)."""
        merged = {**self.values, **changes}
        pairs = [(name, merged[name]) for name in DIMENSIONS if merged[name]]
        if page > 1:
            pairs.append(("page", str(page)))
        return urlencode(pairs)


@dataclass(frozen=True)
class FacetValue:
    """One clickable facet entry: `query` is the URL query string its link leads to
    (this value added, or removed when it is already `selected`)."""

    value: str
    label: str
    count: int
    selected: bool
    query: str


@dataclass(frozen=True)
class Facet:
    """A facet (one filter dimension) and its values, most frequent first."""

    name: str
    label: str
    values: list[FacetValue]


def facet_combinations(queue: TurnQuerySet) -> list[dict[str, Any]]:
    """One query: the queue grouped by every facet dimension.

    Returns dicts with keys `queue_status`, `failure_code`, `failure_stage`, `reason`,
    `session__app_name` (str) and `n` (int, turns). The number of rows is the number of
    distinct combinations, which does not grow with the number of turns.
    """
    lookups = [lookup for _, lookup in DIMENSIONS.values()]
    return list(queue.values(*lookups).annotate(n=Count("pk")).order_by())


def build_facets(combos: Iterable[Mapping[str, Any]], filters: Filters) -> list[Facet]:
    """Facets with counts, computed from `facet_combinations` rows without a query.

    Each facet's counts apply every active filter except its own. A selected value is
    listed even when its count is 0, so it can always be cleared.
    """
    combos = list(combos)
    facets = []
    for name, (label, lookup) in DIMENSIONS.items():
        counts: Counter[str] = Counter()
        for combo in combos:
            if filters.matches(combo, skip=name):
                counts[combo[lookup] or NONE] += combo["n"]
        selected = filters.values[name]
        if selected and selected not in counts:
            counts[selected] = 0
        ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        values = [
            FacetValue(
                value=value,
                label=NONE_LABELS.get(name, value) if value == NONE else value,
                count=count,
                selected=value == selected,
                query=filters.query(**{name: "" if value == selected else value}),
            )
            for value, count in ordered
        ]
        facets.append(Facet(name=name, label=label, values=values))
    return facets


@dataclass(frozen=True)
class ChartBar:
    """One day of the chart: counts and SVG geometry (user units of the viewBox)."""

    day: date
    failed: int
    interrupted: int
    x: float
    width: float
    failed_y: float
    failed_height: float
    interrupted_y: float
    interrupted_height: float
    show_label: bool

    @property
    def total(self) -> int:
        return self.failed + self.interrupted

    @property
    def label_x(self) -> float:
        return self.x + self.width / 2


@dataclass(frozen=True)
class Chart:
    """Failed and interrupted turns per UTC day (started_at), stacked, as SVG geometry.

    `bars` holds one entry per day from `start` to `end` inclusive (days without turns
    are zero); `y_ticks` are (value, y) pairs for the horizontal grid lines.
    """

    start: date
    end: date
    bars: list[ChartBar]
    max_count: int
    failed_total: int
    interrupted_total: int
    y_ticks: list[tuple[int, float]] = field(default_factory=list)

    WIDTH = 900
    HEIGHT = 180
    LEFT = 36
    TOP = 10
    BOTTOM = 24
    RIGHT = 8

    @property
    def plot_bottom(self) -> float:
        return self.HEIGHT - self.BOTTOM

    @property
    def plot_right(self) -> float:
        return self.WIDTH - self.RIGHT

    @property
    def plot_height(self) -> float:
        return self.HEIGHT - self.TOP - self.BOTTOM

    @property
    def label_y(self) -> float:
        return self.HEIGHT - 6


CHART_STATUSES = (Turn.Status.FAILED, Turn.Status.INTERRUPTED)


def chart_counts(queue: TurnQuerySet) -> list[tuple[date, str, int]]:
    """One query: (UTC day of started_at, status, turns) for failed/interrupted turns of
    `queue`, newest day first, at most the groups of the newest CHART_DAYS days with data.

    Each day has at most two groups, so the newest 2 * CHART_DAYS groups contain every
    day that `build_chart` can show; older history is never fetched.
    """
    rows = (
        queue.filter(status__in=CHART_STATUSES)
        .annotate(day=TruncDate("started_at", tzinfo=UTC))
        .values("day", "status")
        .annotate(n=Count("pk"))
        .order_by("-day", "status")[: 2 * CHART_DAYS]
    )
    return [(row["day"], row["status"], row["n"]) for row in rows]


def build_chart(counts: list[tuple[date, str, int]], today: date) -> Chart | None:
    """Lay out the stacked bar chart; None when there is nothing to show.

    The window is the last CHART_DAYS days up to `today` (UTC) when the newest data is in
    it, else the CHART_DAYS days up to the newest day with data (old imports); it starts
    at the oldest day with data when that is later, so it never shows empty history.
    `counts` must come from `chart_counts` (newest first).
    """
    if not counts:
        return None
    newest = max(day for day, _, _ in counts)
    oldest = min(day for day, _, _ in counts)
    window = timedelta(days=CHART_DAYS - 1)
    end = today if today - window <= newest <= today else newest
    start = max(oldest, end - window)
    per_day: dict[date, dict[str, int]] = {}
    for day, status, n in counts:
        if start <= day <= end:
            per_day.setdefault(day, {})[status] = n

    n_days = (end - start).days + 1
    max_count = max((sum(c.values()) for c in per_day.values()), default=0)
    top = _nice_ceiling(max_count)
    plot_h = Chart.HEIGHT - Chart.TOP - Chart.BOTTOM
    plot_w = Chart.WIDTH - Chart.LEFT - Chart.RIGHT
    slot = min(plot_w / n_days, 60.0)
    label_every = max(1, math.ceil(n_days / 8))
    bottom = Chart.HEIGHT - Chart.BOTTOM

    bars = []
    for i in range(n_days):
        day = start + timedelta(days=i)
        failed = per_day.get(day, {}).get(Turn.Status.FAILED, 0)
        interrupted = per_day.get(day, {}).get(Turn.Status.INTERRUPTED, 0)
        failed_h = plot_h * failed / top
        interrupted_h = plot_h * interrupted / top
        bars.append(
            ChartBar(
                day=day,
                failed=failed,
                interrupted=interrupted,
                x=round(Chart.LEFT + i * slot + slot * 0.15, 2),
                width=round(slot * 0.7, 2),
                failed_y=round(bottom - failed_h, 2),
                failed_height=round(failed_h, 2),
                interrupted_y=round(bottom - failed_h - interrupted_h, 2),
                interrupted_height=round(interrupted_h, 2),
                show_label=(n_days - 1 - i) % label_every == 0,
            )
        )
    ticks = [(value, round(bottom - plot_h * value / top, 2)) for value in (top // 2, top)]
    return Chart(
        start=start,
        end=end,
        bars=bars,
        max_count=max_count,
        failed_total=sum(bar.failed for bar in bars),
        interrupted_total=sum(bar.interrupted for bar in bars),
        y_ticks=[tick for tick in ticks if tick[0] > 0],
    )


def _nice_ceiling(value: int) -> int:
    """The smallest of 2, 4, 6, 10, 20, 40, 60, 100, ... that is >= value (even, >= 2)."""
    magnitude = 1
    while True:
        for step in (2, 4, 6, 10):
            if step * magnitude >= value:
                return step * magnitude
        magnitude *= 10


@dataclass(frozen=True)
class QueueRow:
    """A turn of the queue as a row: the turn (with `queue_status`, `last_event_at` and
    `timeline_index` annotations and its session joined) and derived figures."""

    turn: Turn
    timeline_page: int
    now: datetime

    @property
    def stuck_minutes(self) -> int | None:
        """Whole minutes since the last event of a stuck turn; None for other turns."""
        if self.turn.queue_status != "stuck":  # type: ignore[attr-defined]
            return None
        elapsed = self.now - self.turn.last_event_at  # type: ignore[attr-defined]
        return int(elapsed.total_seconds() // 60)

    @property
    def duration(self) -> str:
        """Start to finish, e.g. "42 s", "3 min 5 s", "2 h 4 min"; "" while running."""
        return self.turn.duration_text


@require_GET
def turn_queue(request: HtmxHttpRequest) -> HttpResponse:
    """GET /turns/?status=&code=&stage=&reason=&app=&page=: the triage queue, newest first.

    Shows facets with counts, a per-day chart of failed/interrupted turns and one page
    (PER_PAGE) of rows, each linking to its turn on the session page at the timeline page
    that holds it. Costs the same number of queries however many turns exist: facet
    combinations, chart counts, row count and one page of rows. Raises PermissionDenied
    (403) for a signed-in user without a dashboard role.
    """
    require_viewer(request)
    now = timezone.now()
    filters = Filters.from_query(request.GET)
    queue = Turn.objects.triage_queue(stuck_before(now))
    filtered = queue.filter(**filters.lookups())

    facets = build_facets(facet_combinations(queue), filters)
    chart = build_chart(chart_counts(filtered), now.astimezone(UTC).date())
    rows = (
        filtered.select_related("session")
        .defer("session__state", "session__source_path")
        .with_last_event_at()
        .with_timeline_index()
        .order_by("-started_at", "-id")
    )
    page = Paginator(rows, PER_PAGE).get_page(request.GET.get("page"))
    per_timeline_page = settings.AGENTOPS_TURNS_PER_PAGE
    context = {
        "page": page,
        "rows": [
            QueueRow(turn, turn.timeline_index // per_timeline_page + 1, now)  # type: ignore[attr-defined]
            for turn in page
        ],
        "filters": filters,
        "facets": facets,
        "chart": chart,
        "stuck_after_minutes": settings.AGENTOPS_STUCK_AFTER_SECONDS / 60,
        "filter_query": filters.query(),
        "queue_url": reverse("turn_queue"),
    }
    template = "turns/triage.html"
    if request.htmx and request.htmx.target == "triage-results":
        response = render(request, template + "#results", context)
        # The form sends every select, empty ones too; push the canonical URL instead.
        canonical = filters.query(page.number)
        url = reverse("turn_queue")
        return push_url(response, f"{url}?{canonical}" if canonical else url)
    return render(request, template, context)


# Included from agentops/urls.py as path("turns/", include("sessions_app.triage")).
urlpatterns = [path("", turn_queue, name="turn_queue")]
