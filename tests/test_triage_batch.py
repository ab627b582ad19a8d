"""A bulk INSERT of events keeps the triage tally as the per-row trigger does: SQLite
counts a batch's tool uses with one pass at its end (migration ``0019_triage_batch``),
and the counts must equal those of the same rows inserted one by one (PostgreSQL: both
are per-row), and a recount."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from sessions_app.ingest.writer import insert_rows
from sessions_app.models import Event, Session, Turn
from sessions_app.search.batch_index import DEFERRED_TABLE
from sessions_app.triage.models import TriageTally, TurnToolUse
from tests.factories import make_session
from tests.test_triage_tally import assert_kept

pytestmark = pytest.mark.django_db

COLUMNS = ("session_id", "turn_id", "role", "author", "tool_calls", "created_at", "updated_at",
           "deleted_at")  # fmt: skip


def _call(call_id: str, name: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": {}}


def _rows() -> list[tuple[Any, ...]]:
    """Events with tool calls across the turns of two sessions: failed, interrupted and
    completed turns, tools used again by later events and already used before the batch,
    calls without a usable name, a deleted event, and a turn id with no record."""
    now = timezone.now()
    rows: list[tuple[Any, ...]] = []
    for sid in ("batch-a", "batch-b"):
        turns = list(Turn.objects.filter(session_id=sid).order_by("started_at"))
        for number, turn in enumerate(turns):
            calls = [_call("c1", "Read"), _call("c2", "Read"), _call("c3", f"Tool{number % 3}"),
                     {"name": 7}, "odd", {"id": "x"}, _call("c4", "")]  # fmt: skip
            rows.append((sid, turn.pk, "assistant", "a", calls, now, now, None))
            rows.append((sid, turn.pk, "assistant", "a", [_call("c5", "Bash")], now, now, None))
            rows.append((sid, turn.pk, "assistant", "a", [_call("c6", "Gone")], now, now, now))
            rows.append((sid, turn.pk, "user", "u", [], now, now, None))
        rows.append((sid, "no-such-turn", "assistant", "a", [_call("c7", "Read")], now, now, None))
    return rows


def _counts() -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    key = ("status", "reason", "failure_code", "failure_stage", "app_name", "day", "tool")
    tally = set(TriageTally.objects.filter(n__gt=0).values_list(*key, "n"))
    uses = set(TurnToolUse.objects.values_list("session_id", "turn_id", "tool", "events"))
    return tally, uses


def test_a_batch_of_events_is_tallied_as_the_same_rows_one_by_one() -> None:
    statuses = ["failed", "interrupted", "completed", "failed"]
    make_session("batch-a", turns=8, statuses=statuses)
    make_session("batch-b", app="other", turns=5, statuses=statuses)
    # Tools already used in a tallied turn before the batch: not counted again.
    first = Turn.objects.filter(session_id="batch-a", status="failed").order_by("started_at")[0]
    now = timezone.now()
    Event.objects.create(session_id="batch-a", turn_id=first.pk, role="assistant",
                         tool_calls=[_call("c0", "Read"), _call("c0b", "Bash")],
                         created_at=now, updated_at=now)  # fmt: skip
    rows = _rows()

    with transaction.atomic():
        for row in rows:  # one row per INSERT: the per-row trigger
            insert_rows(Event, COLUMNS, [row])
        one_by_one = _counts()
        assert_kept()
        transaction.set_rollback(True)

    assert insert_rows(Event, COLUMNS, rows) == len(rows)  # one batch
    assert _counts() == one_by_one
    assert_kept()
    assert Session.objects.count() == 2
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {DEFERRED_TABLE}")
            assert cursor.fetchone() == (0,)
