"""The triage queue's tool facet (`?tool=`): which tools the queued turns called, counted
once per turn, and the queue narrowed to one tool; the other facets follow the filter."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone
from pytest_django import DjangoAssertNumQueries

from sessions_app.models import Event, Session, Turn
from tests.test_triage import URL, facet_counts, ids, session, turn

pytestmark = pytest.mark.django_db


def calls(t: Turn, *names: str, archived: bool = False) -> None:
    """One assistant event of `t` calling each of `names`."""
    when = t.started_at
    Event.objects.create(
        session_id=t.session_id,
        turn_id=t.id,
        role="assistant",
        tool_calls=[
            {"id": f"c-{i}", "name": name, "arguments": {}} for i, name in enumerate(names)
        ],
        created_at=when,
        updated_at=when,
        archived_at=when if archived else None,
    )


@pytest.fixture
def queue() -> tuple[Session, Session]:
    now = timezone.now()
    hour = timedelta(hours=1)
    a = session("s-a", app="alpha")
    b = session("s-b", app="beta")
    a_f1 = turn(a, "a-f1", "failed", now - 9 * hour, code="provider_error", stage="provider")
    calls(a_f1, "deploy", "read_file", "read_file")
    calls(a_f1, "read_file")
    a_f2 = turn(a, "a-f2", "failed", now - 8 * hour, code="tool_crash", stage="tool")
    calls(a_f2, "read_file")
    calls(a_f2, "ghost", archived=True)  # an abandoned branch: not counted
    b_f1 = turn(b, "b-f1", "failed", now - 5 * hour, code="provider_error", stage="provider")
    calls(b_f1, "deploy")
    turn(b, "b-i1", "interrupted", now - 4 * hour)  # called nothing
    done = turn(b, "b-ok", "completed", now - 3 * hour)  # not in the queue
    calls(done, "deploy", "shell")
    Event.objects.create(  # a call of an odd shape is left out, never a 500
        session=b,
        turn_id="b-i1",
        role="assistant",
        tool_calls=[{"id": "x", "name": 7}, "junk"],
        created_at=now,
        updated_at=now,
    )
    return a, b


def test_tool_facet_counts_each_queued_turn_once_per_tool(
    operator_client: Client, queue: tuple[Session, Session]
) -> None:
    counts = facet_counts(operator_client.get(URL))
    assert counts["tool"] == {"deploy": 2, "read_file": 2}
    facet = next(f for f in operator_client.get(URL).context["facets"] if f.name == "tool")
    assert [v.value for v in facet.values] == ["deploy", "read_file"]  # count, then name


def test_tool_filter_narrows_the_rows_and_the_other_facets(
    operator_client: Client, queue: tuple[Session, Session]
) -> None:
    response = operator_client.get(URL, {"tool": "deploy"})
    assert ids(response) == ["b-f1", "a-f1"]
    counts = facet_counts(response)
    assert counts["tool"] == {"deploy": 2, "read_file": 2}  # its own filter does not narrow it
    assert counts["app"] == {"alpha": 1, "beta": 1}
    assert counts["code"] == {"provider_error": 2}

    response = operator_client.get(URL, {"tool": "read_file", "app": "alpha"})
    assert ids(response) == ["a-f2", "a-f1"]
    assert facet_counts(response)["tool"] == {"deploy": 1, "read_file": 2}
    assert ids(operator_client.get(URL, {"tool": "shell"})) == []  # only outside the queue
    assert ids(operator_client.get(URL, {"tool": "ghost"})) == []  # only in an archived event


def test_tool_links_add_and_remove_the_filter_and_a_selected_tool_stays_listed(
    operator_client: Client, queue: tuple[Session, Session]
) -> None:
    body = operator_client.get(URL, {"app": "beta"}).content.decode()
    assert f'href="{URL}?app=beta&amp;tool=deploy"' in body
    response = operator_client.get(URL, {"tool": "nothing-called-this"})
    assert facet_counts(response)["tool"]["nothing-called-this"] == 0
    assert f'href="{URL}" hx-get="{URL}"' in response.content.decode()  # its link clears it
    assert 'class="clear-filters"' in response.content.decode()


@pytest.mark.parametrize("count", [1, 40])
def test_query_count_with_the_tool_facet_does_not_grow(
    operator_client: Client,
    django_assert_num_queries: DjangoAssertNumQueries,
    count: int,
) -> None:
    now: datetime = timezone.now()
    for i in range(count):
        s = session(f"s-{i}", app=f"app-{i % 3}")
        t = turn(s, f"f-{i}", "failed", now - timedelta(hours=i + 1), code="c", stage="tool")
        calls(t, f"tool-{i % 4}", "deploy")
    # auth session, user, user perms, group perms, facet combinations, tool counts, chart,
    # count, rows
    with django_assert_num_queries(10):
        response = operator_client.get(URL, {"tool": "deploy", "app": "app-0"})
    assert response.status_code == 200
    assert facet_counts(response)["tool"]["deploy"] == len(ids(response))


def test_the_sessions_list_tool_filter_reads_odd_calls_without_a_500(
    operator_client: Client, queue: tuple[Session, Session]
) -> None:
    # s-b holds a call list with a number for a name and a bare string.
    response = operator_client.get("/sessions/", {"tool": "deploy"})
    assert response.status_code == 200
    assert {s.id for s, _ in response.context["rows"]} == {"s-a", "s-b"}
