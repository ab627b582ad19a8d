"""SQLite: a batch of new events indexed for search by one statement, not row by row.

The FTS5 table is kept current by triggers (`text`, migration ``0010_search``). Its
insert trigger costs the database more per row than the INSERT itself when a batch of
rows is inserted (an import, an API batch, an OTLP batch). Since migration
``0017_search_batch_index`` that trigger does nothing while the table `DEFERRED_TABLE`
holds a row, and taking that row away indexes, with one INSERT ... SELECT, every event
above the id it holds (a trigger of that table: the document is the same one the
per-row trigger indexes, defined in the migrations only). Since migration
``0019_triage_batch`` the triage tally's insert trigger (`sessions_app.triage`) waits for
the same row, and its removal counts the batch's tool uses too (two more statements).
`indexed_in_one_statement`
puts the row there (the highest event id so far) for the duration of a bulk INSERT, in
the caller's transaction and under SQLite's one write lock, so no other writer ever sees
it, and takes it away at the end: two statements per batch, no savepoint. Either everything commits
(rows and their index) or nothing. Not nested. Single inserts (the store's appends, the
ORM) keep the per-row trigger. PostgreSQL keeps its GIN expression index, which the
database maintains itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

from django.db import connection, transaction

from sessions_app.models import Event

__all__ = ["DEFERRED_TABLE", "indexed_in_one_statement"]

DEFERRED_TABLE = "sessions_app_event_fts_deferred"
"""SQLite: while it holds a row (the highest event id before a batch), the FTS and triage
insert triggers do nothing; deleting the row indexes and tallies the events above that id."""


@contextmanager
def indexed_in_one_statement() -> Iterator[None]:
    """Events inserted inside are indexed by one statement at the end (SQLite; module
    docstring); elsewhere it does nothing."""
    if connection.vendor != "sqlite":
        yield
        return
    table = connection.ops.quote_name(Event._meta.db_table)
    # Inside the caller's transaction when there is one (no savepoint), else in one.
    outer = nullcontext() if connection.in_atomic_block else transaction.atomic()
    with outer, connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {DEFERRED_TABLE} (id) SELECT coalesce(max(id), 0) FROM {table}"
        )
        try:
            yield
        finally:
            # Also when the INSERT failed: the rows that went in are indexed, and the
            # caller's rollback takes both away.
            cursor.execute(f"DELETE FROM {DEFERRED_TABLE}")
