"""Full-text search, list filters and sort (sessions_app.search), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone
from pytest_django import DjangoAssertNumQueries

from agentops.runtime.model import Content, Role
from agentops.runtime.model import Event as RuntimeEvent
from sessions_app.ingest.parsed import ParsedEvent, ParsedSession, ParsedTurn
from sessions_app.ingest.writer import write_parsed_session
from sessions_app.models import Event, Session
from sessions_app.search import matching_events
from sessions_app.search.text import fts5_query
from sessions_app.store import DjangoSessionService
from tests.factories import BASE, make_session

pytestmark = pytest.mark.django_db


def order_session(session_id: str = "s-order") -> Session:
    """A session whose message, tool argument and tool result each hold their own word."""
    session = make_session(session_id, text="nothing to see")
    turn = session.turns.get()
    Event.objects.create(
        session=session,
        turn_id=turn.id,
        role="user",
        text="Where is my order 88231?",
        created_at=BASE,
        updated_at=BASE,
    )
    Event.objects.create(
        session=session,
        turn_id=turn.id,
        role="assistant",
        tool_calls=[{"id": "c1", "name": "lookup_order", "arguments": {"carrier": "Zephyrco"}}],
        created_at=BASE,
        updated_at=BASE,
    )
    Event.objects.create(
        session=session,
        turn_id=turn.id,
        role="tool",
        tool_call_id="c1",
        tool_response={
            "tool_call_id": "c1",
            "name": "lookup_order",
            "result": {"state": "Quixotic"},
        },
        created_at=BASE,
        updated_at=BASE,
    )
    return session


def found(client: Client, **params: str) -> list[str]:
    response = client.get("/sessions/", params)
    assert response.status_code == 200, response.content[:200]
    return [s.id for s, _ in response.context["rows"]]


def test_text_in_a_message_an_argument_and_a_result_is_found(operator_client: Client) -> None:
    order_session()
    make_session("s-other", text="unrelated")
    assert found(operator_client, q="88231") == ["s-order"]
    assert found(operator_client, q="zephyrco") == ["s-order"]  # an argument, any case
    assert found(operator_client, q="Quixotic") == ["s-order"]  # a result
    assert found(operator_client, q="lookup_order") == ["s-order"]  # a tool name
    assert found(operator_client, q="order 88231") == ["s-order"]  # every word
    assert found(operator_client, q="88231 absentword") == []
    assert found(operator_client, q="s-other") == ["s-other"]  # ids still match


def test_tool_filter_is_exact_and_model_filter_uses_the_session_model(
    operator_client: Client,
) -> None:
    order_session()
    make_session("s-other")
    Session.objects.filter(id="s-other").update(model="gpt-x")
    assert found(operator_client, tool="lookup_order") == ["s-order"]
    assert found(operator_client, tool="lookup") == []
    assert found(operator_client, model="gpt-x") == ["s-other"]


def test_index_follows_updates_deletes_and_soft_deletes(operator_client: Client) -> None:
    session = order_session()
    message = session.events.get(text__contains="88231")
    message.text = "Where is parcel 77777?"
    message.save()
    assert found(operator_client, q="88231") == []
    assert found(operator_client, q="77777") == ["s-order"]
    Event.objects.filter(pk=message.pk).update(deleted_at=timezone.now())
    assert found(operator_client, q="77777") == []  # soft-deleted events do not count
    Event.objects.filter(pk=message.pk).delete()
    assert not matching_events(Event.objects.all(), "77777").exists()
    session.delete()  # cascade: the index loses the rest too
    assert not matching_events(Event.objects.all(), "Quixotic").exists()


def test_import_writer_rows_are_indexed(operator_client: Client) -> None:
    start = datetime(2026, 11, 2, tzinfo=UTC)
    write_parsed_session(
        ParsedSession(
            id="s-imp",
            app_name="imp",
            user_id="",
            title="imported",
            state={},
            created_at=start,
            updated_at=start,
            source_format="claude_code",
            turns=[ParsedTurn(id="t1", status="completed", started_at=start, finished_at=start)],
            events=[
                ParsedEvent(
                    role="user",
                    created_at=start,
                    turn_id="t1",
                    text="refund 424242",
                    raw={"message": {"model": "claude-test-1"}},
                ),
            ],
        ),
        "/tmp/x.jsonl",
    )
    assert found(operator_client, q="424242") == ["s-imp"]
    assert Session.objects.get(id="s-imp").model == "claude-test-1"


@pytest.mark.django_db(transaction=True)
async def test_store_append_path_is_indexed() -> None:
    service = DjangoSessionService()
    await service.create_session("app", "u", session_id="s-live")
    await service.append_event(
        RuntimeEvent(session_id="s-live", content=Content(role=Role.USER, text="invoice 31337"))
    )
    hits = [e.session_id async for e in matching_events(Event.objects.all(), "31337")]
    assert hits == ["s-live"]


@pytest.mark.parametrize("query", ['"a" OR', "*", "NEAR(", "col:x", '"', "'", "a AND", "-x", "^"])
def test_query_syntax_from_users_is_text(operator_client: Client, query: str) -> None:
    order_session()
    assert found(operator_client, q=query) == []


def test_fts5_query_quotes_every_word() -> None:
    assert fts5_query('say "hi" OR *') == '"say" """hi""" "OR" "*"'
    assert fts5_query("   ") == ""


def test_day_range_sort_and_bad_values(operator_client: Client) -> None:
    make_session("s-a")
    make_session("s-b", turns=3)
    Session.objects.filter(id="s-a").update(updated_at=BASE - timedelta(days=3), title="zz")
    assert found(operator_client, **{"from": "2026-11-01"}) == ["s-b"]
    assert found(operator_client, to="2026-10-29") == ["s-a"]
    assert found(operator_client, sort="-turns") == ["s-b", "s-a"]
    assert found(operator_client, sort="title") == ["s-b", "s-a"]
    assert found(operator_client, sort="-title") == ["s-a", "s-b"]
    for bad in ({"from": "yesterday"}, {"to": "2026-13-01"}, {"sort": "password"}):
        response = operator_client.get("/sessions/", bad)
        assert response.status_code == 400
        assert b"\n" == response.content[-1:] and response.content.count(b"\n") == 1


def test_search_list_query_count_is_pinned(
    operator_client: Client, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    for n in range(5):
        order_session(f"s-{n}")
    with django_assert_num_queries(7):
        response = operator_client.get(
            "/sessions/", {"q": "88231", "tool": "lookup_order", "sort": "-tokens"}
        )
    assert len(response.context["rows"]) == 5
