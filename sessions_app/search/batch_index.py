"""SQLite: a batch of new events indexed for search by one statement, not row by row.

The FTS5 table is kept current by triggers (`text`, migration ``0010_search``). Its
insert trigger costs several times the INSERT itself per row when a batch of rows is
inserted (an import, an API batch, an OTLP batch): FTS5 is updated once per row. Since
migration ``0016_search_batch_index`` that trigger does nothing while the table
`DEFERRED_TABLE` holds a row; `indexed_in_one_statement` puts one there for the duration of
a bulk INSERT (in the caller's transaction, under SQLite's one write lock, so no other
writer ever sees it), then indexes every event above the highest id that existed before
with one INSERT ... SELECT of the same document the trigger indexes, and takes the row
away. Either everything commits (rows and their index) or nothing. Single inserts (the
store's appends, the ORM) keep the trigger. PostgreSQL keeps its GIN expression index,
which the database maintains itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction

from sessions_app.models import Event
from sessions_app.search.text import FTS_TABLE

__all__ = ["DEFERRED_TABLE", "SQLITE_DOCUMENT_SQL", "indexed_in_one_statement"]

DEFERRED_TABLE = "sessions_app_event_fts_deferred"
"""SQLite: while it holds a row, the FTS insert trigger does nothing."""

SQLITE_DOCUMENT_SQL = (
    "coalesce({r}.text, '') || ' ' || coalesce({r}.reasoning, '') || ' ' || "
    "coalesce((SELECT group_concat(json_extract(p.value, '$.text'), ' ') "
    "FROM json_each(CASE WHEN json_valid({r}.parts) AND json_type({r}.parts) = 'array' "
    "THEN {r}.parts ELSE '[]' END) p WHERE p.type = 'object'), '')"
    " || ' ' || "
    "coalesce({r}.tool_calls, '') || ' ' || coalesce({r}.tool_response, '')"
)
"""SQLite: an event's indexed document (``{r}``: the row's alias), as the triggers of
migrations 0010 and 0016 index it."""


@contextmanager
def indexed_in_one_statement() -> Iterator[None]:
    """Events inserted inside are indexed by one statement at the end (SQLite; module
    docstring); elsewhere it does nothing."""
    if connection.vendor != "sqlite":
        yield
        return
    table = connection.ops.quote_name(Event._meta.db_table)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"INSERT OR IGNORE INTO {DEFERRED_TABLE} (id) VALUES (1)")
        cursor.execute(f"SELECT coalesce(max(id), 0) FROM {table}")
        (before,) = cursor.fetchone()
        yield
        cursor.execute(
            f"INSERT INTO {FTS_TABLE} (rowid, body) SELECT e.id, "
            f"{SQLITE_DOCUMENT_SQL.format(r='e')} FROM {table} e WHERE e.id > %s",
            [before],
        )
        cursor.execute(f"DELETE FROM {DEFERRED_TABLE}")
