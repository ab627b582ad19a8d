"""Dead turns (docs/concepts.md "Stuck turns"): a running turn whose owner is gone is
recorded interrupted/abandoned at once (page load, run, Stop, a server's first call), under
the session's run lock; a turn whose owner is alive, or whose run lock is held, is left
alone; Stop is attributed and says when nothing was running."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agentops.runtime.session import Turn as RuntimeTurn
from sessions_app import live
from sessions_app.models import Session, Turn
from sessions_app.store import DjangoSessionService
from sessions_app.store.owner import HOST, owner_gone, pid_alive, renew_leases
from tests.factories import add_unanswered_call, make_session
from tests.live.helpers import PageClient, turns_idle

pytestmark = pytest.mark.django_db(transaction=True)


def _stop(client: Client, session_id: str, turn_id: str = "", status: int = 202) -> dict[str, Any]:
    response = client.post(
        reverse("sessions:stop_turns", args=[session_id]),
        {"turn_id": turn_id},
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == status, response.content
    answer: dict[str, Any] = response.json()
    return answer


def _dead_pid() -> int:
    """The pid of a process of this host that has exited (and was reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _own(turn: Turn, *, pid: int, host: str = HOST, lease: float = 60) -> None:
    Turn.objects.filter(pk=turn.pk).update(
        owner_host=host, owner_pid=pid, lease_until=timezone.now() + timedelta(seconds=lease)
    )


def test_stop_records_a_turn_nobody_runs_as_abandoned_at_once(admin_client: Client) -> None:
    # A session cut off mid-turn (no owner recorded, no run lock held).
    make_session("s-dead", turns=2, statuses=["completed", "running"])
    dead = Turn.objects.get(session_id="s-dead", status="running")

    answer = _stop(admin_client, "s-dead", dead.id)

    assert answer == {"running": [dead.id], "cancelled_here": 0, "abandoned": [dead.id]}
    dead.refresh_from_db()
    assert (dead.status, dead.reason) == ("interrupted", "abandoned")
    assert dead.finished_at is not None and dead.stopped_by == "ada-admin (page)"
    assert Turn.objects.get(session_id="s-dead", status="completed")  # untouched
    # A second stop finds nothing running, and says so.
    assert _stop(admin_client, "s-dead", status=200) == {
        "running": [],
        "cancelled_here": 0,
        "abandoned": [],
    }
    note = admin_client.post(
        reverse("sessions:stop_turns", args=["s-dead"]), headers={"HX-Request": "true"}
    )
    assert note.content.decode() == "Nothing is running."


async def test_stop_on_a_turn_whose_run_lock_is_held_only_requests_the_stop() -> None:
    session = await sync_to_async(make_session)("s-held", turns=1, statuses=["running"])
    service = live.LiveSessionService()
    async with service.run_lock(session.app_name, session.user_id, session.id):
        outcome = await live.stop_turns("s-held", by="ada-admin (page)")
        assert outcome == live.StopOutcome(running=["s-held-t00000"], cancelled_here=0)
        assert await live.recover_dead_turns("s-held", force=True) == []
    turn = await Turn.objects.aget(session_id="s-held")
    assert (turn.status, turn.stopped_by) == ("running", "ada-admin (page)")
    # With the lock free it goes.
    assert await live.recover_dead_turns("s-held", force=True) == [turn.id]


@pytest.mark.parametrize(
    "owner",
    ["dead pid on this host", "this pid, not running here", "lease lapsed elsewhere"],
)
def test_page_load_records_a_turn_whose_owner_is_gone(admin_client: Client, owner: str) -> None:
    make_session("s-gone", turns=1, statuses=["running"])
    turn = Turn.objects.get(session_id="s-gone")
    if owner == "dead pid on this host":
        _own(turn, pid=_dead_pid())
    elif owner == "this pid, not running here":  # a predecessor that had our pid
        _own(turn, pid=os.getpid())
    else:
        _own(turn, pid=1, host="elsewhere", lease=-1)

    assert admin_client.get(reverse("sessions:detail", args=["s-gone"])).status_code == 200

    turn.refresh_from_db()
    assert (turn.status, turn.reason) == ("interrupted", "abandoned")


def test_page_load_leaves_a_turn_with_a_live_owner_alone(admin_client: Client) -> None:
    make_session("s-alive", turns=2, statuses=["running", "completed"])
    turn = Turn.objects.get(session_id="s-alive", status="running")
    with subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                          stdin=subprocess.PIPE) as owner:  # fmt: skip
        _own(turn, pid=owner.pid)
        admin_client.get(reverse("sessions:detail", args=["s-alive"]))
        assert live.dead_turn_ids("s-alive") == []
        owner.communicate(b"")
    turn.refresh_from_db()
    assert turn.status == "running"
    # Its owner has exited: the next page load records it.
    admin_client.get(reverse("sessions:detail", args=["s-alive"]))
    turn.refresh_from_db()
    assert (turn.status, turn.reason) == ("interrupted", "abandoned")


async def test_a_turn_whose_owner_is_gone_does_not_block_a_new_message(admin_user: User) -> None:
    await sync_to_async(make_session)("s-block", turns=1, statuses=["running"])
    turn = await Turn.objects.aget(session_id="s-block")
    # Recent activity, so not stuck: before owners were recorded this refused with 409.
    await Turn.objects.filter(pk=turn.pk).aupdate(started_at=timezone.now())
    await sync_to_async(_own)(turn, pid=_dead_pid())
    client = PageClient()
    await sync_to_async(client.force_login)(admin_user)
    response = await client.post(
        reverse("sessions:run_turn", args=["s-block"]),
        {"message": "please fail"},
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 202, response.content
    # The new turn runs to its end (the demo's "fail": a provider failure) on this loop.
    await turns_idle("s-block")
    await turn.arefresh_from_db()
    assert (turn.status, turn.reason) == ("interrupted", "abandoned")
    new = await Turn.objects.aget(pk=response.json()["turn_id"])
    assert new.status == "failed"


def test_owner_gone_rules() -> None:
    now = timezone.now()
    soon, past = now + timedelta(seconds=10), now - timedelta(seconds=1)
    assert not owner_gone(HOST, 1, soon, now=now, runs_here=False)  # pid 1 lives
    assert owner_gone(HOST, 1, past, now=now, runs_here=False)  # lease lapsed
    assert owner_gone(HOST, os.getpid(), soon, now=now, runs_here=False)
    assert not owner_gone(HOST, os.getpid(), past, now=now, runs_here=True)
    assert not owner_gone("elsewhere", 999_999_999, soon, now=now, runs_here=False)
    assert not owner_gone("", None, None, now=now, runs_here=False)  # imported: not known
    assert pid_alive(os.getpid()) and not pid_alive(_dead_pid())


async def test_begin_turn_records_the_owner_and_the_run_renews_its_lease() -> None:
    await sync_to_async(make_session)("s-owner", turns=0)
    service = DjangoSessionService()
    started = timezone.now()
    turn = RuntimeTurn(id="t-own", session_id="s-owner", started_at=started)
    await service.begin_turn("s-owner", turn)
    row = await Turn.objects.aget(pk="t-own")
    assert (row.owner_host, row.owner_pid) == (HOST, os.getpid())
    assert row.lease_until is not None and row.lease_until > started
    await Turn.objects.filter(pk="t-own").aupdate(lease_until=started)
    assert await sync_to_async(renew_leases)(["t-own"]) == 1
    renewed = await Turn.objects.aget(pk="t-own")
    assert renewed.lease_until is not None and renewed.lease_until > started


async def test_recover_everywhere_records_only_turns_whose_owner_is_gone() -> None:
    for name in ("s-a", "s-b", "s-c"):
        await sync_to_async(make_session)(name, turns=1, statuses=["running"])
    now = timezone.now()
    dead = await sync_to_async(_dead_pid)()
    await Turn.objects.filter(session_id="s-a").aupdate(
        owner_host=HOST, owner_pid=dead, lease_until=now + timedelta(seconds=60)
    )
    await Turn.objects.filter(session_id="s-b").aupdate(
        owner_host=HOST, owner_pid=1, lease_until=now + timedelta(seconds=60)
    )  # alive; s-c has no owner recorded (imported): left to Stop and the next run
    assert await live.recover_everywhere() == ["s-a-t00000"]
    statuses = {t.session_id: t.status async for t in Turn.objects.all()}
    assert statuses == {"s-a": "interrupted", "s-b": "running", "s-c": "running"}


def test_abandoning_refreshes_the_resume_status(admin_client: Client) -> None:
    make_session("s-open", turns=1, statuses=["running"])
    turn = Turn.objects.get(session_id="s-open")
    add_unanswered_call(turn)
    _stop(admin_client, "s-open")
    session = Session.objects.get(pk="s-open")
    # The unanswered call is an open issue; the abandoned turn is cut before it, so the
    # session can resume.
    assert (session.protocol_issue_count, session.cannot_resume) == (1, False)
