"""The triage queue's kept counts (`sessions_app.triage.models`) equal a recount of the
failed and interrupted turns after every kind of write: the runner's turns through the
store, the ORM, bulk inserts, queryset updates, soft deletes and archives, cascading
deletes, an app renamed, a real transcript imported and replaced; and the migration's fill
of existing rows gives the same counts (issue 17: `/turns/` must not count every turn)."""

from __future__ import annotations

import asyncio
import importlib
import random
from collections import Counter, defaultdict
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from agentops.agents.demo import make_agent
from agentops.runtime import Runner
from sessions_app.live.runs import get_todo_store
from sessions_app.models import Event, Session, Turn
from sessions_app.projector import ProductProjector
from sessions_app.store import DjangoSessionService
from sessions_app.triage.models import TriageTally, TurnToolUse
from tests.factories import make_session

pytestmark = pytest.mark.django_db(transaction=True)

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
MIGRATION = importlib.import_module("sessions_app.migrations.0013_triage_tally")

Key = tuple[str, str, str, str, str, Any, str]


def recount() -> Counter[Key]:
    """The tally recomputed in Python from the rows, without the triggers."""
    tools: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    active = Event.objects.filter(deleted_at=None, archived_at=None)
    for sid, tid, calls in active.values_list("session_id", "turn_id", "tool_calls"):
        for call in calls if isinstance(calls, list) else []:
            name = call.get("name") if isinstance(call, dict) else None
            if isinstance(name, str) and name:
                tools[(sid, tid)].add(name[:200])
    counts: Counter[Key] = Counter()
    turns = Turn.objects.filter(status__in=["failed", "interrupted"]).select_related("session")
    for turn in turns:
        day = turn.started_at.astimezone(UTC).date()
        key = (turn.status, turn.reason, turn.failure_code, turn.failure_stage)
        for tool in ["", *tools[(turn.session_id, turn.pk)]]:
            counts[(*key, turn.session.app_name, day, tool)] += 1
    return counts


def kept() -> Counter[Key]:
    rows = TriageTally.objects.filter(n__gt=0)
    assert not TriageTally.objects.filter(n__lt=0).exists()
    return Counter(
        {
            (r.status, r.reason, r.failure_code, r.failure_stage, r.app_name, r.day, r.tool): r.n
            for r in rows
        }
    )


def assert_kept() -> None:
    assert kept() == recount()
    assert not TurnToolUse.objects.filter(events__lte=0).exists()


def _call(call_id: str, name: str) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": {}}


def _run(session_id: str, message: str) -> None:
    async def run() -> None:
        service = DjangoSessionService()
        if await service.get_session(session_id) is None:
            await service.create_session(app_name="runner-app", user_id="u", session_id=session_id)
        agent = make_agent(todo_store=get_todo_store(), delay=0)
        runner = Runner(agent, service, projector=ProductProjector())
        try:
            async for _event in runner.run(session_id, message):
                pass
        except Exception:  # the "fail" turns raise after recording their outcome
            pass

    asyncio.run(run())


def test_every_write_path_keeps_the_tally_equal_to_a_recount() -> None:
    # The runner through the store: completed and failed turns with tool calls.
    _run("run-1", "plan my day")
    _run("run-1", "please fail")
    _run("run-2", "stop mid-tool")
    assert_kept()
    assert kept(), "the runner's failed turns are tallied"

    # The ORM and bulk inserts.
    session = make_session("orm", turns=6, statuses=["failed", "interrupted", "completed"])
    turns = list(session.turns.order_by("started_at"))
    now = timezone.now()
    Event.objects.bulk_create(
        Event(session=session, turn_id=turn.pk, role="assistant", author="a",
              tool_calls=[_call("c1", "Read"), _call("c2", "Read"), _call("c3", "Bash"),
                          {"name": 7}, "odd", {"id": "x"}],
              created_at=now, updated_at=now)
        for turn in turns
    )  # fmt: skip
    assert_kept()

    # Updates of a turn's tallied columns, and of an event's calls, turn and visibility.
    Turn.objects.filter(pk=turns[2].pk).update(status="failed", reason="agent_error")
    Turn.objects.filter(pk=turns[0].pk).update(failure_code="other", started_at=now)
    Turn.objects.filter(pk=turns[1].pk).update(status="completed", reason="")
    first = Event.objects.filter(session=session, turn_id=turns[0].pk).exclude(tool_calls=[])
    first.update(deleted_at=now)
    assert_kept()
    first.update(deleted_at=None)
    event = Event.objects.filter(session=session, turn_id=turns[3].pk).exclude(tool_calls=[])[0]
    event.tool_calls = [_call("c9", "Grep")]
    event.save()
    Event.objects.filter(pk=event.pk).update(turn_id=turns[4].pk)
    Event.objects.filter(session=session, turn_id=turns[5].pk).update(archived_at=now)
    assert_kept()

    # An app renamed, a turn deleted, a session deleted (cascade).
    Session.objects.filter(pk="orm").update(app_name="renamed")
    assert_kept()
    Turn.objects.filter(pk=turns[0].pk).delete()
    assert_kept()
    Session.objects.filter(pk="run-2").delete()
    assert_kept()


def test_a_random_mix_of_writes_keeps_the_tally_equal_to_a_recount() -> None:
    rng = random.Random(17)
    sessions = [make_session(f"r{i}", app=f"app{i % 2}", turns=8) for i in range(4)]
    turn_ids = list(Turn.objects.values_list("pk", flat=True))
    statuses = ["failed", "interrupted", "completed", "running"]
    base = timezone.now()
    for step in range(120):
        action = rng.choice([0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 4, 5])  # 5 (delete): 1 in 12
        turn_id = rng.choice(turn_ids)
        turn = Turn.objects.filter(pk=turn_id).first()
        if turn is None:
            continue
        if action == 0:
            Turn.objects.filter(pk=turn_id).update(
                status=rng.choice(statuses),
                failure_code=rng.choice(["", "a", "b"]),
                started_at=base - timedelta(days=rng.randrange(3)),
            )
        elif action == 1:
            Event.objects.create(
                session_id=turn.session_id, turn_id=turn_id, role="assistant", author="a",
                tool_calls=[_call(f"c{step}", rng.choice(["Read", "Bash", "Edit"]))],
                created_at=base, updated_at=base,
            )  # fmt: skip
        elif action == 2:
            called = Event.objects.filter(turn_id=turn_id).exclude(tool_calls=[])
            called.filter(pk__in=called.values("pk")[:1]).update(
                deleted_at=rng.choice([None, base])
            )
        elif action == 3:
            oldest = Event.objects.filter(turn_id=turn_id).order_by("pk").values_list("pk")[:1]
            Event.objects.filter(pk__in=[pk for (pk,) in oldest]).delete()
        elif action == 4:
            Session.objects.filter(pk=turn.session_id).update(app_name=rng.choice(["x", "y"]))
        else:
            Turn.objects.filter(pk=turn_id).delete()
            turn_ids.remove(turn_id)
        if step % 10 == 9:
            assert_kept()
    assert_kept()
    assert sessions


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not beside the project")
def test_an_import_and_its_replacement_keep_the_tally_equal_to_a_recount(tmp_path: Path) -> None:
    call_command("import_sessions", str(CORPUS), "--no-progress")
    assert_kept()
    assert TurnToolUse.objects.exists(), "the corpus's tool calls are kept per turn"
    ids = list(Session.objects.values_list("pk", flat=True)[:3])
    Session.objects.filter(pk__in=ids).delete()
    assert_kept()


def test_the_migrations_fill_counts_existing_rows_as_the_triggers_do() -> None:
    _run("fill", "stop mid-tool")
    make_session("fill-2", turns=5, statuses=["failed", "interrupted"])
    now = timezone.now()
    Event.objects.create(
        session_id="fill-2", turn_id="fill-2-t00000", role="assistant", author="a",
        tool_calls=[_call("c", "Read")], created_at=now, updated_at=now,
    )  # fmt: skip
    before = kept()
    TriageTally.objects.all().delete()
    TurnToolUse.objects.all().delete()
    with connection.cursor() as cursor:
        for statement in MIGRATION.FILL[connection.vendor]:
            cursor.execute(statement)
    assert kept() == before == recount()
