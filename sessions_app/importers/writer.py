"""The one writer for parsed sessions (used by every importer and by the demo data)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db import connection, models, transaction

from sessions_app.importers.base import ParsedSession
from sessions_app.models import Event, Session, Turn
from todos_app.models import TodoItem, TodoList

# Rows per INSERT statement. Django still caps this at the backend's limit on query
# parameters (SQLite: 32766 on current builds), so large batches are safe everywhere.
BATCH_SIZE = 1000


def _converter(field: models.Field[Any, Any], last: list[Any]) -> Callable[[Any], Any]:
    """A fast value -> database parameter function for one column.

    Uses the backend's own adapters (`connection.ops`), so SQLite and PostgreSQL get the
    same values Django's ORM would send (JSON text / Jsonb, UTC datetimes).
    """
    ops = connection.ops
    if isinstance(field, models.JSONField):
        encoder = field.encoder
        # Most events have empty lists/objects here: adapt those once.
        empty_list = ops.adapt_json_value([], encoder)
        empty_dict = ops.adapt_json_value({}, encoder)

        def json_value(value: Any) -> Any:
            if value is None:
                return None
            if not value:
                if value == []:
                    return empty_list
                if value == {}:
                    return empty_dict
            return ops.adapt_json_value(value, encoder)

        return json_value
    if isinstance(field, models.DateTimeField):
        adapt = ops.adapt_datetimefield_value

        # created_at and updated_at are usually the same instant: convert it once
        # (`last` is shared by the datetime columns of one insert).
        def datetime_value(value: Any) -> Any:
            if value is last[0]:
                return last[1]
            last[0], last[1] = value, adapt(value)
            return last[1]

        return datetime_value
    return lambda value: value


def insert_rows(model: type[models.Model], rows: Iterable[dict[str, Any]]) -> int:
    """INSERT `rows` (dicts keyed by attname) into `model`'s table with `executemany`.

    The ORM's per-value compilation costs more than the database itself for large
    imports, so this skips it: columns missing from a row get the field's default; JSON
    and datetime values go through the backend adapters. Auto primary keys are left to
    the database, so ids follow the order of `rows`. No signals are sent and no
    validation is done (the parsers produce valid shapes). Runs on the caller's
    connection and transaction. Returns the number of rows.
    """
    fields = [
        f
        for f in model._meta.concrete_fields
        if not (f.primary_key and isinstance(f, models.AutoField | models.BigAutoField))
    ]
    names = [f.attname for f in fields]
    last_datetime: list[Any] = [object(), None]
    convert = [_converter(f, last_datetime) for f in fields]
    # Field.get_default() is the declared default, else None/"" as the ORM would insert.
    defaults = {f.attname: f.get_default() for f in fields}
    qn = connection.ops.quote_name
    sql = "INSERT INTO {} ({}) VALUES ({})".format(
        qn(str(model._meta.db_table)),
        ", ".join(qn(str(f.column)) for f in fields),
        ", ".join(["%s"] * len(fields)),
    )
    params: list[tuple[Any, ...]] = []
    for row in rows:
        row = {**defaults, **row}
        params.append(tuple(c(row[n]) for c, n in zip(convert, names, strict=True)))
    with connection.cursor() as cursor:
        for start in range(0, len(params), BATCH_SIZE * 10):
            cursor.executemany(sql, params[start : start + BATCH_SIZE * 10])
    return len(params)


def delete_sessions(session_ids: list[str]) -> int:
    """Delete these sessions with their turns, events and todo lists; returns how many.

    Turns, events and todo rows go by `ON DELETE CASCADE` semantics through Django's
    collector, which deletes the dependent rows with one query per table.
    """
    if not session_ids:
        return 0
    _deleted, per_model = Session.objects.filter(id__in=session_ids).delete()
    return per_model.get(Session._meta.label, 0)


def write_parsed_session(parsed: ParsedSession, source_path: str) -> Session:
    """Insert `parsed` (session, turns, events, todo list) with bulk inserts; return it.

    Runs inside the caller's transaction (`transaction.atomic` is nested as a savepoint
    when one is open), so an import of one file lands whole or not at all. The session
    must not exist yet (callers delete a previous version first: `delete_sessions`);
    raises `django.db.IntegrityError` otherwise. Event ids are assigned by the database in
    list order, so id order is conversation order (SPEC.md 1). The `todos` state key is
    never written: `TodoList`/`TodoItem` rows are the one source of truth (SPEC.md 7).
    """
    with transaction.atomic():
        session = Session.objects.create(
            id=parsed.id,
            app_name=parsed.app_name,
            user_id=parsed.user_id,
            title=parsed.title,
            state={k: v for k, v in parsed.state.items() if k != "todos"},
            source_format=parsed.source_format,
            source_path=(parsed.source_path if parsed.source_path is not None else source_path)[
                :1000
            ],
            created_at=parsed.created_at,
            updated_at=parsed.updated_at,
        )
        sid = session.id
        insert_rows(
            Turn,
            (
                {
                    "id": t.id,
                    "session_id": sid,
                    "status": t.status,
                    "reason": t.reason,
                    "failure_code": t.failure_code,
                    "failure_stage": t.failure_stage,
                    "failure_message": t.failure_message,
                    "status_note": t.status_note,
                    "started_at": t.started_at,
                    "finished_at": t.finished_at,
                }
                for t in parsed.turns
            ),
        )
        insert_rows(
            Event,
            (
                {
                    "session_id": sid,
                    "turn_id": e.turn_id,
                    "source_id": e.source_id[:255],
                    "author": e.author[:255],
                    "role": e.role,
                    "text": e.text,
                    "parts": e.parts,
                    "reasoning": e.reasoning,
                    "tool_calls": e.tool_calls,
                    "tool_response": e.tool_response,
                    "tool_call_id": e.tool_call_id[:255],
                    "pending_call_ids": e.pending_call_ids,
                    "finish_reason": e.finish_reason,
                    "usage": e.usage,
                    "state_delta": e.state_delta,
                    "raw": e.raw,
                    "created_at": e.created_at,
                    "updated_at": e.updated_at or e.created_at,
                    "deleted_at": e.deleted_at,
                    "archived_at": e.archived_at,
                }
                for e in parsed.events
            ),
        )
        if parsed.todos is not None:
            todo_list = TodoList.objects.create(
                session=session,
                version=parsed.todo_version,
                updated_at=parsed.todo_updated_at or parsed.updated_at,
            )
            TodoItem.objects.bulk_create(
                [
                    TodoItem(
                        todo_list=todo_list,
                        position=position,
                        content=item.content,
                        status=item.status,
                        active_form=item.active_form,
                    )
                    for position, item in enumerate(parsed.todos)
                ],
                batch_size=BATCH_SIZE,
            )
        if parsed.todo_changes or parsed.tool_outcomes:
            _write_export_extras(parsed, session)
    return session


def _write_export_extras(parsed: ParsedSession, session: Session) -> None:
    """Audit rows and tool outcomes of an agentops export, with event ids and users mapped.

    Event ids are database-assigned, so the exported ids are mapped by position: the
    n-th stored event of the session is the n-th parsed one.
    """
    from django.contrib.auth import get_user_model

    from sessions_app.models import ToolOutcome
    from todos_app.models import TodoChange

    new_ids = list(
        Event.objects.filter(session_id=session.id).order_by("id").values_list("id", flat=True)
    )
    id_map = {
        e.original_id: new
        for e, new in zip(parsed.events, new_ids, strict=True)
        if e.original_id is not None
    }
    names = {c.get("user") for c in parsed.todo_changes} | {
        o.get("recorded_by") for o in parsed.tool_outcomes
    }
    users = dict(
        get_user_model()
        .objects.filter(username__in=[n for n in names if n])
        .values_list("username", "id")
    )
    if parsed.todo_changes:
        todo_list = TodoList.objects.get(session=session)
        TodoChange.objects.bulk_create(
            [
                TodoChange(
                    **{k: v for k, v in c.items() if k not in ("user", "event_id")},
                    todo_list=todo_list,
                    user_id=users.get(c.get("user") or ""),
                    event_id=id_map.get(c["event_id"], c["event_id"])
                    if c.get("event_id") is not None
                    else None,
                )
                for c in parsed.todo_changes
            ]
        )
    if parsed.tool_outcomes:
        ToolOutcome.objects.bulk_create(
            [
                ToolOutcome(
                    **{k: v for k, v in o.items() if k not in ("recorded_by", "event_id")},
                    session=session,
                    event_id=id_map[o["event_id"]],
                    recorded_by_id=users.get(o.get("recorded_by") or ""),
                )
                for o in parsed.tool_outcomes
            ]
        )
