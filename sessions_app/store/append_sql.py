"""The hot append path in SQL: an event append's statements without the ORM, and the
direct append that runs them on the event loop's own SQLite connection (no thread hop).

Most appends are an UPDATE of the session row (its ``updated_at``; on PostgreSQL it also
locks the row so a session's event ids grow in commit order) and an INSERT of the event,
in one transaction (docs/runtime.md §2). Built through the ORM these cost several times
what the database spends on them (compiling the SQL, preparing each value), so
`AppendStatements` builds the SQL once from the models' metadata: the INSERT names every
column of `columns.EVENT_INSERT_COLUMNS` and the marks (a column added to `Event` flows
through), values prepared as each field's `get_db_prep_save` does, model defaults.

`direct_append` runs them on SQLite without leaving the event loop's thread: one
connection of its own per thread (same file, same pragmas), BEGIN IMMEDIATE that never
waits (``busy_timeout=0``). It stores an event (not a compaction) of a turn record of
the session whose state delta sets no todo list (the todo rows are another app's),
merging the delta into the session's state as the regular path does: a plain event (no
tool calls, not a tool result) leaves the resume status and the kept marks as they are;
calls and results of a running turn keep the resume status by the local rules
(`resume_delta`; a tool result's group recounted by the one `tool_result_counts`) and
the marks by theirs (`page_facts.opening_marks` in the INSERT, `page_facts.result_marks`);
usage adds to the token totals (the ORM's UPDATE compiled once,
`page_facts.tokens_added_sql`). The regular path runs the same statements in a worker
thread (PostgreSQL). For anything else (another writer holds the lock, the session is
not found, a shape the local rules do not cover, a database that is not an SQLite file)
it stores nothing and answers None: the caller takes the regular path (a worker thread,
Django's busy timeout), which also gives the specific errors. A local write blocks the
loop for about as long as the thread hop it saves would have.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from dataclasses import fields as dataclass_fields
from datetime import datetime
from functools import cache, partial
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field

from agentops.runtime.model import Event, Role
from agentops.runtime.session import TurnStatus, persisted_state
from agentops.runtime.todos import TODOS_STATE_KEY
from sessions_app import models
from sessions_app.ingest.redaction import redact_event_fields
from sessions_app.projector import COMPACTION_AUTHOR, RecordedOutcome
from sessions_app.store.columns import EVENT_DERIVED_COLUMNS, EVENT_INSERT_COLUMNS
from sessions_app.store.page_facts import (
    opening_marks,
    result_marks,
    tokens_added_params,
    tokens_added_sql,
)
from sessions_app.store.resume_delta import GROUP_COLUMNS, tool_result_counts
from sessions_app.store.rows import event_from_values, row_fields_from_event

__all__ = [
    "AppendStatements",
    "append_in_transaction",
    "append_kind",
    "append_statements",
    "direct_append",
    "fields_to_store",
    "run_insert",
    "sql_kind",
    "stored_fields",
]

#: What an append does to the resume status (`resume_delta.status_after_append`).
PLAIN, OPENS_GROUP, TOOL_RESULT, OTHER = "plain", "opens_group", "tool_result", "other"


def append_kind(event: Event) -> str:
    """`PLAIN`: leaves the resume status as it is (no query); `OPENS_GROUP`: an assistant
    event with tool calls (one issue more while its turn runs); `TOOL_RESULT`: a tool
    result of a turn (its group is recounted while the turn runs); `OTHER`: a compaction,
    or a call or result outside any turn (the full recomputation)."""
    if event.author == COMPACTION_AUTHOR:
        return OTHER
    role = event.content.role
    if role is Role.TOOL:
        return TOOL_RESULT if event.turn_id else OTHER
    if role is Role.ASSISTANT and event.content.tool_calls:
        return OPENS_GROUP if event.turn_id else OTHER
    return PLAIN


def stored_fields(event: Event) -> tuple[dict[str, Any], Event]:
    """The column values `event` is stored with (`row_fields_from_event`), redacted when
    AGENTOPS_REDACT_RUNTIME_EVENTS is on, and the runtime event as stored: the copy the
    runtime keeps (and shows live) is the one a later read gives."""
    fields = row_fields_from_event(event)
    if settings.AGENTOPS_REDACT_RUNTIME_EVENTS:
        redacted = redact_event_fields(fields)
        if redacted is not fields:
            values = {**redacted, "id": 0, "session_id": event.session_id}
            return redacted, event_from_values({**values, "created_at": None, "updated_at": None})
    return fields, event


def fields_to_store(event: Event) -> tuple[dict[str, Any], Event]:
    """`stored_fields`, the state delta without ``temp:`` keys (they live only in the
    returned copy, docs/runtime.md §2)."""
    fields, stored = stored_fields(event)
    return {**fields, "state_delta": dict(persisted_state(fields["state_delta"]))}, stored


@dataclass(frozen=True)
class AppendStatements:
    """An append's SQL for one database vendor (``%s`` placeholders, or ``?`` on the
    direct SQLite connection) and the value preparation of the INSERT's columns."""

    insert: str
    touch: str
    touches: dict[tuple[str, bool], str]
    """{(`append_kind`, merges the state delta): the append's UPDATE of the session row}:
    `touch` that also checks the event's turn (`PLAIN`: a record of the session; else
    running) and for `OPENS_GROUP` counts its issue; merging the delta in the same
    statement where the database can (PostgreSQL's ``jsonb ||``)."""
    group: str
    write_marks: str
    count_and_mark: str | None
    """`count_changes` and `write_marks` in one statement (PostgreSQL: a data-modifying
    CTE, one round trip less); None where the database has none (SQLite, local)."""
    read_state: str
    write_state: str
    count_changes: str
    tokens_added: str
    tokens_template: tuple[Any, ...]
    returning: bool
    columns: tuple[str, ...]
    prepare: tuple[Callable[[Any], Any], ...]
    prepare_state: Callable[[Any], Any]
    prepare_marks: tuple[Callable[[Any], Any], Callable[[Any], Any]]
    defaults: tuple[Callable[[], Any], ...]

    def prepare_time(self, now: datetime) -> Any:
        """`now` as the database stores a timestamp column."""
        return self.prepare[self.columns.index("updated_at")](now)

    def insert_params(self, session_id: str, now: datetime, fields: dict[str, Any]) -> list[Any]:
        """The INSERT's parameters: `fields` (`rows.row_fields_from_event`, as stored),
        the session, `now` for both timestamps, model defaults for the rest."""
        given = {**fields, "session_id": session_id, "created_at": now, "updated_at": now}
        params = []
        for name, prepare, default in zip(self.columns, self.prepare, self.defaults, strict=True):
            params.append(prepare(given[name] if name in given else default()))
        return params

    def with_qmarks(self) -> AppendStatements:
        """The same statements with ``?`` placeholders (the sqlite3 module's own style)."""
        changes: dict[str, Any] = {}
        for item in dataclass_fields(self):
            value = getattr(self, item.name)
            if isinstance(value, str):
                changes[item.name] = value.replace("%s", "?").replace("%%", "%")
            elif isinstance(value, dict):
                changes[item.name] = {key: sql.replace("%s", "?") for key, sql in value.items()}
        return replace(self, **changes)


def _preparer(field: Field[Any, Any], connection: BaseDatabaseWrapper) -> Callable[[Any], Any]:
    """`field.get_db_prep_save` on `connection`, cut short where it gives the value back
    as it is (a str of a text column, a bool, None) or only adapts it (JSON); the tests
    check both agree on every column of the bench's history."""
    target: Any = getattr(field, "target_field", field)  # a foreign key: its column's
    slow = partial(field.get_db_prep_save, connection=connection)
    kind = target.get_internal_type()
    if kind in ("CharField", "TextField"):
        return lambda value: value if type(value) is str else slow(value)
    if kind == "BooleanField":
        return lambda value: value if type(value) is bool else slow(value)
    if kind == "JSONField":
        adapt, encoder = connection.ops.adapt_json_value, getattr(field, "encoder", None)
        return lambda value: None if value is None else adapt(value, encoder)
    if kind == "DateTimeField":
        return lambda value: None if value is None else slow(value)
    return slow


@cache
def append_statements(alias: str = "default") -> AppendStatements:
    """The statements for database `alias` (built once; its vendor decides quoting and
    RETURNING). Never opens a connection."""
    connection = connections[alias]

    def quote(name: str | None) -> str:
        return connection.ops.quote_name(str(name))

    event_meta, session_meta = models.Event._meta, models.Session._meta
    turn_meta = models.Turn._meta
    by_attname = {field.attname: field for field in event_meta.concrete_fields}
    columns = (*EVENT_INSERT_COLUMNS, *EVENT_DERIVED_COLUMNS)  # marks: `opening_marks`
    fields = [by_attname[name] for name in columns]
    column_sql = ", ".join(quote(field.column) for field in fields)
    marks = ", ".join(["%s"] * len(fields))
    returning = connection.features.can_return_columns_from_insert
    insert = f"INSERT INTO {quote(event_meta.db_table)} ({column_sql}) VALUES ({marks})"
    if returning:
        insert += f" RETURNING {quote(event_meta.pk.column)}"
    session, pk = quote(session_meta.db_table), quote(session_meta.pk.column)
    updated, issues = quote("updated_at"), quote("protocol_issue_count")
    touch = f"UPDATE {session} SET {updated} = %s WHERE {pk} = %s"
    state = quote("state")
    turn = (
        f"SELECT 1 FROM {quote(turn_meta.db_table)}"
        f" WHERE {quote(turn_meta.pk.column)} = %s AND {quote('session_id')} = %s"
    )
    running = f"{turn} AND {quote('status')} = '{TurnStatus.RUNNING.value}'"
    merges = connection.vendor == "postgresql"  # jsonb: || is {**state, **delta}
    touches = {}
    for kind, check in ((PLAIN, turn), (OPENS_GROUP, running), (TOOL_RESULT, running)):
        for delta in (False, True) if merges else (False,):
            sets = f"{updated} = %s"
            if kind == OPENS_GROUP:
                sets += f", {issues} = {issues} + 1"
            if delta:
                sets += f", {state} = {state} || %s"
            touches[kind, delta] = (
                f"UPDATE {session} SET {sets} WHERE {pk} = %s AND EXISTS ({check})"
            )
    event_table, event_pk = quote(event_meta.db_table), quote(event_meta.pk.column)
    active = (
        f"{quote('session_id')} = %s AND {quote('deleted_at')} IS NULL"
        f" AND {quote('archived_at')} IS NULL"
    )
    anchor = (
        f"SELECT {event_pk} FROM {event_table} WHERE {active} AND {event_pk} < %s"
        f" AND NOT ({quote('role')} = '{Role.TOOL.value}') ORDER BY {event_pk} DESC LIMIT 1"
    )
    unanswered, orphan = quote("unanswered_calls"), quote("orphan_result")
    outcome = quote(models.ToolOutcome._meta.db_table)
    has_outcome = (
        f"EXISTS (SELECT 1 FROM {outcome}"
        f" WHERE {outcome}.{quote('event_id')} = {event_table}.{event_pk})"
    )
    group = (
        f"SELECT {', '.join(quote(name) for name in GROUP_COLUMNS)}, {unanswered}, {has_outcome}"
        f" FROM {event_table}"
        f" WHERE {active} AND {event_pk} <= %s AND {event_pk} >= ({anchor}) ORDER BY {event_pk}"
    )
    write_marks = f"UPDATE {event_table} SET {unanswered} = %s, {orphan} = %s WHERE {event_pk} = %s"
    orphans = quote("orphan_result_count")
    count_changes = (
        f"UPDATE {session} SET {issues} = {issues} + %s, {orphans} = {orphans} + %s WHERE {pk} = %s"
    )
    count_and_mark = None
    if merges:
        count_and_mark = f"WITH marked AS ({write_marks}) {count_changes}"
    tokens_added, tokens_template = tokens_added_sql(alias)
    read_state = f"SELECT {state} FROM {session} WHERE {pk} = %s"
    write_state = f"UPDATE {session} SET {state} = %s WHERE {pk} = %s"
    return AppendStatements(
        insert=insert,
        touch=touch,
        touches=touches,
        group=group,
        write_marks=write_marks,
        count_and_mark=count_and_mark,
        read_state=read_state,
        write_state=write_state,
        count_changes=count_changes,
        tokens_added=tokens_added,
        tokens_template=tokens_template,
        returning=returning,
        columns=columns,
        prepare=tuple(_preparer(field, connection) for field in fields),
        prepare_state=_preparer(session_meta.get_field("state"), connection),
        prepare_marks=(
            _preparer(by_attname["unanswered_calls"], connection),
            _preparer(by_attname["orphan_result"], connection),
        ),
        defaults=tuple(field.get_default for field in fields),
    )


def run_insert(
    cursor: Any, statements: AppendStatements, session_id: str, now: datetime,
    fields: dict[str, Any],
) -> int:  # fmt: skip
    """Run the INSERT of an event (`fields` as stored, with its `opening_marks`) on
    `cursor`; the new event's id."""
    marked = {**fields, **opening_marks(fields)}
    cursor.execute(statements.insert, statements.insert_params(session_id, now, marked))
    if statements.returning:
        return int(cursor.fetchone()[0])
    return int(cursor.lastrowid)


# -- the direct path (SQLite) --------------------------------------------------------


class _Direct(threading.local):
    """This thread's own SQLite connection per database file."""

    def __init__(self) -> None:
        self.connections: dict[str, sqlite3.Connection] = {}


_direct = _Direct()


def _direct_target(alias: str) -> tuple[str, Sequence[str]] | None:
    """(file, pragmas) when `alias` is an SQLite file the direct path may write; else None."""
    settings_dict = connections.settings[alias]
    if settings_dict["ENGINE"] != "django.db.backends.sqlite3":
        return None
    name = str(settings_dict["NAME"])
    if not name or name == ":memory:" or name.startswith("file:"):
        return None
    pragmas = str(settings_dict.get("OPTIONS", {}).get("init_command", "")).split(";")
    return name, [pragma.strip() for pragma in pragmas if pragma.strip()]


def _connection(name: str, pragmas: Sequence[str]) -> sqlite3.Connection:
    conn = _direct.connections.get(name)
    if conn is None:
        conn = sqlite3.connect(name, isolation_level=None, timeout=0)
        conn.execute("PRAGMA foreign_keys = ON")
        for pragma in pragmas:
            conn.execute(pragma)
        conn.execute("PRAGMA busy_timeout = 0")  # never wait on the loop's thread
        _direct.connections[name] = conn
    return conn


def direct_append(
    session_id: str, event: Event, fields: dict[str, Any], now: Callable[[], datetime],
    alias: str = "default",
) -> tuple[int, datetime] | None:  # fmt: skip
    """Store `event` (its stored column values `fields`) in one committed
    transaction on this thread's own SQLite connection: (its id, its timestamp), or None
    when it must take the regular path (see the module; nothing is stored then)."""
    kind = sql_kind(event, fields)
    target = _direct_target(alias) if kind != OTHER else None
    if target is None:
        return None
    statements = _qmark_statements(alias)
    conn = _connection(*target)
    cursor = conn.cursor()
    try:
        cursor.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError:  # another writer holds the lock: let the caller wait
        return None
    try:
        stored = append_in_transaction(cursor, statements, session_id, event, fields, now, kind)
        cursor.execute("COMMIT" if stored is not None else "ROLLBACK")
    except BaseException:
        if conn.in_transaction:
            conn.rollback()
        raise
    return stored


def sql_kind(event: Event, fields: dict[str, Any]) -> str:
    """`append_kind`, and `OTHER` for a state delta that sets the todo list (its rows
    are kept by todos_app's signals: the ORM path)."""
    return OTHER if TODOS_STATE_KEY in fields["state_delta"] else append_kind(event)


def append_in_transaction(
    cursor: Any, statements: AppendStatements, session_id: str, event: Event,
    fields: dict[str, Any], now: Callable[[], datetime], kind: str,
) -> tuple[int, datetime] | None:  # fmt: skip
    """An append's statements on `cursor`, inside a transaction the caller holds (and
    commits): (the event's id, its timestamp), or None when the caller must roll back
    and take the ORM path (a shape the local rules do not cover, an unknown session).
    `kind`: `sql_kind` of the event, never `OTHER`."""
    stamp = now()  # under the write lock on SQLite: timestamps grow with ids
    delta = fields["state_delta"]
    in_touch = bool(delta) and (kind, True) in statements.touches
    params = [statements.prepare_time(stamp)]
    if in_touch:
        params.append(statements.prepare_state(delta))
    # The UPDATE checks the session exists and holds the event's turn (a plain event's: a
    # record of the session, else the ORM path keeps `has_legacy_events`; a call's or
    # result's: running, else the projection changes too: the full recomputation's path)
    # and locks the row (PostgreSQL) first: the state below is read under that lock, and
    # event ids grow in commit order.
    params += [session_id, event.turn_id, session_id]
    cursor.execute(statements.touches[kind, in_touch], params)
    if cursor.rowcount != 1:
        return None
    if delta and not in_touch:  # read-modify-write of the state under the lock
        cursor.execute(statements.read_state, (session_id,))
        (state,) = cursor.fetchone()
        state = json.loads(state) if isinstance(state, str) else state
        merged = statements.prepare_state({**state, **delta})
        cursor.execute(statements.write_state, (merged, session_id))
    row_id = run_insert(cursor, statements, session_id, stamp, fields)
    if event.usage is not None:  # the page facts' token totals (`page_facts`)
        added = tokens_added_params(statements.tokens_template, session_id, row_id, row_id)
        cursor.execute(statements.tokens_added, added)
    if kind == TOOL_RESULT:
        cursor.execute(statements.group, (session_id, row_id, session_id, row_id))
        rows = [_decoded(row) for row in cursor.fetchall()]

        def outcomes_of(first_id: int) -> dict[tuple[int, str], RecordedOutcome] | None:
            return None if rows[0][-1] else {}  # recorded outcomes: the ORM path

        counts = tool_result_counts(
            session_id, event.turn_id, row_id, [row[:-2] for row in rows], outcomes_of
        )
        if counts is None:
            return None
        # The page facts: the group's marks (`page_facts.result_marks`; rows[0] is its
        # assistant event, the counts said so).
        first = rows[0]
        anchor = (first[0], first[1], first[3], first[-2])
        prepare_unanswered, prepare_orphan = statements.prepare_marks
        writes = [
            (prepare_unanswered(unanswered), prepare_orphan(orphan), marked_id)
            for marked_id, (unanswered, orphan) in result_marks(anchor, event, row_id).items()
        ]
        if counts:
            changes = (counts.get("protocol_issue_count", 0), counts.get("orphan_result_count", 0))
            if statements.count_and_mark:
                cursor.execute(statements.count_and_mark, (*writes.pop(), *changes, session_id))
            else:
                cursor.execute(statements.count_changes, (*changes, session_id))
        for marks in writes:
            cursor.execute(statements.write_marks, marks)
    return row_id, stamp


def _decoded(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A `GROUP_COLUMNS` row (and its kept unanswered calls, whether it has recorded
    outcomes) as the ORM gives it: JSON columns decoded."""
    values = list(row)
    for index in _JSON_GROUP_COLUMNS:
        if isinstance(values[index], str):
            values[index] = json.loads(values[index])
    return tuple(values)


_JSON_GROUP_COLUMNS = (
    *(i for i, name in enumerate(GROUP_COLUMNS) if name in ("tool_calls", "tool_response")),
    len(GROUP_COLUMNS),  # unanswered_calls
)


@cache
def _qmark_statements(alias: str) -> AppendStatements:
    return append_statements(alias).with_qmarks()
