"""A database that cannot give its write lock in time (SQLite's "database is locked",
PostgreSQL's lock timeout) is a temporary condition of the server: the API answers 503
with Retry-After and writes nothing; the key's last-use bookkeeping never refuses a
request. schemathesis found the 500 while a long batch held SQLite's lock."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError
from django.db.models import QuerySet

from sessions_app.api.ledger import ApiSessionService
from sessions_app.models import Event
from tests.api.conftest import ApiClient
from tests.factories import make_session

LOCKED = OperationalError("database is locked")


def test_a_write_that_cannot_get_the_lock_answers_503_with_retry_after(
    writer: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_session("s-busy", turns=0)

    async def locked(*args: Any, **kwargs: Any) -> None:
        raise LOCKED

    monkeypatch.setattr(ApiSessionService, "append_batch", locked)
    answer = writer.post(
        "/sessions/s-busy/events",
        {"events": [{"author": "user", "content": {"role": "user", "text": "hi"}}]},
    )
    assert answer.status_code == 503, answer.content
    assert answer["Retry-After"] == "5"
    problem = answer.json()
    assert problem["type"] == "urn:agentops:problem:database-busy"
    assert "nothing was changed" in problem["detail"]
    assert not Event.objects.filter(session_id="s-busy").exists()


def test_other_database_errors_stay_500(writer: ApiClient, monkeypatch: pytest.MonkeyPatch) -> None:
    make_session("s-broken", turns=0)

    async def broken(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("no such table: sessions_app_event")

    monkeypatch.setattr(ApiSessionService, "append_batch", broken)
    answer = writer.post(
        "/sessions/s-broken/events",
        {"events": [{"author": "user", "content": {"role": "user", "text": "hi"}}]},
    )
    assert answer.status_code == 500


def test_a_busy_database_does_not_refuse_a_read_for_the_keys_bookkeeping(
    reader: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_session("s-read", turns=1)
    original = QuerySet.update

    def update(self: QuerySet[Any], **values: Any) -> int:
        if "last_used_at" in values:
            raise LOCKED
        return original(self, **values)

    monkeypatch.setattr(QuerySet, "update", update)
    answer = reader.get("/sessions/s-read")
    assert answer.status_code == 200, answer.content
    assert answer.json()["id"] == "s-read"
