"""How long a tool call took, on the session page: from the call's event to its result's
event, or to the outcome a person recorded; never for a source that records no times."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from pytest_django import DjangoAssertNumQueries

from sessions_app.models import Event, Session, ToolOutcome, Turn
from tests.factories import BASE, make_session

pytestmark = pytest.mark.django_db


def call(session: Session, turn: Turn, call_id: str, seconds: float) -> Event:
    when = BASE + timedelta(seconds=seconds)
    return Event.objects.create(
        session=session,
        turn_id=turn.id,
        role="assistant",
        tool_calls=[{"id": call_id, "name": "shell", "arguments": {"command": "ls"}}],
        created_at=when,
        updated_at=when,
    )


def result(session: Session, turn: Turn, call_id: str, seconds: float) -> Event:
    when = BASE + timedelta(seconds=seconds)
    return Event.objects.create(
        session=session,
        turn_id=turn.id,
        role="tool",
        tool_call_id=call_id,
        tool_response={"tool_call_id": call_id, "name": "shell", "result": "ok"},
        created_at=when,
        updated_at=when,
    )


def events_html(client: Client, session: Session, turn: Turn) -> str:
    url = reverse("sessions:turn_events", args=[session.id, turn.id])
    return client.get(url, headers={"HX-Request": "true"}).content.decode()


def test_a_call_shows_the_time_to_its_result_or_to_the_recorded_outcome(
    operator_client: Client,
) -> None:
    session = make_session("s-d", events_per_turn=0)
    turn = session.turns.get()
    call(session, turn, "c-fast", 10)
    result(session, turn, "c-fast", 13.5)
    call(session, turn, "c-slow", 20)
    result(session, turn, "c-slow", 20 + 185)
    backwards = call(session, turn, "c-back", 300)
    result(session, turn, "c-back", 299)  # a clock that ran backwards reads 0
    open_call = call(session, turn, "c-open", 400)
    ToolOutcome.objects.create(
        session=session,
        event=open_call,
        call_id="c-open",
        tool_name="shell",
        outcome="did_not_run",
        reason="the host was down",
        recorded_at=open_call.created_at + timedelta(minutes=7),
    )
    call(session, turn, "c-none", 500)  # no result, no outcome: no duration
    html = events_html(operator_client, session, turn)
    assert ">took 3.5 s</span>" in html
    assert ">took 3 min 5 s</span>" in html
    assert ">took 0.0 s</span>" in html and backwards.id
    assert ">recorded after 7 min 0 s</span>" in html
    assert html.count('class="call-duration') == 4


def test_no_duration_for_a_source_without_times(operator_client: Client) -> None:
    session = make_session("s-untimed", events_per_turn=0)
    Session.objects.filter(pk=session.pk).update(source_format="openai_chat")
    session.refresh_from_db()
    turn = session.turns.get()
    call(session, turn, "c1", 0)
    result(session, turn, "c1", 1)
    assert "call-duration" not in events_html(operator_client, session, turn)
    page = operator_client.get(reverse("sessions:detail", args=[session.id])).content.decode()
    assert 'id="untimed-note"' in page and " · took " not in page


@pytest.mark.parametrize("calls", [1, 40])
def test_turn_events_query_count_does_not_grow_with_calls(
    operator_client: Client, django_assert_num_queries: DjangoAssertNumQueries, calls: int
) -> None:
    session = make_session("s-q", events_per_turn=0)
    turn = session.turns.get()
    for i in range(calls):
        call(session, turn, f"c{i}", i)
        result(session, turn, f"c{i}", i + 0.5)
    url = reverse("sessions:turn_events", args=[session.id, turn.id])
    # auth session, user, user perms, group perms, session, turn, events, compactions,
    # recorded outcomes
    with django_assert_num_queries(9):
        response = operator_client.get(url, headers={"HX-Request": "true"})
    assert response.content.decode().count(">took 0.5 s</span>") == calls
