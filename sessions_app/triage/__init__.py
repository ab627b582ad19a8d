"""The failure triage queue, GET /turns/: failed, interrupted and stuck turns of all sessions.

Turn statuses, reasons and failure stages are those of docs/runtime.md §2. "Stuck" is not a
status: it is a running turn whose last event time is older than
`settings.AGENTOPS_STUCK_AFTER_SECONDS` (see `queue.live_queue`).

- `queue`: the turns it holds (failed and interrupted ones, `TALLIED`; stuck and blocking
  ones, `live_queue`) and why each is there.
- `filters`: the URL parameters (`?status=&code=&stage=&reason=&app=&tool=&page=`,
  combined with AND) and the lookups they become; `(none)` selects an empty code, stage or
  reason.
- `facets`: each filter dimension's values with counts (every *other* filter applied).
- `tools`: the tool facet and filter (a turn calls many tools: counted in its own query).
- `chart`: failed and interrupted turns per UTC day, laid out as SVG geometry.
- `rows`: the queue's rows, each with its deep link to the turn's timeline page.
- `views`: the thin view; `urls`: its route (included from agentops/urls.py).

An htmx request whose target is `triage-results` gets only the `results` partial of
`turns/triage.html`; every link and the filter form also work without JavaScript.
All dates and times are UTC; pages show them in the reader's zone.
"""

from __future__ import annotations

from sessions_app.triage.chart import CHART_DAYS, build_chart
from sessions_app.triage.filters import NONE

__all__ = ["CHART_DAYS", "NONE", "build_chart"]
