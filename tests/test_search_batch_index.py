"""A bulk INSERT of events is indexed for search by one statement at its end
(sessions_app.search.batch_index) and found like any other event; on SQLite the per-row
trigger stands aside meanwhile, on PostgreSQL the database's own index keeps up."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.utils import timezone

from sessions_app.api.keys import create_key
from sessions_app.ingest.writer import insert_rows
from sessions_app.models import Event
from sessions_app.search import matching_events
from sessions_app.search.batch_index import DEFERRED_TABLE, indexed_in_one_statement
from tests.api.conftest import ApiClient
from tests.factories import make_session

pytestmark = pytest.mark.django_db


def _hits(word: str) -> list[str]:
    return sorted(matching_events(Event.objects.all(), word).values_list("text", flat=True))


def test_a_bulk_insert_of_events_is_found_and_leaves_no_marker() -> None:
    session = make_session("s-bulk", text="nothing")
    now = timezone.now()
    turn_id = session.turns.get().id
    rows = [(session.id, turn_id, "assistant", f"zebra{n} parcel", now, now) for n in range(5)]
    columns = ("session_id", "turn_id", "role", "text", "created_at", "updated_at")
    assert insert_rows(Event, columns, rows) == 5
    assert _hits("parcel") == [f"zebra{n} parcel" for n in range(5)]
    assert _hits("zebra3") == ["zebra3 parcel"]
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {DEFERRED_TABLE}")
            assert cursor.fetchone() == (0,)
            # Each row indexed once: the trigger stood aside.
            cursor.execute(
                "SELECT count(*) FROM sessions_app_event_fts WHERE rowid IN "
                "(SELECT id FROM sessions_app_event WHERE text LIKE 'zebra%')"
            )
            assert cursor.fetchone() == (5,)


def test_rows_inserted_one_by_one_meanwhile_are_indexed_once_at_the_end() -> None:
    session = make_session("s-one", text="nothing")
    now = timezone.now()
    with indexed_in_one_statement():
        Event.objects.create(session=session, role="user", text="walrus", created_at=now,
                             updated_at=now)  # fmt: skip
    assert _hits("walrus") == ["walrus"]
    Event.objects.create(session=session, role="user", text="walrus two", created_at=now,
                         updated_at=now)  # fmt: skip
    assert _hits("walrus") == ["walrus", "walrus two"]


def test_a_failed_batch_leaves_neither_rows_nor_index_nor_marker() -> None:
    session = make_session("s-fail", text="nothing")
    now = timezone.now()
    with pytest.raises(RuntimeError), transaction.atomic(), indexed_in_one_statement():
        Event.objects.create(session=session, role="user", text="narwhal", created_at=now,
                             updated_at=now)  # fmt: skip
        raise RuntimeError("the batch fails")
    assert not Event.objects.filter(text="narwhal").exists()
    assert _hits("narwhal") == []
    later = Event.objects.create(session=session, role="user", text="narwhal later",
                                 created_at=now, updated_at=now)  # fmt: skip
    assert _hits("narwhal") == [later.text]


def test_an_api_batch_is_found() -> None:
    api = ApiClient(create_key("writer").key)
    api.post("/sessions", {"app_name": "app", "session_id": "s-api"})
    events = [
        {
            "client_key": f"k{n}",
            "author": "a",
            "content": {"role": "assistant", "text": f"okapi {n}"},
        }
        for n in range(3)
    ]
    response = api.post("/sessions/s-api/events", {"events": events})
    assert response.status_code == 200, response.content
    assert _hits("okapi") == ["okapi 0", "okapi 1", "okapi 2"]
