"""Starting/stopping turns from the page (admins only) and `manage.py run_turn`."""

from __future__ import annotations

import asyncio
from io import StringIO

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from sessions_app import live
from sessions_app.models import Event, Turn
from tests.factories import make_session
from tests.live.helpers import PageClient, turns_idle

pytestmark = pytest.mark.django_db(transaction=True)


def test_page_offers_the_message_box_to_admins_only(
    admin_client: Client, operator_user: User, client: Client
) -> None:
    make_session("s-page")
    body = admin_client.get(reverse("sessions:detail", args=["s-page"])).content.decode()
    assert 'id="run-form"' in body and 'id="stop-form"' in body and "live.js" in body
    assert 'hx-ext="ws" ws-connect="/ws/sessions/s-page/"' in body
    client.force_login(operator_user)
    body = client.get(reverse("sessions:detail", args=["s-page"])).content.decode()
    assert 'id="run-form"' not in body and "only admins can start or stop turns" in body


def test_htmx_posts_get_the_note_to_show_beside_the_form(admin_client: Client) -> None:
    make_session("s-note")
    htmx = {"HX-Request": "true"}
    run = admin_client.post(
        reverse("sessions:run_turn", args=["s-note"]), {"message": " "}, headers=htmx
    )
    assert run.status_code == 400
    assert run.content.decode() == "Write a message (at most 20,000 characters)."
    stop = admin_client.post(reverse("sessions:stop_turns", args=["s-note"]), headers=htmx)
    # Nothing runs in s-note: no "Stop requested." for a stop that asks nothing.
    assert (stop.status_code, stop.content.decode()) == (200, "Nothing is running.")


def test_operator_may_not_start_or_stop_turns(operator_client: Client) -> None:
    make_session("s-op")
    for name in ("sessions:run_turn", "sessions:stop_turns"):
        response = operator_client.post(reverse(name, args=["s-op"]), {"message": "hi"})
        assert response.status_code == 403
    assert not Turn.objects.filter(session_id="s-op", status="running").exists()


def test_outsider_gets_404_and_get_is_not_allowed(outsider_user: User, admin_user: User) -> None:
    make_session("s-out")
    url = reverse("sessions:run_turn", args=["s-out"])
    outsider, admin = Client(), Client()
    outsider.force_login(outsider_user)
    admin.force_login(admin_user)
    assert outsider.post(url, {"message": "hi"}).status_code == 404
    assert admin.get(url).status_code == 405


async def test_admin_starts_a_turn_that_runs_in_the_background(admin_user: User) -> None:
    await sync_to_async(make_session)("s-run")
    client = PageClient()
    await sync_to_async(client.force_login)(admin_user)
    url = reverse("sessions:run_turn", args=["s-run"])
    response = await client.post(url, {"message": "plan"}, headers={"Accept": "application/json"})
    assert response.status_code == 202
    turn_id = response.json()["turn_id"]
    await turns_idle("s-run")
    turn = await Turn.objects.aget(pk=turn_id)
    assert turn.status == "completed"
    assert await Event.objects.filter(turn_id=turn_id).acount() > 10
    empty = await client.post(url, {"message": "  "}, headers={"Accept": "application/json"})
    assert empty.status_code == 400
    plain = await client.post(url, {"message": "hang"})
    assert plain.status_code == 302 and plain["Location"].endswith("/sessions/s-run/#live")
    # One turn at a time: a second message while the hanging turn runs is refused.
    second = await client.post(url, {"message": "plan"}, headers={"Accept": "application/json"})
    assert second.status_code == 409 and "still running" in second.json()["error"]
    assert await Turn.objects.filter(session_id="s-run", status="running").acount() == 1
    stop = await client.post(reverse("sessions:stop_turns", args=["s-run"]))
    assert stop.status_code == 302
    await turns_idle("s-run")
    latest = await Turn.objects.filter(session_id="s-run").order_by("-started_at").afirst()
    assert latest is not None
    assert (latest.status, latest.reason) == ("interrupted", "canceled")
    assert latest.stopped_by == f"{admin_user.username} (page)"


def test_run_turn_command_prints_events_and_final_status() -> None:
    make_session("s-cmd")
    out = StringIO()
    call_command("run_turn", "s-cmd", "plan my day", stdout=out)
    text = out.getvalue()
    assert "[event " in text and "todos_write" in text and "demo answer" in text
    assert text.strip().splitlines()[-1].endswith(": completed")
    out = StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("run_turn", "s-cmd", "please fail", stdout=out)
    assert failed.value.returncode == 1
    assert "failed (agent_error) failure demo_provider_error at stage provider" in out.getvalue()
    with pytest.raises(CommandError) as missing:
        call_command("run_turn", "no-such", "hi", stdout=StringIO())
    assert missing.value.returncode == 2


async def test_live_turn_uses_recorded_tool_outcomes(admin_user: User) -> None:
    """A completed turn with an unanswered call blocks the session until an outcome is
    recorded; then a turn started from the page (the live runner) goes ahead."""
    from sessions_app.models import Session, ToolOutcome
    from sessions_app.outcomes import record_tool_outcome

    session = await sync_to_async(make_session)("s-outcome", events_per_turn=1)
    turn = await Turn.objects.aget(session_id="s-outcome")
    call = await Event.objects.acreate(
        session=session, turn_id=turn.id, role="assistant", created_at=turn.started_at,
        updated_at=turn.started_at, tool_calls=[{"id": "c-1", "name": "deploy", "arguments": {}}],
    )  # fmt: skip
    with pytest.raises(Exception, match="no result"):
        await live.run_turn("s-outcome", "hi", listen_for_cancel=False)
    await sync_to_async(record_tool_outcome)(
        await Session.objects.aget(pk="s-outcome"), event_id=call.id, call_id="c-1",
        outcome="did_not_run", result=None, reason="checked the deploy log", user=admin_user,
    )  # fmt: skip
    await live.run_turn("s-outcome", "plan", listen_for_cancel=False)
    latest = await Turn.objects.filter(session_id="s-outcome").order_by("-started_at").afirst()
    assert latest is not None and latest.status == "completed"
    assert await ToolOutcome.objects.acount() == 1


async def test_stopping_a_live_demo_turn_keeps_the_demo_running() -> None:
    from sessions_app.live import demo_live as live_demo

    async def stop_the_first_turn() -> None:
        async with asyncio.timeout(20):
            while not await Turn.objects.filter(session_id="s-demo").aexists():
                await asyncio.sleep(0.05)
        await live.request_stop("s-demo")

    await asyncio.gather(
        live_demo.keep_demo_live("s-demo", pause=0, turns=2, hold_off=0), stop_the_first_turn()
    )
    statuses = [
        (t.status, t.reason)
        async for t in Turn.objects.filter(session_id="s-demo").order_by("started_at")
    ]
    assert statuses == [("interrupted", "canceled"), ("completed", "")]
