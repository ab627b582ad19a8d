"""Runs of one session in different OS processes take turns (docs/runtime.md §2 run lock).

Real processes on the test database (SQLite file, or PostgreSQL with DATABASE_URL): a
daphne server running a turn started from the page, and `manage.py run_turn` beside it;
four `run_turn` processes at once. The agent (`tests.live.gated_agent`) holds each turn
open until the test opens the gate, after every other process has said it waits for the
run lock. Then: every turn completed, none abandoned while its process lived, each turn's
events stored in one block (no interleaving), one turn after another, and the session
can resume.
"""

from __future__ import annotations

import contextlib
import getpass
import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from django.contrib.auth.models import User

from sessions_app.models import Event, Session, Turn
from tests.factories import make_session
from tests.live.helpers import ROOT, DaphneServer, database_url_for_servers, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)

AGENT = "tests.live.gated_agent.make_agent"
WAITING = "is held by another run: waiting"


def wait_for(condition: Callable[[], object], what: str, timeout: float = 60) -> None:
    """Poll `condition` until it is true; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def gated_env(gate: Path) -> dict[str, str]:
    """Environment of a server or command process running the gated agent."""
    return {"AGENTOPS_AGENT": AGENT, "AGENTOPS_TEST_GATE": str(gate), "AGENTOPS_LIVE_DEMO": "false"}


def run_turn_process(
    session_id: str, gate: Path, name: str
) -> tuple[subprocess.Popen[str], Path, Path]:
    """`manage.py run_turn SESSION "from NAME"` in a process of its own; returns it and
    the files its stdout and stderr go to."""
    out, err = gate / f"{name}.out", gate / f"{name}.err"
    env = {
        **os.environ,
        **gated_env(gate),
        "DATABASE_URL": database_url_for_servers(),
        "DJANGO_SETTINGS_MODULE": "agentops.settings",
        "PYTHONFAULTHANDLER": "1",
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    process = subprocess.Popen(
        [sys.executable, "manage.py", "run_turn", session_id, f"from {name}"],
        cwd=ROOT, env=env, stdout=out.open("w"), stderr=err.open("w"), text=True,
        preexec_fn=_interactive_signals,
    )  # fmt: skip
    return process, out, err


def _interactive_signals() -> None:
    """In the child before exec: Ctrl-C as at a terminal. A shell without job control
    starts background commands (`.ci/run &`) with SIGINT ignored, every process below
    inherits that, and Python then leaves Ctrl-C ignored: run_turn would never see it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def post(server: DaphneServer, cookie: str, path: str, data: dict[str, str]) -> httpx.Response:
    """POST `data` as the signed-in user, with the CSRF token from the sessions list (a
    page that changes nothing)."""
    with httpx.Client(base_url=server.url, headers={"Cookie": cookie}, timeout=30) as client:
        listing = client.get("/sessions/")
        token = listing.cookies.get("csrftoken") or client.cookies.get("csrftoken")
        assert token, listing.status_code
        return client.post(
            path,
            data=data,
            headers={
                "Accept": "application/json",
                "X-CSRFToken": token,
                "Cookie": f"{cookie}; csrftoken={token}",
            },
        )


def assert_serialised(session_id: str, count: int) -> None:
    """`count` turns, all completed, one after another, each turn's events in one block."""
    turns = list(Turn.objects.filter(session_id=session_id).order_by("started_at", "id"))
    assert [(t.status, t.reason) for t in turns] == [("completed", "")] * count
    for before, after in itertools.pairwise(turns):
        assert before.finished_at is not None and after.started_at >= before.finished_at
    order = Event.objects.filter(session_id=session_id).order_by("id")
    blocks = [turn for turn, _ in itertools.groupby(order.values_list("turn_id", flat=True))]
    assert blocks == [t.id for t in turns], "events of two turns interleave"
    session = Session.objects.get(pk=session_id)
    assert not session.cannot_resume


def test_run_turn_beside_a_turn_started_from_the_page_waits_for_it(
    admin_user: User, tmp_path: Path
) -> None:
    make_session("s-beside", turns=0)
    with DaphneServer(gated_env(tmp_path)) as server:
        answer = post(
            server, session_cookie(admin_user), "/sessions/s-beside/run/", {"message": "hi"}
        )
        assert answer.status_code == 202, answer.text
        page_turn = answer.json()["turn_id"]
        wait_for(
            lambda: Event.objects.filter(turn_id=page_turn, role="assistant").exists(),
            "the page's turn to store its first event",
        )
        command, out, err = run_turn_process("s-beside", tmp_path, "shell")
        try:
            wait_for(lambda: WAITING in err.read_text(), "run_turn to wait for the run lock")
            # While it waits, the page's turn runs on, and nothing else began.
            assert list(Turn.objects.values_list("id", "status")) == [(page_turn, "running")]
            (tmp_path / "release").touch()
            assert command.wait(60) == 0, out.read_text() + err.read_text()
        finally:
            command.kill()
        wait_for(lambda: Turn.objects.get(pk=page_turn).status != "running", "the page's turn")
    assert "Waiting for turn " + page_turn in out.read_text()
    assert_serialised("s-beside", 2)


def test_four_run_turn_processes_on_one_session_run_one_after_another(tmp_path: Path) -> None:
    make_session("s-four", turns=0)
    processes = [run_turn_process("s-four", tmp_path, f"p{n}") for n in range(4)]
    try:
        wait_for(
            lambda: sum(WAITING in err.read_text() for _p, _o, err in processes) == 3,
            "three processes to wait for the run lock",
        )
        running = list(Turn.objects.filter(session_id="s-four").values_list("status", flat=True))
        assert running == ["running"]
        (tmp_path / "release").touch()
        for process, out, err in processes:
            assert process.wait(120) == 0, out.read_text() + err.read_text()
    finally:
        for process, _out, _err in processes:
            process.kill()
    assert not Turn.objects.filter(reason="abandoned").exists()
    assert_serialised("s-four", 4)


def test_ctrl_c_on_run_turn_cancels_the_turn_and_says_who_stopped_it(tmp_path: Path) -> None:
    make_session("s-ctrl-c", turns=0)
    command, out, err = run_turn_process("s-ctrl-c", tmp_path, "shell")
    try:
        wait_for(
            lambda: Event.objects.filter(session_id="s-ctrl-c", role="assistant").exists(),
            "the turn's first event",
        )
        command.send_signal(signal.SIGINT)
        try:
            code = command.wait(60)
        except subprocess.TimeoutExpired:
            command.send_signal(signal.SIGABRT)  # faulthandler: every thread's stack
            with contextlib.suppress(subprocess.TimeoutExpired):
                command.wait(10)
            pytest.fail("run_turn did not exit after Ctrl-C:\n" + out.read_text() + err.read_text())
        assert code == 1, out.read_text() + err.read_text()
    finally:
        command.kill()
    turn = Turn.objects.get(session_id="s-ctrl-c")
    assert (turn.status, turn.reason) == ("interrupted", "canceled")
    assert turn.stopped_by == f"{getpass.getuser()} (manage.py run_turn)"
    assert out.read_text().strip().splitlines()[-1] == f"turn {turn.id}: interrupted (canceled)"
