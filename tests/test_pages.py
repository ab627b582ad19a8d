"""Sessions list and session page: rendering, filters, query counts, sanitising."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from pytest_django import DjangoAssertNumQueries, Settings

from sessions_app.models import Event, Turn
from tests.factories import add_unanswered_call, make_session

pytestmark = pytest.mark.django_db


def test_anonymous_is_sent_to_login(client: Client) -> None:
    response = client.get(reverse("sessions:list"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_login_page_renders(client: Client) -> None:
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b"Sign in to agentops" in response.content


def test_user_without_role_gets_403_on_list_and_404_on_session(outsider_client: Client) -> None:
    make_session("s-hidden")
    assert outsider_client.get(reverse("sessions:list")).status_code == 403
    assert outsider_client.get(reverse("sessions:detail", args=["s-hidden"])).status_code == 404


def test_list_shows_summary_columns(operator_client: Client) -> None:
    make_session(
        "s-a",
        turns=3,
        statuses=["completed", "failed"],
        todos=[{"content": "one", "status": "completed"}, {"content": "two", "status": "pending"}],
    )
    body = operator_client.get(reverse("sessions:list")).content.decode()
    assert "Session s-a" in body
    assert "status-completed" in body  # latest of 3 turns: completed, failed, completed
    assert "1/2" in body


def test_list_filters_by_latest_status_app_and_text(operator_client: Client) -> None:
    make_session("s-ok", app="alpha", statuses=["completed"])
    make_session("s-bad", app="beta", statuses=["failed"])
    url = reverse("sessions:list")
    assert "s-bad" in operator_client.get(url, {"status": "failed"}).content.decode()
    assert "s-ok" not in operator_client.get(url, {"status": "failed"}).content.decode()
    assert "s-bad" not in operator_client.get(url, {"app": "alpha"}).content.decode()
    assert "s-ok" in operator_client.get(url, {"q": "S-O"}).content.decode()


def test_list_htmx_request_gets_only_the_results_fragment(operator_client: Client) -> None:
    make_session("s-a")
    response = operator_client.get(
        reverse("sessions:list"), headers={"HX-Request": "true", "HX-Target": "session-results"}
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="session-results">')
    assert "<html" not in body


@pytest.mark.parametrize("count", [1, 40])
def test_list_query_count_does_not_grow_with_sessions(
    operator_client: Client, django_assert_num_queries: DjangoAssertNumQueries, count: int
) -> None:
    for i in range(count):
        make_session(f"s-{i}", turns=3)
    # auth session, user, user perms, group perms, count, page rows, app names
    with django_assert_num_queries(7):
        assert operator_client.get(reverse("sessions:list")).status_code == 200


@pytest.mark.parametrize("turns,events", [(1, 2), (60, 50)])
def test_session_page_query_count_does_not_grow_with_turns_or_events(
    operator_client: Client,
    django_assert_num_queries: DjangoAssertNumQueries,
    turns: int,
    events: int,
) -> None:
    make_session(
        "s-big", turns=turns, events_per_turn=events, todos=[{"content": "x", "status": "pending"}]
    )
    # auth session, user, perms x2, session+todo list, todo items, turn count, turns page,
    # last event id (where the live stream resumes), running turns whose owner is gone, the
    # sub-agents list (token totals and legacy events: kept on the session row)
    with django_assert_num_queries(11):
        response = operator_client.get(reverse("sessions:detail", args=["s-big"]))
    assert response.status_code == 200


def test_session_page_shows_turn_failure_code_and_stage(operator_client: Client) -> None:
    make_session("s-f", statuses=["failed"])
    body = operator_client.get(reverse("sessions:detail", args=["s-f"])).content.decode()
    assert "provider_error" in body and "status-failed" in body


def test_turn_events_render_markdown_and_keep_script_inert(operator_client: Client) -> None:
    make_session("s-x", text="**bold** <script>alert(1)</script> <img src=x onerror=alert(1)>")
    turn = Turn.objects.get(session_id="s-x")
    body = operator_client.get(
        reverse("sessions:turn_events", args=["s-x", turn.id]), headers={"HX-Request": "true"}
    ).content.decode()
    assert "<strong>bold</strong>" in body
    assert "<script>alert(1)" not in body and "&lt;script&gt;" in body
    assert "<img src=x onerror" not in body and '<img src="x"' not in body


def test_turn_events_pair_tool_calls_with_results_and_mark_unanswered(
    operator_client: Client,
) -> None:
    session = make_session("s-t", events_per_turn=1)
    turn = Turn.objects.get(session=session)
    when = turn.started_at
    Event.objects.create(
        session=session,
        turn_id=turn.id,
        role="assistant",
        created_at=when,
        updated_at=when,
        tool_calls=[
            {"id": "c1", "name": "read_file", "arguments": {"path": "a"}},
            {"id": "c2", "name": "bash", "arguments": {"cmd": "ls"}},
        ],
    )
    Event.objects.create(
        session=session,
        turn_id=turn.id,
        role="tool",
        created_at=when,
        updated_at=when,
        tool_response={"tool_call_id": "c1", "name": "read_file", "result": "contents of a"},
    )
    body = operator_client.get(
        reverse("sessions:turn_events", args=["s-t", turn.id]), headers={"HX-Request": "true"}
    ).content.decode()
    assert "contents of a" in body
    assert body.count("no result") == 1  # c2 only
    assert "no matching call in view" not in body


def test_turn_events_are_keyset_paginated(operator_client: Client, settings: Settings) -> None:
    settings.AGENTOPS_EVENTS_PER_TURN_PAGE = 10
    make_session("s-p", events_per_turn=25)
    turn = Turn.objects.get(session_id="s-p")
    url = reverse("sessions:turn_events", args=["s-p", turn.id])
    first = operator_client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert first.count('class="event ') == 10 and "?after=" in first
    last_id = Event.objects.filter(session_id="s-p").order_by("id")[19].id
    third = operator_client.get(
        url, {"after": last_id}, headers={"HX-Request": "true"}
    ).content.decode()
    assert third.count('class="event ') == 5 and "?after=" not in third


def test_raw_json_of_an_event(operator_client: Client) -> None:
    make_session("s-r")
    event = Event.objects.filter(session_id="s-r").first()
    assert event is not None
    response = operator_client.get(reverse("sessions:event_raw", args=["s-r", event.id]))
    assert response.json()["event"]["id"] == event.id
    htmx = operator_client.get(
        reverse("sessions:event_raw", args=["s-r", event.id]), headers={"HX-Request": "true"}
    )
    assert htmx.content.decode().startswith('<pre class="json raw">')


def test_unknown_session_is_404(operator_client: Client) -> None:
    assert operator_client.get(reverse("sessions:detail", args=["nope"])).status_code == 404


def test_a_huge_message_is_cut_on_the_page_not_in_raw_json(operator_client: Client) -> None:
    """A 2 MB message (a first user pasted one) must not make its turn unreadable."""
    make_session("s-huge", turns=1, events_per_turn=1, text="word " * 400_000)
    turn = Turn.objects.get(session_id="s-huge")
    page = operator_client.get(reverse("sessions:turn_events", args=["s-huge", turn.id]))
    body = page.content.decode()
    assert page.status_code == 200
    assert len(body) < 120_000
    assert "1,950,004 more characters not shown here" in body
    event = Event.objects.get(session_id="s-huge")
    raw = operator_client.get(reverse("sessions:event_raw", args=["s-huge", event.id]))
    assert len(raw.content) > 2_000_000


@pytest.mark.parametrize(
    ("status", "badge", "style"),
    [("running", "running…", "is-inflight"), ("interrupted", "no result", "is-unanswered")],
)
def test_a_call_without_result_is_in_flight_only_while_its_turn_runs(
    operator_client: Client, status: str, badge: str, style: str
) -> None:
    make_session("s-call", turns=1, events_per_turn=1, statuses=[status])
    turn = Turn.objects.get(session_id="s-call")
    add_unanswered_call(turn, "call-9", "Bash")
    body = operator_client.get(
        reverse("sessions:turn_events", args=["s-call", turn.id])
    ).content.decode()
    assert f'tool-call {style}"' in body and f">{badge}</span>" in body
    other = {"running…", "no result"} - {badge}
    assert f">{other.pop()}</span>" not in body
