"""The triage queue's facets: for each filter dimension, its values and how many turns
each would show.

Each facet's counts apply every *other* active filter, so a count is the number of rows
that clicking it would show. All facets come from the combinations of turns with the
same status, code, stage, reason and app (`tally.tallied`, `queue.live_rows`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sessions_app.labels import KINDS, label_for
from sessions_app.triage.filters import DIMENSIONS, NONE, NONE_LABELS, Filters


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


def _plain(name: str, value: str) -> str:
    """How a facet value reads: the plain label of a status, code, stage or reason
    (`sessions_app.labels`), the "none" wording of an empty one, else the value."""
    if value == NONE:
        return NONE_LABELS.get(name, value)
    if name in KINDS:
        return label_for(name, value).text or value
    return value


def build_facets(combos: Iterable[Mapping[str, Any]], filters: Filters) -> list[Facet]:
    """Facets with counts, computed without a query from combinations: dicts keyed by
    every DIMENSIONS lookup, with `n` the turns that share those values (`tally.tallied`,
    `queue.live_rows`).

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
                label=_plain(name, value),
                count=count,
                selected=value == selected,
                query=filters.query(**{name: "" if value == selected else value}),
            )
            for value, count in ordered
        ]
        facets.append(Facet(name=name, label=label, values=values))
    return facets
