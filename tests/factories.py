"""Small builders of stored sessions for page tests (no third-party factory library needed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sessions_app.models import Event, Session, Turn
from sessions_app.store import refresh_resume_status
from todos_app.models import TodoItem, TodoList

BASE = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def make_session(
    session_id: str = "s-1",
    *,
    app: str = "coder",
    turns: int = 1,
    events_per_turn: int = 2,
    statuses: list[str] | None = None,
    text: str = "hello",
    todos: list[dict[str, Any]] | None = None,
) -> Session:
    """A session with `turns` turns of `events_per_turn` events (user, then assistant...)."""
    session = Session.objects.create(
        id=session_id,
        app_name=app,
        user_id="u-1",
        title=f"Session {session_id}",
        created_at=BASE,
        updated_at=BASE + timedelta(minutes=turns),
    )
    rows: list[Event] = []
    for t in range(turns):
        status = (statuses or ["completed"])[t % len(statuses or ["completed"])]
        turn = Turn.objects.create(
            id=f"{session_id}-t{t:05d}",
            session=session,
            status=status,
            reason={"interrupted": "canceled", "failed": "agent_error"}.get(status, ""),
            failure_code="provider_error" if status == "failed" else "",
            failure_stage="provider" if status == "failed" else "",
            started_at=BASE + timedelta(minutes=t),
            finished_at=None if status == "running" else BASE + timedelta(minutes=t, seconds=30),
        )
        for i in range(events_per_turn):
            role = "user" if i == 0 else "assistant"
            rows.append(
                Event(
                    session=session,
                    turn_id=turn.id,
                    author=role,
                    role=role,
                    text=f"{text} {t}.{i}",
                    created_at=turn.started_at,
                    updated_at=turn.started_at,
                )
            )
    Event.objects.bulk_create(rows, batch_size=2000)
    # Rows written outside the store: the derived facts recomputed, as an import does.
    refresh_resume_status(session.id)
    if todos:
        todo_list = TodoList.objects.create(session=session, version=1, updated_at=BASE)
        TodoItem.objects.bulk_create(
            TodoItem(todo_list=todo_list, position=i, **item) for i, item in enumerate(todos)
        )
    return session


def add_unanswered_call(turn: Turn, call_id: str = "call-1", name: str = "Read") -> Event:
    """An assistant event in `turn` calling tool `name` (no result stored), at its start."""
    event = Event.objects.create(
        session_id=turn.session_id,
        turn_id=turn.id,
        role="assistant",
        author="assistant",
        tool_calls=[{"id": call_id, "name": name, "arguments": {}}],
        created_at=turn.started_at,
        updated_at=turn.started_at,
    )
    refresh_resume_status(turn.session_id)
    return event
