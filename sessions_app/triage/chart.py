"""The triage queue's chart: failed and interrupted turns per UTC day, as SVG geometry.

The counts come from the kept tally (`tally.tallied_chart`: at most the newest CHART_DAYS
days with data); `build_chart` lays them out as stacked bars in the user units of the
SVG's viewBox, so the template only draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date, timedelta

from sessions_app.models import Turn

CHART_DAYS = 30
"""Most days the chart shows (fewer when the data spans fewer days)."""


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
        """Failed plus interrupted turns of the day."""
        return self.failed + self.interrupted

    @property
    def label_x(self) -> float:
        """Where the day's label is centred (x, user units)."""
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
        """The y of the x axis (user units)."""
        return self.HEIGHT - self.BOTTOM

    @property
    def plot_right(self) -> float:
        """The x where the grid lines end (user units)."""
        return self.WIDTH - self.RIGHT

    @property
    def plot_height(self) -> float:
        """Height of the area the bars may fill (user units)."""
        return self.HEIGHT - self.TOP - self.BOTTOM

    @property
    def label_y(self) -> float:
        """The baseline of the day labels under the axis (user units)."""
        return self.HEIGHT - 6


def build_chart(counts: list[tuple[date, str, int]], today: date) -> Chart | None:
    """Lay out the stacked bar chart; None when there is nothing to show.

    The window is the last CHART_DAYS days up to `today` (UTC) when the newest data is in
    it, else the CHART_DAYS days up to the newest day with data (old imports); it starts
    at the oldest day with data when that is later, so it never shows empty history.
    `counts` must come from `tally.tallied_chart` (newest first).
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
