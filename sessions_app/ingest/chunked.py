"""Writing an imported file in steps, in transactions that hold SQLite's write lock for a
bounded time.

SQLite has one writer at a time, and a transaction holds the lock from BEGIN IMMEDIATE
to COMMIT. A dashboard write waits for it up to the busy timeout
(``SQLITE_TIMEOUT_SECONDS``, then 503). So a file's writes are cut into steps (the
replacement, then per session: its row and turns, its events a batch of
`writer.BATCH_SIZE` rows at a time, its todo list; then the file's record), each batch
adapted just before it is inserted (no session's rows are held whole), and
`write_in_bounded_transactions` runs them:

- on SQLite, outside any transaction, a transaction is committed once it has held the
  lock for ``AGENTOPS_IMPORT_LOCK_MS``; the import then sleeps `YIELD_SECONDS` (longer
  than SQLite's longest busy-wait step, 100 ms) so a waiting writer gets the lock, and
  goes on. A file that fits in that time lands in one transaction as before; a larger
  one appears session by session, batch by batch, and if a later step fails, the sessions
  it wrote are deleted (the sessions it replaced are not restored);
- on PostgreSQL (writers do not block each other there) and inside a caller's
  transaction: one transaction.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

from django.conf import settings
from django.db import connection, models, transaction

from sessions_app.ingest.parsed import ParsedSession
from sessions_app.ingest.writer import (
    BATCH_SIZE,
    event_rows,
    execute_rows,
    finish_session,
    insert_session_row,
    prepare_rows,
    turn_rows,
)
from sessions_app.models import Event, Turn
from sessions_app.store import EVENT_INSERT_COLUMNS, TURN_COLUMNS

__all__ = ["YIELD_SECONDS", "session_steps", "write_in_bounded_transactions", "write_in_steps"]

#: How long an import lets other writers have SQLite's lock between its transactions
#: (longer than the 100 ms SQLite's busy handler sleeps at most between two tries).
YIELD_SECONDS = 0.11


def write_in_bounded_transactions(steps: Iterator[None], undo: Callable[[], object]) -> int:
    """Run `steps` (each `next()` does one step's writes) to the end; returns how many
    transactions committed. See the module doc for when a transaction is committed
    early. If a step raises after an earlier transaction committed, `undo` runs in a
    transaction of its own and the error is raised again."""
    bounded = connection.vendor == "sqlite" and not connection.in_atomic_block
    limit = settings.AGENTOPS_IMPORT_LOCK_MS / 1000
    committed = 0
    try:
        while True:
            with transaction.atomic():
                started = time.monotonic()
                for _ in steps:
                    if bounded and time.monotonic() - started >= limit:
                        break
                else:
                    return committed + 1
            committed += 1
            time.sleep(YIELD_SECONDS)
    except BaseException:
        if committed:
            with transaction.atomic():
                undo()
        raise


def write_in_steps(steps: Iterator[Callable[[], object]], undo: Callable[[], object]) -> int:
    """Run each write `steps` hands on (a streamed import, `ingest.streaming`: getting
    the next one parses, adapts and reads, outside any transaction on SQLite); returns
    how many transactions committed. On SQLite, outside any transaction, each write is a
    transaction of its own: the write lock is held for one batch's INSERTs at a time and
    is free while the next batch is parsed, so no pause is needed for other writers. On
    PostgreSQL and inside a caller's transaction: one transaction. If a write raises after
    an earlier one committed, `undo` runs in a transaction of its own and the error is
    raised again."""
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        with transaction.atomic():
            for write in steps:
                write()
        return 1
    committed = 0
    try:
        for write in steps:
            with transaction.atomic():
                write()
            committed += 1
    except BaseException:
        if committed:
            with transaction.atomic():
                undo()
        raise
    return committed


def _insert_batches(
    model: type[models.Model], columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> Iterator[None]:
    rows = iter(rows)
    while batch := list(islice(rows, BATCH_SIZE)):
        execute_rows(prepare_rows(model, columns, batch))
        yield


def session_steps(
    parsed: ParsedSession, source_path: str, status: tuple[int, bool, int]
) -> Iterator[None]:
    """The writes of one parsed session as steps (`writer.write_prepared_session`'s, with
    the turns and events inserted a batch at a time). `status`: `writer.stored_status`
    of `parsed`, worked out before any lock is taken."""
    session = insert_session_row(parsed, source_path, status)
    yield
    sid = parsed.id
    yield from _insert_batches(Turn, TURN_COLUMNS, turn_rows(sid, parsed.turns))
    yield from _insert_batches(Event, EVENT_INSERT_COLUMNS, event_rows(sid, parsed.events))
    finish_session(parsed, session)
    yield
