"""The triage queue's filters: which URL parameters exist and how they become lookups.

Filters live in the URL (`?status=&code=&stage=&reason=&app=&tool=`) and combine with AND.
`tool` (a tool the turn called) is not a grouped dimension: `triage.tools` applies it. The
value `(none)` selects turns whose code, stage or reason is empty (it cannot collide with
a real one: docs/runtime.md §2 allows only `[a-z0-9_.-]` in codes, and stages/reasons are fixed
words).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict

NONE = "(none)"
"""Facet value that selects an empty failure code, stage or reason."""

# URL parameter -> how the NONE value reads on the page.
NONE_LABELS = {"code": "no code", "stage": "no stage", "reason": "no reason", "app": "no app"}

STATUSES = ("failed", "interrupted", "stuck", "blocks")
"""The queue statuses: two terminal statuses of docs/runtime.md §2, the derived "stuck",
and "blocks" (a completed turn whose unanswered call blocks the session)."""

# URL parameter -> (label, queryset lookup). Order = order of the facets on the page.
DIMENSIONS: dict[str, tuple[str, str]] = {
    "status": ("Status", "queue_status"),
    "code": ("Failure code", "failure_code"),
    "stage": ("Stage", "failure_stage"),
    "reason": ("Reason", "reason"),
    "app": ("App", "session__app_name"),
}


@dataclass(frozen=True)
class Filters:
    """The active filters, by URL parameter name ("" = not filtering on it).

    `status` is one of STATUSES or ""; the other values are taken as given (a value that
    matches nothing simply shows an empty queue). `tool` is the tool filter ("" = none).
    """

    values: Mapping[str, str]
    tool: str = ""

    @classmethod
    def from_query(cls, params: QueryDict) -> Filters:
        """Read the filters from a query string; an unknown status is ignored."""
        values = {name: params.get(name, "").strip() for name in DIMENSIONS}
        if values["status"] not in STATUSES:
            values["status"] = ""
        return cls(values, tool=params.get("tool", "").strip())

    @property
    def active(self) -> bool:
        """True when at least one filter is set."""
        return any(self.values.values()) or bool(self.tool)

    def lookups(self, skip: str = "") -> dict[str, str]:
        """ORM lookups for every active filter except `skip` ((none) -> empty string)."""
        return {
            DIMENSIONS[name][1]: "" if value == NONE else value
            for name, value in self.values.items()
            if value and name != skip
        }

    def matches(self, combo: Mapping[str, Any], skip: str = "") -> bool:
        """True when a combination (`facets.build_facets`) passes every filter except `skip`."""
        return all(combo[lookup] == value for lookup, value in self.lookups(skip).items())

    def query(self, page: int = 1, /, **changes: str) -> str:
        """The query string of these filters with `changes` applied, and `page` when it is
        not the first ("" when nothing is left)."""
        merged = {**self.values, "tool": self.tool, **changes}
        pairs = [(name, merged[name]) for name in [*DIMENSIONS, "tool"] if merged[name]]
        if page > 1:
            pairs.append(("page", str(page)))
        return urlencode(pairs)
