"""The append's statements as prepared statements on PostgreSQL.

Django's PostgreSQL connection binds parameters on the client and never prepares (so that
it works behind a transaction-pooling PgBouncer), which costs the hot append path about a
quarter of what the server spends on it: every append sends and plans the same few
statements again. `append_cursor` gives the append a cursor of Django's own connection
(same transaction, counted and logged like any query) that binds on the server, and lets
psycopg prepare what it runs ``AGENTOPS_PG_PREPARE_THRESHOLD`` times (5; psycopg's own
default): the other queries of the connection keep Django's client-side cursors, which
never prepare. Set it to 0 to turn this off (a pooler that cannot keep prepared
statements: PgBouncer before 1.21 in transaction mode). Other databases get
``connection.cursor()``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db import connection


@contextmanager
def append_cursor() -> Iterator[Any]:
    """A cursor for the append's statements on the default connection (module docstring)."""
    threshold = settings.AGENTOPS_PG_PREPARE_THRESHOLD
    if connection.vendor != "postgresql" or threshold <= 0:
        with connection.cursor() as cursor:
            yield cursor
        return
    import psycopg

    connection.ensure_connection()
    raw = connection.connection
    raw.prepare_threshold = threshold  # only server-binding cursors (this one) prepare
    binding: Any = psycopg.Cursor(raw)  # the stubs type these as taking a wrapper
    wrapped = (
        connection.make_debug_cursor(binding)
        if connection.queries_logged
        else connection.make_cursor(binding)
    )
    with wrapped:
        yield wrapped
