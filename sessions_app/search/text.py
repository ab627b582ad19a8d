"""Full-text search over events with the database's own engine (migration `0009_search`).

What is searched, per event: `text`, `reasoning`, the texts of `parts`, and the JSON of
`tool_calls` (tool names and arguments) and `tool_response` (tool name and result).
Only active events count (neither soft-deleted nor archived).

- SQLite: the FTS5 table `sessions_app_event_fts` (rowid = event id), filled by triggers
  on `sessions_app_event`, so every write path (ORM, the store's append path, the
  importer's bulk INSERT, deletes and cascades) keeps it current; a bulk INSERT of many
  events indexes them with one statement instead of the per-row trigger
  (`batch_index`).
- PostgreSQL: a GIN index on `to_tsvector('simple', EVENT_DOCUMENT_SQL)`; the query
  repeats the same expression so the planner can use the index.

A query is words: every word must occur in the event (any case; words are split at
punctuation as the engine splits them, so `get_order` finds the tool `get_order`).
User input is never read as query syntax: each word is quoted for FTS5, and PostgreSQL
gets `plainto_tsquery`. A query without any word matches no event.
"""

from __future__ import annotations

from django.db import connection
from django.db.models import Q
from django.db.models.expressions import RawSQL

from sessions_app.models import Event, EventQuerySet, SessionQuerySet

FTS_TABLE = "sessions_app_event_fts"
"""The SQLite FTS5 table (rowid = event id)."""

EVENT_DOCUMENT_SQL = (
    "coalesce(text, '') || ' ' || coalesce(reasoning, '') || ' ' || "
    "coalesce(jsonb_path_query_array(parts, '$[*].text')::text, '') || ' ' || "
    "coalesce(tool_calls::text, '') || ' ' || coalesce(tool_response::text, '')"
)
"""PostgreSQL: an event's searchable text (column names of `sessions_app_event`)."""

PG_VECTOR_SQL = f"to_tsvector('simple'::regconfig, {EVENT_DOCUMENT_SQL})"
"""PostgreSQL: the indexed expression (`event_search_idx`); queries must repeat it."""

_ACTIVE = "deleted_at IS NULL AND archived_at IS NULL"


def fts5_query(text: str) -> str:
    """`text` as an FTS5 query that means "all these words": each whitespace-separated
    word becomes a quoted string (a double quote doubled), so `"a" OR`, `*`, `NEAR(` or
    `col:x` are words to find, never syntax. Returns "" when `text` has no word."""
    return " ".join('"' + word.replace('"', '""') + '"' for word in text.split())


def _event_ids_sql(text: str, column: str) -> tuple[str, list[str]] | None:
    """SQL selecting `column` (`id` or `session_id`) of the active events matching
    `text`, with its parameters; None when `text` has no word (nothing matches)."""
    if not text.split():
        return None
    table = Event._meta.db_table
    if connection.vendor == "postgresql":
        sql = (
            f"SELECT {column} FROM {table} WHERE {_ACTIVE} AND "
            f"{PG_VECTOR_SQL} @@ plainto_tsquery('simple'::regconfig, %s)"
        )
        return sql, [text]
    sql = (
        f"SELECT e.{column} FROM {table} e WHERE e.{_ACTIVE.replace(' AND ', ' AND e.')} "
        f"AND e.id IN (SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s)"
    )
    return sql, [fts5_query(text)]


def search_sessions(sessions: SessionQuerySet, text: str) -> SessionQuerySet:
    """`sessions` whose id, title, app, user or source path contains `text` (any case),
    or that have an active event matching `text` (module docstring). One query when
    evaluated: the event match is a subquery."""
    header = (
        Q(id__icontains=text)
        | Q(title__icontains=text)
        | Q(app_name__icontains=text)
        | Q(user_id__icontains=text)
        | Q(source_path__icontains=text)
    )
    events = _event_ids_sql(text, "session_id")
    if events is None:
        return sessions.filter(header)
    sql, params = events
    return sessions.filter(header | Q(pk__in=RawSQL(sql, params)))


def matching_events(events: EventQuerySet, text: str) -> EventQuerySet:
    """The active ones of `events` matching `text` (module docstring); none for a query
    without a word."""
    found = _event_ids_sql(text, "id")
    if found is None:
        return events.none()
    sql, params = found
    return events.active().filter(pk__in=RawSQL(sql, params))


def calls_tool_sql() -> str:
    """An SQL condition on an event row (its unqualified `tool_calls` column) that holds
    when the event calls the tool named by its one parameter (exact name, as stored in
    `tool_calls[].name`)."""
    if connection.vendor == "postgresql":
        return "tool_calls @> jsonb_build_array(jsonb_build_object('name', %s::text))"
    # A CASE, not AND: json_extract() of an element that is not an object would raise.
    return (
        "EXISTS (SELECT 1 FROM json_each(tool_calls) c WHERE "
        "(CASE WHEN c.type = 'object' THEN json_extract(c.value, '$.name') END) = %s)"
    )


def sessions_using_tool(sessions: SessionQuerySet, name: str) -> SessionQuerySet:
    """`sessions` with an active event that calls the tool `name` (exact name, as stored
    in `tool_calls[].name`) or answers a call of it (`tool_response.name`)."""
    table = Event._meta.db_table
    sql = f"SELECT session_id FROM {table} WHERE {_ACTIVE} AND {calls_tool_sql()}"
    return sessions.filter(
        Q(pk__in=RawSQL(sql, [name]))
        | Q(pk__in=Event.objects.active().filter(tool_response__name=name).values("session_id"))
    )
