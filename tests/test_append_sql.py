"""The hot append path (`sessions_app.store.append_sql`): the same rows and resume status as
the ORM path, from the event loop's own SQLite connection when it may, the regular path
otherwise (docs/runtime.md §2: one committed transaction per stored event)."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from hypothesis import HealthCheck, given, settings

from agentops.runtime import errors
from agentops.runtime.model import Content, Event, Role, ToolCall, ToolResponse, Usage
from agentops.runtime.session import Turn
from sessions_app import models
from sessions_app.store import DjangoSessionService, refresh_resume_status
from sessions_app.store.append_sql import stored_fields
from sessions_app.store.columns import EVENT_COLUMNS
from tests import test_resume_status as resume_cases
from tests.test_page_facts import _kept, _recomputed

T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)

pytestmark = pytest.mark.django_db(transaction=True)

on_sqlite = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="the direct path writes SQLite files only"
)


def _events(session_id: str, turn_id: str) -> list[Event]:
    call = ToolCall(id="c1", name="look", arguments={"q": "x"})
    answer = ToolResponse(tool_call_id="c1", name="look", result=1)
    return [
        Event(session_id=session_id, turn_id=turn_id, author="user",
              content=Content(role=Role.USER, text="find it")),
        Event(session_id=session_id, turn_id=turn_id, author="bot",
              content=Content(role=Role.ASSISTANT, tool_calls=(call,))),
        Event(session_id=session_id, turn_id=turn_id, author="tool",
              content=Content(role=Role.TOOL, tool_response=answer)),
        Event(session_id=session_id, turn_id=turn_id, author="bot",
              content=Content(role=Role.ASSISTANT, text="found; key sk-ant-api03-" + "a" * 90)),
        Event(session_id=session_id, turn_id="", author="bot",
              content=Content(role=Role.ASSISTANT, tool_calls=(call,))),
    ]  # fmt: skip


def _rows(session_id: str) -> list[dict[str, Any]]:
    skip = {"id", "session_id", "turn_id", "created_at", "updated_at"}
    columns = [c for c in EVENT_COLUMNS if c not in skip]
    return list(models.Event.objects.filter(session_id=session_id).order_by("id").values(*columns))


def _status(session_id: str) -> tuple[int, int, bool]:
    row = models.Session.objects.get(pk=session_id)
    return row.protocol_issue_count, row.orphan_result_count, row.cannot_resume


async def _run(service: DjangoSessionService, session_id: str) -> list[Event]:
    """Append `_events` through `service` to a new session whose turn runs; the status
    after the turn's own events (an answered call: no issue) is checked on the way."""
    await service.create_session("app", "u", session_id=session_id)
    turn = Turn(id=f"t-{session_id}", session_id=session_id, started_at=T0)
    await service.begin_turn(session_id, turn)
    events = _events(session_id, turn.id)
    stored = [await service.append_event(event) for event in events[:2]]
    assert await sync_to_async(_status)(session_id) == (1, 0, False)  # the call is open
    stored += [await service.append_event(event) for event in events[2:4]]
    assert await sync_to_async(_status)(session_id) == (0, 0, False)  # answered
    stored.append(await service.append_event(events[4]))
    return stored


def _orm_rows(session_id: str) -> None:
    """The reference: each event created through the ORM, as the store did before."""
    models.Session.objects.create(id=session_id, app_name="app", created_at=T0, updated_at=T0)
    for event in _events(session_id, ""):
        fields, _stored = stored_fields(event)
        models.Event.objects.create(session_id=session_id, created_at=T0, updated_at=T0, **fields)


async def test_the_hot_path_stores_what_the_orm_stores() -> None:
    service = DjangoSessionService()
    fast = await _run(service, "fast")
    await sync_to_async(_orm_rows)("orm")
    assert await sync_to_async(_rows)("fast") == await sync_to_async(_rows)("orm")
    assert "sk-ant-api03" not in (fast[3].content.text or "")  # the stored (redacted) copy
    assert [e.id for e in fast] == sorted(e.id for e in fast)
    assert [e.id for e in await service.list_events("fast")] == [e.id for e in fast]
    fast_status = await sync_to_async(_status)("fast")
    await sync_to_async(refresh_resume_status)("fast")  # the full recomputation agrees
    assert await sync_to_async(_status)("fast") == fast_status
    assert fast_status[0] == 1  # the call outside the turn is open


async def test_the_kept_page_facts_follow_every_path() -> None:
    """Whichever path stores an event (this thread, the worker's SQL, the ORM), the page
    facts kept on the way equal their recomputation: tokens, call marks, legacy flag."""
    service = DjangoSessionService()
    await _run(service, "facts")
    used = Usage(prompt_tokens=7, completion_tokens=2)
    late = Content(role=Role.ASSISTANT, text="done")
    for turn_id, usage in [("t-facts", None), ("t-facts", used), ("", None), ("", used)]:
        event = Event(session_id="facts", turn_id=turn_id, content=late, usage=usage)
        await service.append_event(event)
    kept = await sync_to_async(_kept)("facts")
    assert kept == await sync_to_async(_recomputed)("facts")
    assert kept["tokens"][:2] == (14, 4) and kept["legacy"] and kept["issues"]


@on_sqlite
async def test_events_of_a_running_turn_need_no_worker_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    service = DjangoSessionService()
    await service.create_session("app", "u", session_id="s")
    await service.begin_turn("s", Turn(id="t", session_id="s", started_at=T0))
    used: list[str] = []
    regular = DjangoSessionService._append_stored

    def spy(self: DjangoSessionService, event: Event, fields: dict[str, Any]) -> Event:
        used.append(event.content.role.value)
        return regular(self, event, fields)

    monkeypatch.setattr(DjangoSessionService, "_append_stored", spy)
    for event in _events("s", "t"):
        await service.append_event(event)
    # Plain events, calls and results of a running turn were stored on this thread (the
    # page facts in SQL there); the call outside a turn takes the regular path (the full
    # recomputation).
    assert used == ["assistant"]
    usage = Usage(prompt_tokens=3, completion_tokens=1)
    late = Content(role=Role.ASSISTANT, text="done")
    await service.append_event(Event(session_id="s", turn_id="t", content=late, usage=usage))
    assert used == ["assistant"]  # usage too: the token totals in SQL on this thread
    assert len(await service.list_events("s")) == 6
    kept = await sync_to_async(_kept)("s")
    assert kept == await sync_to_async(_recomputed)("s")
    assert kept["tokens"][:2] == (3, 1)


@on_sqlite
async def test_a_held_write_lock_sends_the_append_the_regular_way() -> None:
    service = DjangoSessionService()
    await service.create_session("app", "u", session_id="s")
    other = sqlite3.connect(str(connection.settings_dict["NAME"]), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another writer (e.g. an import) holds the lock
    try:
        pending = service.append_event(_events("s", "")[0])
        task = asyncio.ensure_future(pending)
        await asyncio.sleep(0.2)
        assert not task.done()  # waiting in the worker thread, the loop is free
    finally:
        other.execute("COMMIT")
        other.close()
    stored = await task
    assert [e.id for e in await service.list_events("s")] == [stored.id]


async def test_an_unknown_session_is_refused_and_nothing_is_stored() -> None:
    service = DjangoSessionService()
    with pytest.raises(errors.SessionNotFoundError):
        await service.append_event(_events("nope", "")[0])
    assert not await models.Event.objects.filter(session_id="nope").aexists()


@on_sqlite
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations=resume_cases.OPERATIONS)
def test_the_direct_path_keeps_the_status_the_full_recomputation_gives(
    operations: list[tuple[str, str, int, list[str]]],
) -> None:
    # The same property as tests/test_resume_status.py, its appends committed on the
    # direct path (that test's transaction holds the write lock, so its appends never are).
    check = resume_cases.test_incremental_status_equals_full_recomputation.hypothesis.inner_test
    check(operations=operations)


@on_sqlite
async def test_a_state_delta_is_merged_on_the_direct_path_and_todos_go_the_regular_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    service = DjangoSessionService()
    await service.create_session("app", "u", session_id="s", state={"a": 1, "b": 1})
    await service.begin_turn("s", Turn(id="t", session_id="s", started_at=T0))
    used: list[dict[str, Any]] = []
    regular = DjangoSessionService._append_stored

    def spy(self: DjangoSessionService, event: Event, fields: dict[str, Any]) -> Event:
        used.append(dict(fields["state_delta"]))
        return regular(self, event, fields)

    monkeypatch.setattr(DjangoSessionService, "_append_stored", spy)
    user = Content(role=Role.USER, text="go")
    delta = {"b": 2, "c": [1], "temp:scratch": 1}
    stored = await service.append_event(
        Event(session_id="s", turn_id="t", content=user, state_delta=delta)
    )
    assert stored.state_delta == delta  # temp: keys live only in the returned copy
    todos = {"todos": [{"content": "x", "status": "pending"}]}
    await service.append_event(Event(session_id="s", turn_id="t", content=user, state_delta=todos))
    assert used == [todos]
    session = await service.get_session("s")
    assert session is not None
    assert {k: v for k, v in session.state.items() if k != "todos"} == {"a": 1, "b": 2, "c": [1]}
    assert [item["content"] for item in session.state["todos"]] == ["x"]


def test_the_value_preparation_is_each_fields_own() -> None:
    """The INSERT's short-cut preparers give what each field's `get_db_prep_save` gives, on
    every column of the bench's history (calls, results, deltas) and on edge values."""
    from agentops.runtime.bench import synthetic_history
    from sessions_app.store.append_sql import append_statements

    statements = append_statements()
    by_name = {field.attname: field for field in models.Event._meta.concrete_fields}
    _, history = synthetic_history(40)
    events = [e.model_copy(update={"state_delta": {"step": i}}) for i, e in enumerate(history)]
    events += [e.model_copy(update={"usage": Usage(prompt_tokens=1)}) for e in _events("s", "t")]
    now = datetime.now(UTC)
    given = [
        {**stored_fields(e)[0], "session_id": "s", "created_at": now, "updated_at": now}
        for e in events
    ]
    edges: list[Any] = ["", "x", None, True, False, [], {}, {"a": [1, None]}, now]
    for index, name in enumerate(statements.columns):
        field, prepare = by_name[name], statements.prepare[index]
        values = [row[name] for row in given if name in row] + [field.get_default()]
        if field.get_internal_type() in ("JSONField", "DateTimeField") or field.null:
            values += [None]
        if field.get_internal_type() == "JSONField":
            values += edges[:2] + edges[3:8]
        for value in values:
            fast, slow = prepare(value), field.get_db_prep_save(value, connection)
            assert type(fast) is type(slow), (name, value)
            assert getattr(fast, "obj", fast) == getattr(slow, "obj", slow), (name, value)


def _close() -> None:
    connection.close()


def _prepared_statements() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements")
        return int(cursor.fetchone()[0])


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs DATABASE_URL=postgres://...")
@pytest.mark.parametrize("threshold", [5, 0])
async def test_appends_on_postgresql_are_prepared_statements_unless_turned_off(
    threshold: int, settings: Any
) -> None:
    settings.AGENTOPS_PG_PREPARE_THRESHOLD = threshold
    await sync_to_async(_close)()  # a connection that prepared nothing yet
    service = DjangoSessionService()
    for n in range(3):  # each statement of a plain append runs 3 x 5 times
        await _run(service, f"prep-{n}")
    prepared = await sync_to_async(_prepared_statements)()
    assert (prepared > 0) == (threshold > 0), prepared
    assert await sync_to_async(_rows)("prep-0") == await sync_to_async(_rows)("prep-2")
