"""The one writer for parsed sessions (used by every importer and by the demo data)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any, cast

import orjson
from django.conf import settings
from django.db import connection, models, transaction

from agentops.runtime.model import Event as RuntimeEvent
from agentops.runtime.session import Turn as RuntimeTurn
from sessions_app.ingest.exported import exported_ids, write_tool_outcomes
from sessions_app.ingest.model_name import model_named
from sessions_app.ingest.parsed import ParsedEvent, ParsedSession, ParsedTurn
from sessions_app.ingest.redaction import redact_path
from sessions_app.models import Event, Session, Turn
from sessions_app.search.batch_index import indexed_in_one_statement
from sessions_app.signals import parsed_session_written
from sessions_app.store import (
    EVENT_INSERT_COLUMNS,
    TURN_COLUMNS,
    orphan_count,
    protocol_events,
    refresh_resume_status,
    resume_status,
    turn_from_record,
)
from sessions_app.store.page_facts import Marks, protocol_marks, token_sums, write_marks

# Rows per INSERT statement. Django still caps this at the backend's limit on query
# parameters (SQLite: 32766 on current builds), so large batches are safe everywhere.
BATCH_SIZE = 1000


# orjson options for JSON columns on SQLite: types the standard encoder would refuse
# (datetimes, dataclasses, subclasses of str/int/dict/list) go to `default`, which is
# absent, so they raise and take Django's own path with its own result or error.
_ORJSON_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _converter(field: models.Field[Any, Any], last: list[Any]) -> Callable[[Any], Any] | None:
    """A fast value -> database parameter function for one column (None: pass as is).

    Uses the backend's own adapters (`connection.ops`), so SQLite and PostgreSQL get the
    values Django's ORM would send (JSON text / Jsonb, UTC datetimes), with two shortcuts
    on SQLite that give the same stored values: JSON text encoded by orjson (compact
    separators; anything orjson refuses goes through Django's encoder), and a UTC datetime
    written as Django writes it (naive UTC, `str()` form) when the connection's time zone
    is UTC.
    """
    ops = connection.ops
    sqlite = connection.vendor == "sqlite"
    if isinstance(field, models.JSONField):
        encoder = field.encoder
        # Most events have empty lists/objects here: adapt those once.
        empty_list = ops.adapt_json_value([], encoder)
        empty_dict = ops.adapt_json_value({}, encoder)
        fast_text = sqlite and encoder is None

        def json_value(value: Any) -> Any:
            if value is None:
                return None
            if not value:
                if value == []:
                    return empty_list
                if value == {}:
                    return empty_dict
            if fast_text:
                try:
                    return orjson.dumps(value, option=_ORJSON_OPTIONS).decode()
                except orjson.JSONEncodeError:
                    pass
            return ops.adapt_json_value(value, encoder)

        return json_value
    if isinstance(field, models.DateTimeField):
        adapt = ops.adapt_datetimefield_value
        utc_naive = sqlite and settings.USE_TZ and connection.timezone_name == "UTC"

        # Converted once: an instant the column had in the row before (a batch's one
        # write time), or the one the row's previous datetime column had (created_at and
        # updated_at are usually the same instant: `last` is shared by the datetime
        # columns of one insert).
        mine: list[Any] = [object(), None]

        def datetime_value(value: Any) -> Any:
            if value is mine[0]:
                return mine[1]
            if value is last[0]:
                converted = last[1]
            elif value is None:
                return None
            else:
                converted = (
                    value.isoformat(" ")[:-6]  # str() of the naive value, "+00:00" cut
                    if utc_naive and value.tzinfo is UTC
                    else adapt(value)
                )
                last[0], last[1] = value, converted
            mine[0], mine[1] = value, converted
            return converted

        return datetime_value
    return None


@dataclass(frozen=True, slots=True)
class PreparedRows:
    """An INSERT statement and its rows' parameters, adapted for the database
    (`prepare_rows`), ready for `execute_rows`."""

    sql: str
    params: list[list[Any]]
    #: Rows of `Event`: a batch of them is indexed for search in one statement.
    events: bool = False


def prepare_rows(
    model: type[models.Model], columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> PreparedRows:
    """The INSERT of `rows` into `model`'s table, every value adapted (no query).

    `columns` names fields by attname; each row holds their values in that order. Fields
    not named get their default (`Field.get_default()`: the declared default, else
    None/"" as the ORM would insert); auto primary keys are left to the database, so ids
    follow the order of `rows`. The ORM's per-value compilation costs more than the
    database itself for large imports, so this skips it: JSON and datetime values go
    through the backend adapters (`_converter`), other values are passed as they are.
    Adapting is most of an import's write cost, so importers do it before they take the
    database's write lock (SQLite: one writer at a time). Raises KeyError for an unknown
    column name.
    """
    by_name = {
        f.attname: f
        for f in model._meta.concrete_fields
        if not (f.primary_key and isinstance(f, models.AutoField | models.BigAutoField))
    }
    fields = [by_name[name] for name in columns]
    named = set(columns)
    rest = [f for name, f in by_name.items() if name not in named]
    rest_values = [f.get_default() for f in rest]
    last_datetime: list[Any] = [object(), None]
    converters = [
        (index, convert)
        for index, f in enumerate(fields)
        if (convert := _converter(f, last_datetime)) is not None
    ]
    # Defaults are adapted once: every row gets the same values for those columns.
    for index, f in enumerate(rest):
        convert = _converter(f, [object(), None])
        if convert is not None:
            rest_values[index] = convert(rest_values[index])
    qn = connection.ops.quote_name
    sql = "INSERT INTO {} ({}) VALUES ({})".format(
        qn(str(model._meta.db_table)),
        ", ".join(qn(str(f.column)) for f in [*fields, *rest]),
        ", ".join(["%s"] * (len(fields) + len(rest))),
    )
    params: list[list[Any]] = []
    for row in rows:
        values = [*row, *rest_values]
        for index, convert in converters:
            values[index] = convert(values[index])
        params.append(values)
    return PreparedRows(sql, params, events=model is Event)


def execute_rows(prepared: PreparedRows) -> int:
    """Run a `prepare_rows` INSERT with `executemany` on the caller's connection and
    transaction; returns the number of rows. No signals are sent, no validation done."""
    params = prepared.params
    batch = prepared.events and len(params) > 1
    with indexed_in_one_statement() if batch else nullcontext(), connection.cursor() as cursor:
        for start in range(0, len(params), BATCH_SIZE * 10):
            cursor.executemany(prepared.sql, params[start : start + BATCH_SIZE * 10])
    return len(params)


def insert_rows(
    model: type[models.Model], columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> int:
    """INSERT `rows` into `model`'s table with `executemany` (`prepare_rows`, then
    `execute_rows`); returns the number of rows."""
    return execute_rows(prepare_rows(model, columns, rows))


def delete_sessions(session_ids: list[str]) -> int:
    """Delete these sessions with their turns, events and todo lists; returns how many.

    Turns, events and todo rows go by `ON DELETE CASCADE` semantics through Django's
    collector, which deletes the dependent rows with one query per table.
    """
    if not session_ids:
        return 0
    _deleted, per_model = Session.objects.filter(id__in=session_ids).delete()
    return per_model.get(Session._meta.label, 0)


def stored_path(path: str) -> str:
    """`path` as the `Session.source_path` and `ImportedFile.path` columns hold it:
    credentials redacted (`redaction.redact_path`), then cut to the column's length."""
    return redact_path(path)[: cast(int, Session._meta.get_field("source_path").max_length)]


def stored_source_path(parsed: ParsedSession, file_path: str) -> str:
    """The source path `write_parsed_session` stores for `parsed` read from `file_path`:
    the path an agentops export carries (`parsed.source_path`), else the file's."""
    return stored_path(parsed.source_path if parsed.source_path is not None else file_path)


def parsed_facts(parsed: ParsedSession) -> tuple[list[RuntimeTurn], list[RuntimeEvent]]:
    """The turns (timeline order) and active events of a parsed session as runtime values,
    as `refresh_resume_status` reads them back once written (positions for event ids)."""
    sid = parsed.id
    turns = sorted(
        (turn_from_record(t, sid) for t in parsed.turns), key=lambda t: (t.started_at, t.id)
    )
    events = protocol_events(
        sid,
        (
            (
                position,
                e.turn_id,
                e.role,
                e.tool_calls,
                e.tool_response,
                e.tool_call_id[:255],
                e.author[:255],
            )
            for position, e in enumerate(parsed.events, start=1)
            if e.deleted_at is None and e.archived_at is None
        ),
    )
    return turns, events


def parsed_resume_status(parsed: ParsedSession) -> tuple[int, bool]:
    """(open tool-protocol issue count, cannot_resume) of a parsed session, computed in
    memory with `sessions_app.store.resume_status` (docs/runtime.md §4-5), before it is written.

    Equal to what `refresh_resume_status` reads back after `write_parsed_session`: turns
    in timeline order (started_at, id), active events (not deleted, not archived) in list
    order, which is the order of the ids the database assigns; their positions stand in
    for those ids. Recorded tool outcomes are not applied (sessions that carry them are
    refreshed from the database after their outcomes are written). Raises ValueError /
    pydantic.ValidationError for a turn status or event shape the runtime contract
    (docs/runtime.md) does not allow.
    """
    turns, events = parsed_facts(parsed)
    return resume_status(turns, events)


def turn_rows(sid: str, turns: Iterable[ParsedTurn]) -> Iterator[tuple[Any, ...]]:
    """Row values of parsed turns of session `sid`, in `TURN_COLUMNS` (declaration) order."""
    for t in turns:
        yield (
            t.id,
            sid,
            t.status,
            t.reason,
            t.failure_code,
            t.failure_stage,
            t.failure_message,
            t.status_note,
            t.started_at,
            t.finished_at,
        )


def event_rows(sid: str, events: Iterable[ParsedEvent]) -> Iterator[tuple[Any, ...]]:
    """Row values of parsed events of session `sid`, in `EVENT_INSERT_COLUMNS` order."""
    for e in events:
        yield (
            sid,
            e.turn_id,
            e.source_id[:255],
            e.author[:255],
            e.role,
            e.text,
            e.parts,
            e.reasoning,
            e.tool_calls,
            e.tool_response,
            e.tool_call_id[:255],
            e.pending_call_ids,
            e.finish_reason,
            e.usage,
            e.state_delta,
            e.raw,
            e.created_at,
            e.updated_at or e.created_at,
            e.deleted_at,
            e.archived_at,
        )


@dataclass(frozen=True, slots=True)
class PreparedSession:
    """A parsed session ready to write (`prepare_parsed_session`): its resume status and
    its turn and event INSERTs, adapted; `write_prepared_session` writes it."""

    parsed: ParsedSession
    source_path: str
    issue_count: int
    cannot_resume: bool
    orphan_count: int
    turns: PreparedRows
    events: PreparedRows
    marks: dict[int, Marks] = field(default_factory=dict)
    """The inspector's marks (`store.page_facts`) by position of the event (1-based)."""


def prepare_parsed_session(parsed: ParsedSession, source_path: str) -> PreparedSession:
    """Everything `write_parsed_session` computes before it writes: the resume status
    (`parsed_resume_status` rules) and the adapted turn and event rows. No query, so an
    importer runs it before it takes the write lock."""
    (issue_count, cannot_resume, orphans), marks = _status_and_marks(parsed)
    sid = parsed.id
    return PreparedSession(
        parsed=parsed,
        source_path=source_path,
        issue_count=issue_count,
        cannot_resume=cannot_resume,
        orphan_count=orphans,
        turns=prepare_rows(Turn, TURN_COLUMNS, turn_rows(sid, parsed.turns)),
        events=prepare_rows(Event, EVENT_INSERT_COLUMNS, event_rows(sid, parsed.events)),
        marks=marks,
    )


def write_parsed_session(parsed: ParsedSession, source_path: str) -> Session:
    """Insert `parsed` (session, turns, events, todo list) with bulk inserts; return it.

    `prepare_parsed_session`, then `write_prepared_session` (see both).
    """
    return write_prepared_session(prepare_parsed_session(parsed, source_path))


def write_prepared_session(prepared: PreparedSession) -> Session:
    """Insert a prepared session (session, turns, events, todo list); return it.

    Runs inside the caller's transaction (`transaction.atomic` is nested as a savepoint
    when one is open), so an import of one file lands whole or not at all. The session
    must not exist yet (callers delete a previous version first: `delete_sessions`);
    raises `django.db.IntegrityError` otherwise. Event ids are assigned by the database in
    list order, so id order is conversation order (docs/runtime.md §1). The `todos` state key is
    never written: `TodoList`/`TodoItem` rows are the one source of truth (docs/runtime.md §7).
    The session's resume status (`protocol_issue_count`, `cannot_resume`) is stored with
    it: `parsed_resume_status`, or `refresh_resume_status` once recorded tool outcomes
    (an agentops export) are written.
    """
    with transaction.atomic():
        status = (prepared.issue_count, prepared.cannot_resume, prepared.orphan_count)
        session = insert_session_row(prepared.parsed, prepared.source_path, status)
        execute_rows(prepared.turns)
        execute_rows(prepared.events)
        finish_session(prepared.parsed, session, prepared.marks)
    return session


def stored_status(parsed: ParsedSession) -> tuple[int, bool, int]:
    """(protocol issue count, cannot_resume, orphan result count) stored with `parsed`
    (`prepare_parsed_session`'s rules). No query."""
    return _status_and_marks(parsed)[0]


def _status_and_marks(parsed: ParsedSession) -> tuple[tuple[int, bool, int], dict[int, Marks]]:
    """`stored_status` and the inspector's marks by event position (`store.page_facts`)."""
    # Recorded outcomes change the status: those sessions are refreshed once written.
    turns, facts = parsed_facts(parsed)
    issue_count, cannot_resume = (0, False) if parsed.tool_outcomes else resume_status(turns, facts)
    return (issue_count, cannot_resume, orphan_count(facts)), protocol_marks(facts)


def insert_session_row(
    parsed: ParsedSession, source_path: str, status: tuple[int, bool, int]
) -> Session:
    """Insert the session row of `parsed` with `status` (`stored_status`); return it."""
    issue_count, cannot_resume, orphans = status
    return Session.objects.create(
        id=parsed.id,
        app_name=parsed.app_name,
        user_id=parsed.user_id,
        title=parsed.title,
        state={k: v for k, v in parsed.state.items() if k != "todos"},
        source_format=parsed.source_format,
        source_path=stored_source_path(parsed, source_path),
        created_at=parsed.created_at,
        updated_at=parsed.updated_at,
        protocol_issue_count=issue_count,
        cannot_resume=cannot_resume,
        orphan_result_count=orphans,
        parent_session_id=parsed.parent_session_id,
        parent_call_id=parsed.parent_call_id,
        model=parsed.model or model_named(e.raw for e in reversed(parsed.events)),
    )


def finish_session(
    parsed: ParsedSession, session: Session, marks: dict[int, Marks] | None = None
) -> None:
    """What follows a session's events: its kept page facts (`marks`: by event position,
    worked out here when None), its todo list (the `parsed_session_written` signal), an
    export's recorded tool outcomes and then its resume status in full."""
    if marks is None:
        marks = protocol_marks(parsed_facts(parsed)[1])
    _write_page_facts(parsed, marks)
    event_ids, user_ids = (
        exported_ids(parsed, session) if parsed.todo_changes or parsed.tool_outcomes else ({}, {})
    )
    # The todo list, its items and audit rows (todos_app), in this transaction.
    parsed_session_written.send(
        sender=Session, session=session, parsed=parsed, event_ids=event_ids, user_ids=user_ids
    )
    if parsed.tool_outcomes:
        write_tool_outcomes(parsed, session, event_ids, user_ids)
        refresh_resume_status(session.id)


def _write_page_facts(parsed: ParsedSession, marks: dict[int, Marks]) -> None:
    """The kept page facts of a session just written (`store.page_facts`): its flagged
    events' marks (one query for the ids when any), its token totals and legacy flag
    (one UPDATE when an event carries usage or names no turn record)."""
    sid = parsed.id
    if marks:
        ids = list(Event.objects.filter(session_id=sid).order_by("id").values_list("id", flat=True))
        write_marks({ids[position - 1]: mark for position, mark in marks.items()})
    turn_ids = {t.id for t in parsed.turns}
    legacy = any(
        e.turn_id not in turn_ids
        for e in parsed.events
        if e.deleted_at is None and e.archived_at is None
    )
    if legacy or any(e.usage is not None for e in parsed.events):
        Session.objects.filter(pk=sid).update(has_legacy_events=legacy, **token_sums(sid))
