"""Finding sessions and events, and the numbers the pages show.

- `text`: full-text search over events (message text, reasoning, tool names, arguments
  and results) with the database's own engine: an SQLite FTS5 table kept current by
  triggers on the event table, or a PostgreSQL GIN expression index (migration
  `0009_search`); user input is never read as query syntax.
- `listing`: the sessions list's filters and sort order (`?q=&tool=&model=&from=&to=&sort=`).
- `numbers`: token totals (input, output, cached) per session and turn, computed by the
  database, and cost from `settings.AGENTOPS_MODEL_PRICES`.
"""

from __future__ import annotations

from sessions_app.search.listing import ListFilters, SortError
from sessions_app.search.numbers import TokenTotals, cost_of, with_turn_tokens
from sessions_app.search.text import matching_events, search_sessions, sessions_using_tool

__all__ = [
    "ListFilters",
    "SortError",
    "TokenTotals",
    "cost_of",
    "matching_events",
    "search_sessions",
    "sessions_using_tool",
    "with_turn_tokens",
]
