"""The statements of an API batch (`ledger.ApiSessionService.append_batch`), written once.

A batch of 100 plain events spent about a third of its time building and compiling the
ORM's queries (seven per batch); these are the same statements as SQL text made once per
database (table and column names from the models, `%s` parameters), run on the caller's
connection and transaction. Each says what the ORM query it replaces did; the tests of
the API's batches (tests/api/) hold them to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from django.db import connection

from sessions_app import models
from sessions_app.api.models import EventClientKey


@cache
def _names(vendor: str) -> dict[str, str]:
    quote = connection.ops.quote_name
    return {
        "session": quote(models.Session._meta.db_table),
        "turn": quote(models.Turn._meta.db_table),
        "event": quote(models.Event._meta.db_table),
        "key": quote(EventClientKey._meta.db_table),
    }


def _q() -> dict[str, str]:
    return _names(connection.vendor)


def session_exists(session_id: str) -> bool:
    """Whether the session is stored."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {_q()['session']} WHERE id = %s", [session_id])
        return cursor.fetchone() is not None


def stored_keys(session_id: str, keys: Sequence[str]) -> dict[str, int]:
    """Client key -> event id for those of `keys` (none "") the session stored before.

    Says `client_key <> ''` so that the partial unique index (keys that are not "") is
    used: without it SQLite read every key of the session."""
    if not keys:
        return {}
    marks = ", ".join(["%s"] * len(keys))
    sql = (
        f"SELECT client_key, event_id FROM {_q()['key']} WHERE session_id = %s "
        f"AND client_key IN ({marks}) AND NOT (client_key = %s)"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [session_id, *keys, ""])
        return {str(key): int(event_id) for key, event_id in cursor.fetchall()}


def touch_session(session_id: str, now: datetime, turn_ids: Sequence[str]) -> int:
    """The session row once events of `turn_ids` are appended: `updated_at` = `now`,
    `has_legacy_events` true when it was or when one of them names no turn record of the
    session (`page_facts.legacy_after_append`'s rule, in the same UPDATE, which locks the
    row on PostgreSQL). Returns the rows changed (0: no such session)."""
    names = _q()
    distinct = list(dict.fromkeys(turn_ids))
    unknown = "".join(
        f" OR NOT EXISTS (SELECT 1 FROM {names['turn']} WHERE session_id = %s AND id = %s)"
        for _ in distinct
    )
    sql = (
        f"UPDATE {names['session']} SET updated_at = %s, "
        f"has_legacy_events = (has_legacy_events{unknown}) WHERE id = %s"
    )
    params: list[Any] = [connection.ops.adapt_datetimefield_value(now)]
    for turn_id in distinct:
        params += [session_id, turn_id]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, session_id])
        return int(cursor.rowcount)


def last_event_id(session_id: str) -> int:
    """The session's highest event id (0: none)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT MAX(id) FROM {_q()['event']} WHERE session_id = %s", [session_id])
        row = cursor.fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def event_ids_after(session_id: str, after: int) -> list[int]:
    """The session's event ids above `after`, in order."""
    sql = f"SELECT id FROM {_q()['event']} WHERE session_id = %s AND id > %s ORDER BY id"
    with connection.cursor() as cursor:
        cursor.execute(sql, [session_id, after])
        return [int(row[0]) for row in cursor.fetchall()]
