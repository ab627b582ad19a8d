"""Crash safety of durable turns on the Django store (docs/runtime.md §2-3).

A child process (`tests/crash_child.py`) runs one turn through `Runner` on the test
database and SIGKILLs itself before or after each of its writes (interrupt running turns,
begin turn, user event, three agent events, finalize). After each kill:

- nothing committed before the kill is lost: every row that existed before the child
  started and every write the child journalled as returned is still there, unchanged;
- the session state holds exactly the state deltas of the stored events (the merge is
  atomic with the insert);
- on PostgreSQL the server has released the dead process's advisory run lock;
- the next run succeeds or raises `ToolExecutionUnknownError`, and afterwards no turn is
  running: the dead run's turn (and an older turn a previous crash left running) are
  interrupted/abandoned (docs/runtime.md §3 step 3), unless the child had already completed its
  turn.

Runs on SQLite (the test database is a file) and on PostgreSQL when DATABASE_URL is set.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection

from agentops.runtime import (
    Content,
    Event,
    Role,
    Runner,
    ToolExecutionUnknownError,
    Turn,
    TurnReason,
    TurnStatus,
)
from agentops.runtime.ids import new_id
from agentops.runtime.model import utc_now
from sessions_app import models
from sessions_app.store import DjangoSessionService, advisory_lock_key, event_from_values
from tests.runtime.helpers import ScriptedAgent, assistant, drain

pytestmark = pytest.mark.django_db(transaction=True)

#: Writes of one turn in tests/crash_child.py (not imported: it sets Django up on import).
WRITES_PER_TURN = 7

KILL_POINTS = [(n, when) for n in range(1, WRITES_PER_TURN + 1) for when in ("before", "after")]


def _database_url() -> str:
    """DATABASE_URL of the test database this test runs on (a file on SQLite)."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        assert db["NAME"] and str(db["NAME"]) != ":memory:" and "mode=memory" not in str(db["NAME"])
        return f"sqlite:///{db['NAME']}"
    user = quote(db["USER"] or "", safe="")
    password = f":{quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else ""
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{user}{password}@{db['HOST'] or 'localhost'}{port}/{db['NAME']}"


async def _rows(session_id: str) -> dict[int, dict[str, Any]]:
    """Every event row of the session (deleted and archived included), all columns."""
    return {
        # .values() rows are typed per field; event_from_values takes a plain dict.
        row["id"]: cast(dict[str, Any], row)
        async for row in models.Event.objects.filter(session_id=session_id).values().order_by("id")
    }


async def _turns(session_id: str) -> dict[str, Turn]:
    turns = await DjangoSessionService().list_turns(session_id)
    return {turn.id: turn for turn in turns}


async def _advisory_lock_released(session: models.Session, timeout: float = 10.0) -> bool:
    """True once another connection can take the run's advisory lock (PostgreSQL)."""
    import psycopg

    from sessions_app.store import postgres_conninfo

    key = advisory_lock_key(session.app_name, session.user_id, session.id)
    conninfo = await asyncio.to_thread(postgres_conninfo)
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            row = await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))).fetchone()
            if row and row[0]:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
                return True
            await asyncio.sleep(0.05)
    return False


def _run_child(
    session_id: str, crash_at: int, when: str, journal: Path
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "DJANGO_SETTINGS_MODULE": "agentops.settings",
        "CRASH_SESSION": session_id,
        "CRASH_AT": str(crash_at),
        "CRASH_WHEN": when,
        "CRASH_JOURNAL": str(journal),
    }
    return subprocess.run(
        [sys.executable, "-m", "tests.crash_child"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("crash_at", "when"), KILL_POINTS, ids=[f"{w}-{n}" for n, w in KILL_POINTS]
)
async def test_killed_run_loses_nothing_and_next_run_recovers(
    crash_at: int, when: str, tmp_path: Path
) -> None:
    service = DjangoSessionService()
    session = await service.create_session("app", "u")
    sid = session.id
    # History to protect: one completed turn, and a turn an earlier crash left running.
    _, error = await drain(Runner(ScriptedAgent([assistant("earlier")]), service), sid, "first")
    assert error is None
    orphan = await service.begin_turn(
        sid, Turn(id=new_id("turn"), session_id=sid, started_at=utc_now())
    )
    await service.append_event(
        Event(
            session_id=sid,
            turn_id=orphan.id,
            author="user",
            content=Content(role=Role.USER, text="lost"),
        )
    )
    before = await _rows(sid)

    journal = tmp_path / "journal.jsonl"
    journal.touch()
    proc = await asyncio.to_thread(_run_child, sid, crash_at, when, journal)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    committed = crash_at if when == "after" else crash_at - 1
    assert [entry["n"] for entry in entries] == list(range(1, committed + 1))

    # Nothing already stored is lost or changed.
    after_kill = await _rows(sid)
    assert {i: after_kill.get(i) for i in before} == before
    journalled = [entry["event"] for entry in entries if entry["write"] == "append_event"]
    for event in journalled:
        assert event["id"] in after_kill
        assert event_from_values(after_kill[event["id"]]).model_dump(mode="json") == event
    # Nothing half-written: the events the child had not returned from are absent, and
    # the session state holds exactly the deltas of the stored events.
    assert set(after_kill) - set(before) == {event["id"] for event in journalled}
    row = await models.Session.objects.aget(pk=sid)
    deltas = {key for r in after_kill.values() for key in (r["state_delta"] or {})}
    assert set(row.state) == deltas

    child_turn = next((e["turn"] for e in entries if e["write"] == "begin_turn"), None)
    if connection.vendor == "postgresql":
        assert await _advisory_lock_released(row), "the dead process still holds the run lock"

    # The next run recovers (the lock is free, dead turns are closed).
    async with asyncio.timeout(60):
        yielded, error = await drain(
            Runner(ScriptedAgent([assistant("recovered")]), service), sid, "next"
        )
    assert error is None or isinstance(error, ToolExecutionUnknownError), repr(error)
    turns = await _turns(sid)
    assert [t.id for t in turns.values() if t.status is TurnStatus.RUNNING] == []
    abandoned = (TurnStatus.INTERRUPTED, TurnReason.ABANDONED)
    assert (turns[orphan.id].status, turns[orphan.id].reason) == abandoned
    if child_turn is None:
        assert len(turns) == 3  # earlier, orphan, recovery: the child never began its turn
    elif crash_at == WRITES_PER_TURN and when == "after":
        assert turns[child_turn].status is TurnStatus.COMPLETED
    else:
        assert (turns[child_turn].status, turns[child_turn].reason) == abandoned
    last = list(turns.values())[-1]
    if error is None:
        assert last.status is TurnStatus.COMPLETED
        assert [e.content.text for e in yielded] == ["recovered"]
    else:
        assert last.failure is not None and last.failure.code == "tool_execution_unknown"

    # Still nothing lost after the recovery run.
    final = await _rows(sid)
    assert {i: final.get(i) for i in after_kill} == after_kill


async def test_child_completes_a_turn_when_not_killed(tmp_path: Path) -> None:
    """Control: without a kill the child's turn completes with its 7 writes."""
    service = DjangoSessionService()
    sid = (await service.create_session("app", "u")).id
    journal = tmp_path / "journal.jsonl"
    proc = await asyncio.to_thread(_run_child, sid, 0, "before", journal)
    assert proc.returncode == 0, proc.stderr[-3000:]
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [e["write"] for e in entries] == [
        "interrupt_running_turns", "begin_turn", "append_event", "append_event",
        "append_event", "append_event", "finalize_turn",
    ]  # fmt: skip
    assert len(entries) == WRITES_PER_TURN
    events = await service.list_events(sid)
    assert [e.content.role for e in events] == [
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.ASSISTANT,
    ]
    (turn,) = (await _turns(sid)).values()
    assert turn.status is TurnStatus.COMPLETED
