"""A decision on a call awaiting a person continues the turn of the dashboard's agent
(issue 16, item 1): the demo agent's "deploy" asks for approval; approving or rejecting it
from the page records the decision and starts the continuation turn in this process
(`Runner.resume`); on an imported session the decision is only recorded."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.urls import reverse

from sessions_app.models import Event, Session, ToolOutcome, Turn
from sessions_app.store import refresh_resume_status
from tests.factories import make_session
from tests.live.helpers import PageClient, turns_idle

pytestmark = pytest.mark.django_db(transaction=True)


async def _asked_to_deploy(client: PageClient, session_id: str) -> Event:
    """Run the demo agent's "deploy" turn from the page; return its asking event."""
    await sync_to_async(make_session)(session_id)
    run = reverse("sessions:run_turn", args=[session_id])
    answer = await client.post(
        run, {"message": "please deploy"}, headers={"Accept": "application/json"}
    )
    assert answer.status_code == 202
    await turns_idle(session_id)
    asking = await Event.objects.filter(session_id=session_id).exclude(pending_call_ids=[]).aget()
    assert asking.tool_calls[0]["name"] == "deploy"
    assert asking.pending_call_ids == [asking.tool_calls[0]["id"]]
    assert (await Session.objects.aget(pk=session_id)).cannot_resume
    return asking


async def _decide(client: PageClient, asking: Event, outcome: str, note: str) -> str:
    """Post the decision from the timeline's form; return the message the page shows."""
    url = reverse("sessions:tool_outcome_create", args=[asking.session_id])
    form = {
        "event_id": str(asking.id),
        "call_id": asking.tool_calls[0]["id"],
        "outcome": outcome,
        "reason": note,
        "return_to": "timeline",
    }
    posted = await client.post(url, form)
    assert posted.status_code == 302
    await turns_idle(asking.session_id)
    page = await client.get(reverse("sessions:detail", args=[asking.session_id]))
    return page.content.decode()


async def _continuation(session_id: str, asking: Event) -> tuple[Turn, list[Event]]:
    turns = [t async for t in Turn.objects.filter(session_id=session_id).order_by("started_at")]
    assert len(turns) == 3 and turns[1].id == asking.turn_id  # the fixture's, asking, continuing
    events = [e async for e in Event.objects.filter(turn_id=turns[2].id).order_by("id")]
    return turns[2], events


async def test_approving_a_deploy_continues_the_turn_with_the_decision(admin_user: User) -> None:
    client = PageClient()
    await sync_to_async(client.force_login)(admin_user)
    asking = await _asked_to_deploy(client, "s-deploy")
    page = await _decide(client, asking, "approved", "go ahead")
    assert "Approved. The agent continues the turn with your decision." in page
    turn, events = await _continuation("s-deploy", asking)
    assert turn.status == "completed"
    assert [e.role for e in events] == ["assistant"]  # no user event: a continuation
    text = events[0].text
    assert f"Approved by {admin_user.username} (note: go ahead)" in text
    assert "Deployed **demo-app** to **staging**: release `rel-" in text
    outcome = await ToolOutcome.objects.select_related("recorded_by").aget(event_id=asking.id)
    assert (outcome.outcome, outcome.recorded_by) == ("approved", admin_user)
    assert await Event.objects.filter(
        pk=asking.id, pending_call_ids=asking.pending_call_ids
    ).aexists()
    assert not (await Session.objects.aget(pk="s-deploy")).cannot_resume


async def test_rejecting_a_deploy_makes_the_agent_say_it_did_not(admin_user: User) -> None:
    client = PageClient()
    await sync_to_async(client.force_login)(admin_user)
    asking = await _asked_to_deploy(client, "s-reject")
    page = await _decide(client, asking, "rejected", "not on a Friday")
    assert "Rejected. The agent continues the turn with your decision." in page
    turn, events = await _continuation("s-reject", asking)
    assert turn.status == "completed" and [e.role for e in events] == ["assistant"]
    assert events[0].text.startswith("I did not deploy **demo-app** to **staging**: ")
    assert "rejected" in events[0].text and "not on a Friday" in events[0].text
    assert "Deployed" not in events[0].text


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("claude_code", "Approved. Recorded only: this session was imported (Claude Code JSONL)"),
        ("demo", "Approved. The agent did not continue: its last turn did not end waiting"),
    ],
    ids=["imported", "interrupted-demo"],
)
async def test_a_decision_that_cannot_continue_runs_no_agent(
    admin_user: User, source: str, said: str
) -> None:
    """An imported session only records the decision; a session of the dashboard whose
    asking turn was interrupted (the demo data's refund) is not continued either: its
    context ends with the turn's status notice, not the decision (`NothingToContinueError`)."""
    session = await sync_to_async(make_session)("s-imported", events_per_turn=1)
    await Session.objects.filter(pk="s-imported").aupdate(source_format=source)
    turn = await Turn.objects.aget(session_id="s-imported")
    await Turn.objects.filter(pk=turn.id).aupdate(status="interrupted", reason="consumer_stopped")
    asking = await Event.objects.acreate(
        session=session, turn_id=turn.id, role="assistant", created_at=turn.started_at,
        updated_at=turn.started_at, pending_call_ids=["c-plan"],
        tool_calls=[{"id": "c-plan", "name": "ExitPlanMode", "arguments": {}}],
    )  # fmt: skip
    client = PageClient()
    await sync_to_async(client.force_login)(admin_user)
    page = await _decide(client, asking, "approved", "")
    assert said in page
    assert await ToolOutcome.objects.filter(event_id=asking.id, outcome="approved").aexists()
    assert await Turn.objects.filter(session_id="s-imported").acount() == 1
    assert await Event.objects.filter(session_id="s-imported").acount() == 2


async def test_what_became_of_a_lost_call_starts_nothing_and_says_the_agent_may_go_on(
    admin_user: User,
) -> None:
    """A call awaiting no one gets "did not run": nothing continues by itself, and the
    message (read from the refreshed session) says the next message goes ahead."""
    session = await sync_to_async(make_session)("s-lost", events_per_turn=1)
    turn = await Turn.objects.aget(session_id="s-lost")
    lost = await Event.objects.acreate(
        session=session, turn_id=turn.id, role="assistant", created_at=turn.started_at,
        updated_at=turn.started_at, tool_calls=[{"id": "c-1", "name": "deploy", "arguments": {}}],
    )  # fmt: skip
    await sync_to_async(refresh_resume_status)("s-lost")
    assert (await Session.objects.aget(pk="s-lost")).cannot_resume
    client = PageClient()
    await sync_to_async(client.force_login)(admin_user)
    page = await _decide(client, lost, "did_not_run", "checked the deploy log")
    assert "Send the agent the next message to continue the session." in page
    assert await Turn.objects.filter(session_id="s-lost").acount() == 1
