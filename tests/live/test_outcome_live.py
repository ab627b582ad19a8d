"""Watchers see a recorded outcome at once (``live.outcome``): the call is shown again
with the outcome beside it, in place of "awaiting the user" or "no result"."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from sessions_app.models import Event, Session, Turn
from sessions_app.outcomes import record_tool_outcome
from tests.factories import add_unanswered_call, make_session
from tests.live.helpers import communicator, receive_until, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)


def _dangling(pending: bool) -> Event:
    make_session("s-out", turns=1, statuses=["interrupted"])
    event = add_unanswered_call(Turn.objects.get(session_id="s-out"), "call-7", "Deploy")
    if pending:
        Event.objects.filter(pk=event.pk).update(pending_call_ids=["call-7"])
    return event


@pytest.mark.parametrize(
    ("outcome", "reason", "shown"),
    [("did_not_run", "the host was down", "Did not run"), ("approved", "", "Approved")],
)
async def test_a_recorded_outcome_reaches_every_watcher_in_place_of_the_call(
    admin_user: User, outcome: str, reason: str, shown: str
) -> None:
    event = await sync_to_async(_dangling)(pending=outcome == "approved")
    comm = communicator("s-out", await sync_to_async(session_cookie)(admin_user), after=0)
    connected, code = await comm.connect()
    assert connected, code
    try:
        await receive_until(comm, lambda frame: frame["kind"] == "hello")
        session = await Session.objects.aget(pk="s-out")
        await sync_to_async(record_tool_outcome)(
            session, event_id=event.id, call_id="call-7", outcome=outcome, result=None,
            reason=reason, user=admin_user,
        )  # fmt: skip
        frames = await receive_until(comm, lambda frame: frame["kind"] == "outcome")
    finally:
        await comm.disconnect()
    html = frames[-1]["html"]
    assert frames[-1]["event_id"] == event.id
    assert f'id="call-{event.id}-1" hx-swap-oob="true"' in html
    assert shown in html and f"recorded by <strong>{admin_user.username}</strong>" in html
    assert "awaiting the user" not in html and "no result" not in html
    assert "decide-form" not in html
