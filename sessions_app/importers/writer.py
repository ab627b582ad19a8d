"""The one writer for parsed sessions (used by every importer and by the demo data)."""

from __future__ import annotations

from django.db import transaction

from sessions_app.importers.base import ParsedSession
from sessions_app.models import Event, Session, Turn
from todos_app.models import TodoItem, TodoList

# Rows per INSERT statement. Django still caps this at the backend's limit on query
# parameters (SQLite: 32766 on current builds), so large batches are safe everywhere.
BATCH_SIZE = 1000


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
            source_path=source_path[:1000],
            created_at=parsed.created_at,
            updated_at=parsed.updated_at,
        )
        Turn.objects.bulk_create(
            [
                Turn(
                    id=t.id,
                    session=session,
                    status=t.status,
                    reason=t.reason,
                    failure_code=t.failure_code,
                    failure_stage=t.failure_stage,
                    failure_message=t.failure_message,
                    status_note=t.status_note,
                    started_at=t.started_at,
                    finished_at=t.finished_at,
                )
                for t in parsed.turns
            ],
            batch_size=BATCH_SIZE,
        )
        sid = session.id
        Event.objects.bulk_create(
            [
                Event(
                    session_id=sid,
                    turn_id=e.turn_id,
                    source_id=e.source_id[:255],
                    author=e.author[:255],
                    role=e.role,
                    text=e.text,
                    parts=e.parts,
                    reasoning=e.reasoning,
                    tool_calls=e.tool_calls,
                    tool_response=e.tool_response,
                    tool_call_id=e.tool_call_id[:255],
                    pending_call_ids=e.pending_call_ids,
                    finish_reason=e.finish_reason,
                    usage=e.usage,
                    state_delta=e.state_delta,
                    raw=e.raw,
                    created_at=e.created_at,
                    updated_at=e.created_at,
                )
                for e in parsed.events
            ],
            batch_size=BATCH_SIZE,
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
    return session
