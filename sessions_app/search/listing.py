"""The sessions list's filters and sort order, read from the URL.

`?status=&app=&health=&q=&tool=&model=&from=&to=&sort=`: every filter combines with AND;
an empty value filters nothing. `from`/`to` are UTC days (YYYY-MM-DD, both inclusive) of
the last activity; `sort` is one of SORTS, `-` first for descending.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.db.models import F
from django.http import QueryDict

from sessions_app.models import SessionQuerySet, Turn
from sessions_app.search.text import search_sessions, sessions_using_tool

#: The turn statuses a list may be filtered by, in the runtime's order.
TURN_STATUSES = [status.value for status in Turn.Status]

#: `?sort=` name -> the ordering it means (ascending); `-name` reverses it.
SORTS: dict[str, tuple[str, ...]] = {
    "last_activity": ("updated_at", "id"),
    "created": ("created_at", "id"),
    "title": ("title", "id"),
    "turns": ("turn_count", "id"),
    "tokens": ("tokens_total", "id"),
    "model": ("model", "id"),
}
DEFAULT_SORT = "-last_activity"


class SortError(ValueError):
    """A filter value the list cannot use; `str()` is a one-line message for a 400."""


def _day(name: str, value: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise SortError(f"{name}: expected a day as YYYY-MM-DD, got {value[:40]!r}") from None


@dataclass(frozen=True)
class ListFilters:
    """The list's URL parameters, checked. Raises SortError (from `from_query`) for a
    malformed day or an unknown sort."""

    status: str = ""
    app: str = ""
    query: str = ""
    health: str = ""
    tool: str = ""
    model: str = ""
    day_from: date | None = None
    day_to: date | None = None
    sort: str = DEFAULT_SORT

    @classmethod
    def from_query(cls, params: QueryDict) -> ListFilters:
        """Read the filters from a query string."""
        sort = params.get("sort", "").strip() or DEFAULT_SORT
        if sort.removeprefix("-") not in SORTS:
            raise SortError(f"sort: unknown column {sort[:40]!r}; use one of {', '.join(SORTS)}")
        return cls(
            status=params.get("status", ""),
            app=params.get("app", ""),
            query=params.get("q", "").strip(),
            health=params.get("health", ""),
            tool=params.get("tool", "").strip(),
            model=params.get("model", "").strip(),
            day_from=_day("from", params.get("from", "").strip()),
            day_to=_day("to", params.get("to", "").strip()),
            sort=sort,
        )

    @property
    def active(self) -> bool:
        """True when anything narrows the list (the sort does not)."""
        return any((self.status, self.app, self.query, self.health, self.tool, self.model)) or bool(
            self.day_from or self.day_to
        )

    def apply(self, sessions: SessionQuerySet) -> SessionQuerySet:
        """`sessions` (annotated by `with_summary`) narrowed and
        ordered. `status` is matched against the latest turn's status; `health` is
        `cannot_resume`, `open_calls` (any unanswered call) or `orphans` (any tool result
        that answers no call); `q` searches headers and event text
        (`search.text.search_sessions`); `tool` an exact tool name; `model` the session's
        model."""
        if self.status in TURN_STATUSES:
            sessions = sessions.with_latest_turn_status(self.status)
        if self.app:
            sessions = sessions.filter(app_name=self.app)
        if self.query:
            sessions = search_sessions(sessions, self.query)
        if self.tool:
            sessions = sessions_using_tool(sessions, self.tool)
        if self.model:
            sessions = sessions.filter(model=self.model)
        if self.day_from:
            sessions = sessions.filter(updated_at__gte=datetime.combine(self.day_from, time(), UTC))
        if self.day_to:
            end = datetime.combine(self.day_to + timedelta(days=1), time(), UTC)
            sessions = sessions.filter(updated_at__lt=end)
        if self.health == "cannot_resume":
            sessions = sessions.filter(cannot_resume=True)
        elif self.health == "open_calls":
            sessions = sessions.filter(protocol_issue_count__gt=0)
        elif self.health == "orphans":
            sessions = sessions.filter(orphan_result_count__gt=0)
        return self._ordered(sessions)

    def _ordered(self, sessions: SessionQuerySet) -> SessionQuerySet:
        descending = self.sort.startswith("-")
        columns = SORTS[self.sort.removeprefix("-")]
        if columns[0] == "tokens_total":
            sessions = sessions.annotate(tokens_total=F("tokens_input") + F("tokens_output"))
        return sessions.order_by(
            *(
                F(column).desc(nulls_last=True) if descending else F(column).asc(nulls_first=True)
                for column in columns
            )
        )

    def sort_link(self, column: str) -> str:
        """The `sort` value a column header links to: descending first, then ascending
        when the list is already sorted descending by it."""
        return column if self.sort == f"-{column}" else f"-{column}"
