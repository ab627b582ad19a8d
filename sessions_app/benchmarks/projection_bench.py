"""`bench projection`: default projection + tool-protocol inspection per event
(docs/runtime.md §4-5).

For each size (default 1,000, 10,000 and 100,000 events) the synthetic history of
`agentops.runtime.bench.synthetic_history` (completed, failed-with-dangling-call,
interrupted turns with tool calls and results) is projected with `project_default` and
inspected with `inspect_tool_protocol`; the best of several repeats is reported in
microseconds per event, so flatness across sizes is visible. `explain_projection` (what
the context page shows) is timed beside it (best of 3). Pure CPU, no database.
Target: under 5 us/event. Figures only; nothing asserts timings (CONVENTIONS.md 14).
"""

from __future__ import annotations

import time
from typing import Any

from agentops.runtime.bench import synthetic_history
from agentops.runtime.projection import ProjectionInput, explain_projection, project_default
from agentops.runtime.protocol import inspect_tool_protocol
from sessions_app.benchmarks import Figures, register

#: Sizes measured when neither `sizes` nor `events` is given.
DEFAULT_SIZES = (1_000, 10_000, 100_000)
#: The target from the issue, microseconds per event for projection + inspection.
TARGET_US_PER_EVENT = 5.0


def _parse_sizes(sizes: str | None, events: int | None) -> list[int]:
    if sizes:
        try:
            parsed = [int(part) for part in str(sizes).split(",") if part.strip()]
        except ValueError:
            raise ValueError(f"sizes={sizes!r}: expected comma-separated integers") from None
        if not parsed or min(parsed) < 1:
            raise ValueError(f"sizes={sizes!r}: expected positive integers")
        return parsed
    if events is not None:
        return [int(events)]
    return list(DEFAULT_SIZES)


@register("projection")
def bench_projection(events: int | None = None, sizes: str | None = None, **_: Any) -> Figures:
    """Time projection + inspection per event for each size.

    Options: ``-o sizes=1000,10000`` (comma-separated event counts) or ``--events N`` (one
    size); default 1,000, 10,000 and 100,000. Returns, per size N: ``events_N`` (events
    generated), ``context_N`` (events in the projected context),
    ``projection_us_per_event_N`` (project_default + inspect_tool_protocol, best of
    repeats) and ``explain_us_per_event_N`` (explain_projection, best of 3); plus
    ``sizes`` and ``target_us_per_event``. Raises ValueError for malformed sizes.
    """
    figures: Figures = {
        "sizes": ",".join(str(n) for n in _parse_sizes(sizes, events)),
        "target_us_per_event": TARGET_US_PER_EVENT,
    }
    for n in _parse_sizes(sizes, events):
        turns, history = synthetic_history(n)
        projection_input = ProjectionInput(turns=turns, events=history)
        # More repeats for small sizes, where one pass is short and noisy.
        repeats = max(3, min(50, 200_000 // max(n, 1)))
        best = float("inf")
        context: list[Any] = []
        for _repeat in range(repeats):
            start = time.perf_counter()
            context = list(project_default(projection_input))
            inspect_tool_protocol(history)
            best = min(best, time.perf_counter() - start)
        explain_s = float("inf")
        for _repeat in range(3):
            start = time.perf_counter()
            explain_projection(turns, history)
            explain_s = min(explain_s, time.perf_counter() - start)
        figures[f"events_{n}"] = len(history)
        figures[f"context_{n}"] = len(context)
        figures[f"projection_us_per_event_{n}"] = round(best / len(history) * 1e6, 3)
        figures[f"explain_us_per_event_{n}"] = round(explain_s / len(history) * 1e6, 3)
    return figures
