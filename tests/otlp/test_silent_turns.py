"""OTLP turns whose trace goes silent: a running turn that receives no span for
AGENTOPS_STUCK_AFTER_SECONDS (its exporter's lease lapsed) is recorded
interrupted/abandoned, its open tool call a dangling call; a turn of the same session
still receiving spans keeps running; spans arriving again make a turn running again."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from sessions_app import models
from sessions_app.otlp.landing import OWNER_HOST
from sessions_app.store.owner import gone_running_turns
from tests.otlp.agent_spans import OpenTurn
from tests.otlp.conftest import OtlpPoster


def _turn(name: str) -> Any:
    return models.Turn.objects.get(pk=f"shared/{name}")


def _lapse_lease(turn_id: str) -> None:
    """As if its trace had sent nothing for longer than the stuck threshold."""
    models.Turn.objects.filter(pk=turn_id).update(lease_until=timezone.now() - timedelta(seconds=1))


def test_a_silent_turn_with_an_open_call_is_abandoned_alone(poster: OtlpPoster) -> None:
    silent, busy = OpenTurn("silent"), OpenTurn("busy")
    assert poster.post(silent.batch()).status_code == 200
    assert poster.post(busy.batch()).status_code == 200
    turn = _turn("silent")
    assert turn.status == "running" and (turn.owner_host, turn.owner_pid) == (OWNER_HOST, 0)
    assert turn.lease_until is not None and turn.lease_until > timezone.now()
    assert gone_running_turns() == []

    _lapse_lease(turn.id)  # the page's dead-turn recovery sees it gone too
    assert gone_running_turns() == [("shared", turn.id)]
    busy.tool_answers()
    assert poster.post(busy.batch()).status_code == 200  # any batch sweeps silent turns

    turn.refresh_from_db()
    assert (turn.status, turn.reason) == ("interrupted", "abandoned")
    assert turn.finished_at is not None
    assert _turn("busy").status == "running"
    session = models.Session.objects.get(pk="shared")
    assert session.protocol_issue_count == 1  # the silent turn's call, never answered


def test_spans_arriving_again_make_an_abandoned_turn_running(poster: OtlpPoster) -> None:
    late = OpenTurn("late")
    assert poster.post(late.batch()).status_code == 200
    _lapse_lease("shared/late")
    assert poster.post(OpenTurn("other").batch()).status_code == 200
    assert _turn("late").status == "interrupted"
    late.tool_answers()
    assert poster.post(late.batch()).status_code == 200
    turn = _turn("late")
    assert (turn.status, turn.reason, turn.finished_at) == ("running", "", None)
    assert turn.lease_until is not None and turn.lease_until > timezone.now()
    late.root.end()
    assert poster.post(late.batch()).status_code == 200
    assert _turn("late").status == "completed"


def test_spans_after_a_stop_clear_its_mark(poster: OtlpPoster) -> None:
    """*Stop* records an OTLP turn interrupted/abandoned (no process here can stop its
    agent) and notes who asked; spans that arrive after it show the agent went on: the
    turn runs again, then completes, without the stop's mark."""
    turn = OpenTurn("stopped")
    assert poster.post(turn.batch()).status_code == 200
    models.Turn.objects.filter(pk="shared/stopped").update(  # what Stop leaves
        status="interrupted", reason="abandoned", stopped_by="admin (page)"
    )
    turn.tool_answers()
    assert poster.post(turn.batch()).status_code == 200
    row = _turn("stopped")
    assert (row.status, row.reason, row.stopped_by) == ("running", "", "")
    turn.answers("done")
    turn.root.end()
    assert poster.post(turn.batch()).status_code == 200
    row = _turn("stopped")
    assert (row.status, row.stopped_by) == ("completed", "")
