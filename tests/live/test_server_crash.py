"""A server stopped during a turn (SIGKILL, SIGTERM) leaves no turn blocking the session
(docs/concepts.md "Stuck turns"): once a server is back, the dead turn is recorded
interrupted/abandoned at once and the page accepts a new message; *Stop* through another
server records a dead server's turn at once. Real daphne processes on the test database.
"""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import pytest
from django.contrib.auth.models import User

from sessions_app.models import Event, Turn
from tests.factories import make_session
from tests.live.helpers import DaphneServer, session_cookie
from tests.live.test_run_lock_processes import gated_env, post, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _start_turn(server: DaphneServer, cookie: str, session_id: str) -> str:
    """Start a turn of the gated agent from the page; return its id once it has stored
    its first event (it then waits at the gate)."""
    answer = post(server, cookie, f"/sessions/{session_id}/run/", {"message": "hi"})
    assert answer.status_code == 202, answer.text
    turn_id: str = answer.json()["turn_id"]
    wait_for(
        lambda: Event.objects.filter(turn_id=turn_id, role="assistant").exists(),
        "the turn's first event",
    )
    return turn_id


def _kill(server: DaphneServer, how: signal.Signals) -> None:
    assert server.process is not None
    server.process.send_signal(how)
    server.process.wait(30)  # reaped: its pid is gone


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_after_a_server_stops_mid_turn_the_restarted_page_takes_a_new_message(
    admin_user: User, tmp_path: Path, how: signal.Signals
) -> None:
    make_session("s-crash", turns=0)
    cookie = session_cookie(admin_user)
    with DaphneServer(gated_env(tmp_path)) as doomed:
        dead = _start_turn(doomed, cookie, "s-crash")
        _kill(doomed, how)
    assert Turn.objects.get(pk=dead).status == "running"  # nobody finalised it

    with DaphneServer(gated_env(tmp_path)) as server:
        with httpx.Client(base_url=server.url, headers={"Cookie": cookie}) as client:
            assert client.get("/sessions/s-crash/").status_code == 200
        turn = Turn.objects.get(pk=dead)
        assert (turn.status, turn.reason) == ("interrupted", "abandoned")
        answer = post(server, cookie, "/sessions/s-crash/run/", {"message": "again"})
        assert answer.status_code == 202, answer.text
        (tmp_path / "release").touch()
        fresh = answer.json()["turn_id"]
        wait_for(lambda: Turn.objects.get(pk=fresh).status != "running", "the new turn")
        assert Turn.objects.get(pk=fresh).status == "completed"


def test_stop_through_a_live_server_records_a_dead_servers_turn_at_once(
    admin_user: User, tmp_path: Path
) -> None:
    make_session("s-stop-dead", turns=0)
    cookie = session_cookie(admin_user)
    with DaphneServer(gated_env(tmp_path)) as survivor:
        # The survivor has served already: its start-up recovery is behind it.
        with httpx.Client(base_url=survivor.url, headers={"Cookie": cookie}) as client:
            assert client.get("/sessions/").status_code == 200
        with DaphneServer(gated_env(tmp_path)) as doomed:
            dead = _start_turn(doomed, cookie, "s-stop-dead")
            _kill(doomed, signal.SIGKILL)

        answer = post(survivor, cookie, "/sessions/s-stop-dead/stop/", {})

    assert answer.status_code == 202, answer.text
    assert answer.json() == {"running": [dead], "cancelled_here": 0, "abandoned": [dead]}
    turn = Turn.objects.get(pk=dead)
    assert (turn.status, turn.reason) == ("interrupted", "abandoned")
    assert turn.stopped_by == f"{admin_user.username} (page)"


def test_a_restarted_server_records_dead_turns_on_its_first_call(
    admin_user: User, tmp_path: Path
) -> None:
    make_session("s-first-call", turns=0)
    cookie = session_cookie(admin_user)
    with DaphneServer(gated_env(tmp_path)) as doomed:
        dead = _start_turn(doomed, cookie, "s-first-call")
        _kill(doomed, signal.SIGKILL)
    with DaphneServer(gated_env(tmp_path)) as server:
        # Any first call (here the sessions list, not the session's page) starts recovery.
        with httpx.Client(base_url=server.url, headers={"Cookie": cookie}) as client:
            assert client.get("/sessions/").status_code == 200
        wait_for(lambda: Turn.objects.get(pk=dead).status != "running", "start-up recovery")
    assert Turn.objects.get(pk=dead).reason == "abandoned"
