"""Find within one session (GET /sessions/<id>/find/?q=), on SQLite and PostgreSQL: the
session's events holding the words, with where (an excerpt, the words marked) and links
to the turn on the timeline; nothing of other sessions or of abandoned branches."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from pytest_django import DjangoAssertNumQueries, Settings

from sessions_app.models import Event, Session, Turn
from sessions_app.pages.snippets import snippet, words_pattern
from tests.factories import BASE, make_session

pytestmark = pytest.mark.django_db


def url(session_id: str) -> str:
    return reverse("sessions:find", args=[session_id])


def add(session: Session, turn: Turn, **fields: object) -> Event:
    return Event.objects.create(
        session=session, turn_id=turn.id, created_at=BASE, updated_at=BASE, **fields
    )


@pytest.fixture
def order() -> Session:
    """A session whose message, tool argument and tool result hold 88231, and whose
    abandoned branch does too; another session holds it as well."""
    session = make_session("s-order", turns=3, text="nothing to see")
    turn = session.turns.order_by("started_at").last()
    assert turn is not None
    add(session, turn, role="user", text="Where is my <b>order</b> 88231? " + "x " * 200)
    add(
        session,
        turn,
        role="assistant",
        tool_calls=[{"id": "c1", "name": "lookup_order", "arguments": {"order_id": "88231"}}],
    )
    add(
        session,
        turn,
        role="tool",
        tool_call_id="c1",
        tool_response={"tool_call_id": "c1", "name": "lookup_order", "result": "88231: shipped"},
    )
    add(session, turn, role="user", text="88231 again", archived_at=BASE)
    other = make_session("s-other", text="order 88231 elsewhere")
    assert other.pk
    return session


def test_finds_message_argument_and_result_of_this_session_only(
    operator_client: Client, order: Session
) -> None:
    response = operator_client.get(url("s-order"), {"q": "88231"})
    assert response.status_code == 200
    found = response.context["found"]
    assert [f.event.session_id for f in found] == ["s-order"] * 3
    assert [f.snippet.field for f in found] == ["message", "tool call", "tool result"]
    body = response.content.decode()
    assert body.count("<mark>88231</mark>") == 3
    assert "&lt;b&gt;order&lt;/b&gt;" in body  # the event's text stays text
    assert "…" in body  # the long message is cut after the excerpt
    assert "88231 again" not in body  # archived: an abandoned branch


def test_every_word_must_occur_and_case_does_not_matter(
    operator_client: Client, order: Session
) -> None:
    found = operator_client.get(url("s-order"), {"q": "LOOKUP_ORDER shipped"}).context["found"]
    assert [f.event.role for f in found] == ["tool"]
    assert operator_client.get(url("s-order"), {"q": "88231 nowhere"}).context["found"] == []


def test_links_lead_to_the_timeline_page_of_the_turn_and_to_the_event(
    operator_client: Client, order: Session, settings: Settings
) -> None:
    settings.AGENTOPS_TURNS_PER_PAGE = 2
    response = operator_client.get(url("s-order"), {"q": "shipped"})
    hit = response.context["found"][0]
    assert hit.timeline_page == 2  # the third turn, two turns a page
    body = response.content.decode()
    detail = reverse("sessions:detail", args=["s-order"])
    assert f'href="{detail}?page=2#turn-{hit.turn.id}"' in body
    events = reverse("sessions:turn_events", args=["s-order", hit.turn.id])
    assert f'href="{events}?after={hit.event.id - 1}#event-{hit.event.id}"' in body


def test_empty_or_wordless_query_finds_nothing_and_markup_is_inert(
    operator_client: Client, order: Session
) -> None:
    empty = operator_client.get(url("s-order"))
    assert empty.status_code == 200 and empty.context["page"] is None
    body = operator_client.get(url("s-order"), {"q": '<script>alert(1)</script> "'}).content
    assert b"<script>alert(1)" not in body
    assert operator_client.get(url("s-order"), {"q": "   "}).context["page"] is None


def test_an_outsider_gets_404(outsider_client: Client, order: Session) -> None:
    assert outsider_client.get(url("s-order"), {"q": "88231"}).status_code == 404


def test_the_session_tabs_offer_the_find_form(operator_client: Client, order: Session) -> None:
    for name in ("sessions:detail", "sessions:context", "sessions:protocol"):
        body = operator_client.get(reverse(name, args=["s-order"])).content.decode()
        assert f'action="{url("s-order")}" role="search"' in body


@pytest.mark.parametrize("hits", [1, 60])
def test_query_count_does_not_grow_with_hits(
    operator_client: Client, django_assert_num_queries: DjangoAssertNumQueries, hits: int
) -> None:
    session = make_session("s-many", turns=hits, events_per_turn=1, text="needle in turn")
    assert session.events.count() == hits
    # auth session, user, user perms, group perms, session, count, page of events, turns
    with django_assert_num_queries(8):
        response = operator_client.get(url("s-many"), {"q": "needle"})
    assert len(response.context["found"]) == min(hits, 50)


def test_snippet_marks_words_at_letter_and_digit_boundaries() -> None:
    pattern = words_pattern("order")
    assert pattern is not None
    assert pattern.search("get_order") and not pattern.search("reorder")
    event = Event(text="a " * 300 + "the ORDER was late", role="user")
    found = snippet(event, "order late")
    assert found is not None and found.cut_before and not found.cut_after
    assert [p.text for p in found.pieces if p.marked] == ["ORDER", "late"]
    assert snippet(Event(text="nothing", role="user"), "order") is None
    assert words_pattern("  ") is None


def test_turn_events_after_an_event_start_there(operator_client: Client, order: Session) -> None:
    hit = operator_client.get(url("s-order"), {"q": "shipped"}).context["found"][0]
    events = reverse("sessions:turn_events", args=["s-order", hit.turn.id])
    body = operator_client.get(events, {"after": hit.event.id - 1}).content.decode()
    assert f'id="event-{hit.event.id}"' in body and "Where is my" not in body
