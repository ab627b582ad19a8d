"""The import writer's shortcuts give what the slow, obvious path gives.

- The resume status an import stores (worked out in memory from the parsed session) equals
  the one `refresh_resume_status` recomputes from the stored rows, for every corpus file
  and every demo session.
- `insert_rows` stores the same column values as the ORM (`Model.objects.create`) for
  datetimes (UTC and other zones) and JSON (including values orjson refuses), and, for
  many rows at once, whatever instants repeat within a column and across columns.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction

from sessions_app.demo import load_demo
from sessions_app.ingest import import_file
from sessions_app.ingest.writer import insert_rows
from sessions_app.models import Event, Session
from sessions_app.store import EVENT_INSERT_COLUMNS, refresh_resume_status
from tests.factories import make_session

pytestmark = pytest.mark.django_db


def _stored_status(session_id: str) -> tuple[int, bool]:
    row = Session.objects.get(pk=session_id)
    return row.protocol_issue_count, row.cannot_resume


def test_imported_resume_status_equals_the_one_recomputed_from_the_rows(corpus: Path) -> None:
    seen: dict[str, tuple[int, bool]] = {}
    for path in sorted(corpus.rglob("*.json*")):
        report = import_file(path)
        assert report.status == "imported", path
        for session_id in report.session_ids:
            stored = _stored_status(session_id)
            assert stored == refresh_resume_status(session_id), path
            seen[f"{path.name}:{session_id}"] = stored
    # The comparison means something: the corpus has sessions with open calls, and
    # at least one whose projection fails.
    assert any(count > 0 for count, _ in seen.values())
    assert any(cannot for _, cannot in seen.values())
    assert any(count == 0 for count, _ in seen.values())


def test_demo_resume_status_equals_the_one_recomputed_from_the_rows() -> None:
    sessions = load_demo()
    statuses = [_stored_status(parsed.id) for parsed in sessions]
    assert statuses == [refresh_resume_status(parsed.id) for parsed in sessions]
    assert any(count > 0 for count, _ in statuses)


def _event_values(**overrides: Any) -> dict[str, Any]:
    at = datetime(2025, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
    values: dict[str, Any] = {
        "session_id": "writer-s",
        "turn_id": "",
        "source_id": "",
        "author": "user",
        "role": "user",
        "text": "hi",
        "parts": [],
        "reasoning": "",
        "tool_calls": [{"id": "c1", "name": "Read", "arguments": {"path": "é/ü", "n": 1.5}}],
        "tool_response": None,
        "tool_call_id": "",
        "pending_call_ids": [],
        "finish_reason": "",
        "usage": {"prompt_tokens": 3, "details": {"nested": [1, None, True]}},
        "state_delta": {},
        "raw": {"line": "x\u2028y", "big": 2**70, "nan": "NaN"},
        "created_at": at,
        "updated_at": at,
        "deleted_at": None,
        "archived_at": at + timedelta(seconds=1),
    }
    values.update(overrides)
    return values


def _raw_columns(event_id: int) -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tool_calls, usage, raw, created_at, updated_at, archived_at, deleted_at"
            " FROM sessions_app_event WHERE id = %s",
            [event_id],
        )
        row = cursor.fetchone()
    names = ("tool_calls", "usage", "raw", "created_at", "updated_at", "archived_at", "deleted_at")
    return dict(zip(names, row, strict=True))


@pytest.mark.parametrize(
    "zone",
    [UTC, timezone(timedelta(hours=5, minutes=30))],
    ids=["utc", "plus-0530"],
)
def test_insert_rows_stores_what_the_orm_stores(zone: timezone) -> None:
    make_session("writer-s", turns=0)
    at = datetime(2025, 3, 4, 5, 6, 7, 890123, tzinfo=zone)
    values = _event_values(created_at=at, updated_at=at + timedelta(microseconds=1))
    by_orm = Event.objects.create(**values)
    insert_rows(Event, EVENT_INSERT_COLUMNS, [tuple(values[c] for c in EVENT_INSERT_COLUMNS)])
    by_writer = Event.objects.filter(session_id="writer-s").exclude(pk=by_orm.pk).get()

    orm_columns, writer_columns = _raw_columns(by_orm.pk), _raw_columns(by_writer.pk)
    for name in ("created_at", "updated_at", "archived_at", "deleted_at"):
        # Byte for byte: range queries on SQLite compare these as text.
        assert writer_columns[name] == orm_columns[name], name
    for name in ("tool_calls", "usage", "raw"):
        decode = json.loads if isinstance(orm_columns[name], str) else (lambda v: v)
        assert decode(writer_columns[name]) == decode(orm_columns[name]), name
    for field in ("tool_calls", "usage", "raw", "created_at", "updated_at", "archived_at"):
        assert getattr(by_writer, field) == getattr(by_orm, field), field
    assert by_writer.raw is not None and by_writer.raw["big"] == 2**70


def test_insert_rows_converts_each_rows_own_instants() -> None:
    # A converted instant is reused only for that same instant: a write time shared by a
    # column's rows, or a row's created_at repeated in its updated_at; never another's.
    make_session("writer-s", turns=0)
    base = datetime(2025, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
    now, a, b, c = (base + timedelta(seconds=n) for n in range(4))
    pattern = [(a, now, None), (b, now, now), (now, a, None), (c, c, b), (a, now, a), (b, b, None)]
    rows = [
        _event_values(source_id=str(n), created_at=created, updated_at=updated, archived_at=gone)
        for n, (created, updated, gone) in enumerate(pattern)
    ]
    orm_ids = [Event.objects.create(**values).pk for values in rows]
    insert_rows(
        Event, EVENT_INSERT_COLUMNS, [tuple(v[c] for c in EVENT_INSERT_COLUMNS) for v in rows]
    )
    writer_ids = list(
        Event.objects.filter(session_id="writer-s").exclude(pk__in=orm_ids).order_by("id")
        .values_list("pk", flat=True)
    )  # fmt: skip
    assert len(writer_ids) == len(pattern)
    for orm_id, writer_id in zip(orm_ids, writer_ids, strict=True):
        orm_columns, writer_columns = _raw_columns(orm_id), _raw_columns(writer_id)
        for name in ("created_at", "updated_at", "archived_at", "deleted_at"):
            assert writer_columns[name] == orm_columns[name], (orm_id, name)


def test_insert_rows_refuses_what_the_orm_refuses() -> None:
    make_session("writer-s", turns=0)
    values = _event_values(raw={"when": datetime(2025, 1, 1, tzinfo=UTC)})
    # Savepoints: on PostgreSQL the value is encoded while the statement runs.
    with pytest.raises(TypeError) as by_orm, transaction.atomic():
        Event.objects.create(**values)
    with pytest.raises(TypeError) as by_writer, transaction.atomic():
        insert_rows(Event, EVENT_INSERT_COLUMNS, [tuple(values[c] for c in EVENT_INSERT_COLUMNS)])
    assert str(by_writer.value) == str(by_orm.value)
