"""The failure triage queue /turns/: contents, facets, filters, stuck turns, chart, links."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from pytest_django import DjangoAssertNumQueries, Settings

from sessions_app.models import Event, Session, Turn
from sessions_app.triage import CHART_DAYS, NONE, build_chart
from sessions_app.values import format_duration
from tests.factories import make_session

if TYPE_CHECKING:
    from django.test.client import _MonkeyPatchedWSGIResponse

pytestmark = pytest.mark.django_db

URL = "/turns/"
REASONS = {"failed": "agent_error", "interrupted": "canceled", "running": "", "completed": ""}


def session(session_id: str, app: str = "coder", user: str = "u-1") -> Session:
    when = timezone.now()
    return Session.objects.create(
        id=session_id,
        app_name=app,
        user_id=user,
        title=f"Session {session_id}",
        created_at=when,
        updated_at=when,
    )


def turn(
    s: Session,
    turn_id: str,
    status: str,
    started: datetime,
    *,
    reason: str | None = None,
    code: str = "",
    stage: str = "",
    message: str = "",
    seconds: float = 30,
    event_times: tuple[datetime, ...] = (),
) -> Turn:
    t = Turn.objects.create(
        id=turn_id,
        session=s,
        status=status,
        reason=REASONS[status] if reason is None else reason,
        failure_code=code,
        failure_stage=stage,
        failure_message=message,
        started_at=started,
        finished_at=None if status == "running" else started + timedelta(seconds=seconds),
    )
    for when in event_times:
        Event.objects.create(
            session=s, turn_id=turn_id, role="assistant", created_at=when, updated_at=when
        )
    return t


def ids(response: _MonkeyPatchedWSGIResponse) -> list[str]:
    return [row.turn.id for row in response.context["rows"]]


def facet_counts(response: _MonkeyPatchedWSGIResponse) -> dict[str, dict[str, int]]:
    return {f.name: {v.value: v.count for v in f.values} for f in response.context["facets"]}


@pytest.fixture
def now() -> datetime:
    return timezone.now()


@pytest.fixture
def mixed(now: datetime) -> tuple[Session, Session]:
    """Two apps; failed (two codes, two stages), interrupted (with and without code),
    a stuck turn, a live running turn and a completed one."""
    a = session("s-a", app="alpha")
    b = session("s-b", app="beta")
    hour = timedelta(hours=1)
    turn(a, "a-f1", "failed", now - 9 * hour, code="provider_error", stage="provider")
    turn(a, "a-f2", "failed", now - 8 * hour, code="tool_crash", stage="tool")
    turn(a, "a-i1", "interrupted", now - 7 * hour)
    turn(a, "a-ok", "completed", now - 6 * hour)
    turn(b, "b-f1", "failed", now - 5 * hour, code="provider_error", stage="provider")
    turn(
        b,
        "b-i1",
        "interrupted",
        now - 4 * hour,
        reason="deadline_exceeded",
        code="deadline",
        stage="agent",
    )
    turn(b, "b-stuck", "running", now - 3 * hour, event_times=(now - 2 * hour,))
    turn(b, "b-live", "running", now - 2 * hour, event_times=(now - timedelta(minutes=1),))
    return a, b


# --- access -------------------------------------------------------------------------------


def test_anonymous_is_sent_to_login(client: Client) -> None:
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_user_without_role_gets_403(outsider_client: Client) -> None:
    assert outsider_client.get(URL).status_code == 403


def test_operator_and_admin_see_the_queue(
    operator_client: Client, admin_user: User, client: Client
) -> None:
    assert reverse("turn_queue") == URL
    response = operator_client.get(URL)
    assert response.status_code == 200
    assert "Nothing to triage" in response.content.decode() and response.context["chart"] is None
    client.force_login(admin_user)
    assert client.get(URL).status_code == 200


def test_nav_links_to_the_queue(operator_client: Client) -> None:
    body = operator_client.get(reverse("sessions:list")).content.decode()
    assert f'href="{URL}"' in body


# --- contents -----------------------------------------------------------------------------


def test_queue_holds_failed_interrupted_and_stuck_turns_newest_first(
    operator_client: Client, mixed: tuple[Session, Session]
) -> None:
    response = operator_client.get(URL)
    assert ids(response) == ["b-stuck", "b-i1", "b-f1", "a-i1", "a-f2", "a-f1"]
    body = response.content.decode()
    assert "a-ok" not in body and "b-live" not in body


def test_row_shows_badges_failure_session_and_duration(
    operator_client: Client, now: datetime
) -> None:
    s = session("s-row", app="alpha", user="grace")
    turn(
        s,
        "t-row",
        "failed",
        now - timedelta(hours=1),
        code="provider_error",
        stage="provider",
        message="Provider returned 503 <b>retry</b>",
        seconds=185,
    )
    body = operator_client.get(URL).content.decode()
    # Plain words, the recorded word kept in data-word (and the tooltip).
    assert 'class="badge status-failed label"' in body and 'data-word="failed">Failed</a>' in body
    assert 'data-word="agent_error">Error</a>' in body
    assert 'data-word="provider_error">Model provider error</a>' in body
    assert 'data-word="provider">at the model provider</a>' in body
    assert ">agent_error<" not in body and ">provider_error<" not in body
    assert "Provider returned 503 &lt;b&gt;retry&lt;/b&gt;" in body  # escaped, never markup
    assert "Session s-row" in body and "alpha · grace" in body
    assert "3 min 5 s" in body


def test_queue_is_paginated_by_50(operator_client: Client, now: datetime) -> None:
    s = session("s-many")
    for i in range(55):
        turn(s, f"t-{i:03d}", "failed", now - timedelta(minutes=60 + i), code="x", stage="tool")
    first = operator_client.get(URL)
    assert len(ids(first)) == 50 and ids(first)[0] == "t-000"
    second = operator_client.get(URL, {"page": 2})
    assert ids(second) == [f"t-{i:03d}" for i in range(50, 55)]
    assert f'href="{URL}?page=2"' in first.content.decode()


# --- stuck detection ----------------------------------------------------------------------


def test_stuck_uses_last_event_time_or_start_and_the_setting(
    operator_client: Client, settings: Settings, now: datetime
) -> None:
    settings.AGENTOPS_STUCK_AFTER_SECONDS = 600
    s = session("s-run")

    def minutes(n: int) -> datetime:
        return now - timedelta(minutes=n)

    turn(s, "quiet-old", "running", minutes(30))  # no events, started 30 min ago
    turn(s, "quiet-new", "running", minutes(5))  # no events, started 5 min ago
    turn(s, "talked-lately", "running", minutes(60), event_times=(minutes(50), minutes(3)))
    turn(s, "talked-long-ago", "running", minutes(60), event_times=(minutes(45), minutes(20)))
    # An event of another session carrying the same turn id does not keep a turn alive.
    other = session("s-other")
    Event.objects.create(
        session=other, turn_id="quiet-old", role="user", created_at=now, updated_at=now
    )

    response = operator_client.get(URL)
    assert set(ids(response)) == {"quiet-old", "talked-long-ago"}
    body = response.content.decode()
    assert "stuck for 30 min" in body and "stuck for 20 min" in body

    settings.AGENTOPS_STUCK_AFTER_SECONDS = 120
    assert set(ids(operator_client.get(URL))) == {
        "quiet-old",
        "quiet-new",
        "talked-lately",
        "talked-long-ago",
    }
    settings.AGENTOPS_STUCK_AFTER_SECONDS = 3600
    assert ids(operator_client.get(URL)) == []


# --- facets and filters -------------------------------------------------------------------


def test_facet_counts_over_the_whole_queue(
    operator_client: Client, mixed: tuple[Session, Session]
) -> None:
    counts = facet_counts(operator_client.get(URL))
    assert counts["status"] == {"failed": 3, "interrupted": 2, "stuck": 1}
    assert counts["code"] == {"provider_error": 2, "tool_crash": 1, "deadline": 1, NONE: 2}
    assert counts["stage"] == {"provider": 2, "tool": 1, "agent": 1, NONE: 2}
    assert counts["reason"] == {"agent_error": 3, "canceled": 1, "deadline_exceeded": 1, NONE: 1}
    assert counts["app"] == {"alpha": 3, "beta": 3}


def test_facet_counts_reflect_the_other_active_filters(
    operator_client: Client, mixed: tuple[Session, Session]
) -> None:
    response = operator_client.get(URL, {"app": "beta"})
    counts = facet_counts(response)
    assert counts["app"] == {"alpha": 3, "beta": 3}  # its own filter does not narrow it
    assert counts["status"] == {"failed": 1, "interrupted": 1, "stuck": 1}
    assert counts["code"] == {"provider_error": 1, "deadline": 1, NONE: 1}

    response = operator_client.get(URL, {"app": "beta", "status": "failed"})
    counts = facet_counts(response)
    assert counts["app"] == {"alpha": 2, "beta": 1}
    assert counts["status"] == {"failed": 1, "interrupted": 1, "stuck": 1}
    assert counts["code"] == {"provider_error": 1}


def test_filters_combine(operator_client: Client, mixed: tuple[Session, Session]) -> None:
    assert ids(operator_client.get(URL, {"code": "provider_error"})) == ["b-f1", "a-f1"]
    assert ids(operator_client.get(URL, {"code": "provider_error", "app": "alpha"})) == ["a-f1"]
    assert ids(operator_client.get(URL, {"stage": "tool", "app": "beta"})) == []
    assert ids(operator_client.get(URL, {"status": "stuck"})) == ["b-stuck"]
    assert ids(operator_client.get(URL, {"status": "interrupted", "reason": "canceled"})) == [
        "a-i1"
    ]
    assert ids(operator_client.get(URL, {"code": NONE, "status": "interrupted"})) == ["a-i1"]
    assert ids(operator_client.get(URL, {"status": "bogus"})) == ids(operator_client.get(URL))


def test_facet_links_add_or_remove_a_filter_and_clear_link(
    operator_client: Client, mixed: tuple[Session, Session]
) -> None:
    body = operator_client.get(URL, {"app": "beta"}).content.decode()
    # Clicking "failed" keeps app=beta; clicking the selected "beta" removes it.
    assert f'href="{URL}?status=failed&amp;app=beta"' in body
    assert f'href="{URL}" hx-get="{URL}"\n                 class="facet-link selected"' in body
    assert 'class="clear-filters" href="/turns/"' in body
    assert "clear-filters" not in operator_client.get(URL).content.decode()
    # The empty-code value reads "no code" and links with the (none) marker.
    assert f'href="{URL}?code=%28none%29&amp;app=beta"' in body
    assert '<option value="(none)" >no code (1)</option>' in body


def test_pager_keeps_the_filters(operator_client: Client, now: datetime) -> None:
    s = session("s-many", app="alpha")
    for i in range(51):
        turn(s, f"t-{i:03d}", "failed", now - timedelta(minutes=60 + i), code="x", stage="tool")
    body = operator_client.get(URL, {"app": "alpha"}).content.decode()
    assert f'href="{URL}?app=alpha&amp;page=2"' in body


def test_htmx_request_gets_only_the_results_fragment(
    operator_client: Client, mixed: tuple[Session, Session]
) -> None:
    # The filter form sends its empty selects too; the pushed URL is the canonical one.
    params = {"status": "failed", "code": "", "stage": "", "reason": "", "app": ""}
    response = operator_client.get(
        URL, params, headers={"HX-Request": "true", "HX-Target": "triage-results"}
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="triage-results"')
    assert "<html" not in body and "a-f1" in body
    assert 'hx-swap="outerHTML"' in body
    assert response["HX-Push-Url"] == f"{URL}?status=failed"
    cleared = operator_client.get(
        URL, headers={"HX-Request": "true", "HX-Target": "triage-results"}
    )
    assert cleared["HX-Push-Url"] == URL


# --- chart --------------------------------------------------------------------------------


def test_chart_counts_failed_and_interrupted_per_day(
    operator_client: Client, now: datetime
) -> None:
    s = session("s-chart")
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=1, microsecond=0)
    day = timedelta(days=1)
    turn(s, "d5-f1", "failed", today - 5 * day, code="x", stage="tool")
    turn(s, "d5-f2", "failed", today - 5 * day + timedelta(hours=20), code="x", stage="tool")
    turn(s, "d5-i1", "interrupted", today - 5 * day + timedelta(hours=3))
    turn(s, "d2-i1", "interrupted", today - 2 * day)
    turn(s, "d0-f1", "failed", today, code="x", stage="tool")
    turn(s, "d1-ok", "completed", today - day)
    turn(s, "old", "failed", today - 45 * day, code="x", stage="tool")  # outside the window

    chart = operator_client.get(URL).context["chart"]
    by_day = {bar.day: (bar.failed, bar.interrupted) for bar in chart.bars}
    start = (today - (CHART_DAYS - 1) * day).date()
    assert chart.start == start and chart.end == today.date()
    assert len(chart.bars) == CHART_DAYS
    assert by_day[(today - 5 * day).date()] == (2, 1)
    assert by_day[(today - 2 * day).date()] == (0, 1)
    assert by_day[today.date()] == (1, 0)
    assert by_day[(today - day).date()] == (0, 0)
    assert (chart.failed_total, chart.interrupted_total) == (3, 2)

    # The chart follows the filters; the SVG is labelled.
    filtered = operator_client.get(URL, {"status": "interrupted"})
    assert filtered.context["chart"].failed_total == 0
    body = filtered.content.decode()
    assert 'role="img" aria-labelledby="chart-title chart-desc"' in body
    label = (today - 2 * day).strftime("%Y-%m-%d")
    assert f"{label}: 0 failed, 1 interrupted</title>" in body


def test_chart_window_follows_old_data_and_short_spans() -> None:
    today = date(2026, 11, 30)
    # Old import: the window ends on the newest day with data, not today.
    chart = build_chart(
        [(date(2025, 3, 10), "failed", 2), (date(2025, 1, 2), "interrupted", 1)], today
    )
    assert chart is not None
    assert (chart.start, chart.end) == (date(2025, 2, 9), date(2025, 3, 10))
    assert chart.failed_total == 2 and chart.interrupted_total == 0
    # Recent data spanning three days: just those days up to today.
    chart = build_chart(
        [(date(2026, 11, 29), "failed", 4), (date(2026, 11, 28), "interrupted", 1)], today
    )
    assert chart is not None
    assert (chart.start, chart.end, len(chart.bars)) == (date(2026, 11, 28), today, 3)
    assert chart.max_count == 4
    tallest = chart.bars[1]
    assert tallest.failed_y == pytest.approx(chart.TOP)  # 4 of a nice ceiling of 4
    assert build_chart([], today) is None


# --- links into the session timeline ------------------------------------------------------


def test_link_opens_the_session_timeline_page_that_holds_the_turn(
    operator_client: Client, settings: Settings
) -> None:
    settings.AGENTOPS_TURNS_PER_PAGE = 20
    statuses = ["completed"] * 45
    for index in (0, 19, 20, 44):
        statuses[index] = "failed"
    make_session("s-long", turns=45, statuses=statuses)
    # Two turns starting at the same instant are ordered by id on the session page.
    s = Session.objects.get(pk="s-long")
    last = Turn.objects.get(pk="s-long-t00044")
    turn(s, "s-long-t00044a", "failed", last.started_at, code="x", stage="tool")

    response = operator_client.get(URL, {"app": "coder"})
    links = {
        row.turn.id: (row.timeline_page, row.turn.session_id) for row in response.context["rows"]
    }
    assert {tid: page for tid, (page, _) in links.items()} == {
        "s-long-t00000": 1,
        "s-long-t00019": 1,
        "s-long-t00020": 2,
        "s-long-t00044": 3,
        "s-long-t00044a": 3,
    }
    body = response.content.decode()
    detail = reverse("sessions:detail", args=["s-long"])
    href = f"{detail}?page=2#turn-s-long-t00020"
    assert f'href="{href}"' in body
    page = operator_client.get(href.split("#")[0]).content.decode()
    assert 'id="turn-s-long-t00020"' in page


# --- query count --------------------------------------------------------------------------


@pytest.mark.parametrize("count", [1, 60])
def test_query_count_does_not_grow_with_turns(
    operator_client: Client,
    django_assert_num_queries: DjangoAssertNumQueries,
    now: datetime,
    count: int,
) -> None:
    for i in range(count):
        s = session(f"s-{i}", app=f"app-{i % 3}")
        turn(s, f"f-{i}", "failed", now - timedelta(hours=i + 1), code="c", stage="tool")
        turn(s, f"r-{i}", "running", now - timedelta(hours=i + 1), event_times=(now,))
        turn(s, f"x-{i}", "running", now - timedelta(hours=i + 1))  # stuck
    # auth session, user, user perms, group perms, facet combinations, tool counts, chart,
    # count, rows
    with django_assert_num_queries(10):
        response = operator_client.get(URL, {"app": "app-0"})
    assert response.status_code == 200


def test_format_duration() -> None:
    assert format_duration(0.42) == "0.4 s"
    assert format_duration(42) == "42 s"
    assert format_duration(185) == "3 min 5 s"
    assert format_duration(7440) == "2 h 4 min"
    assert format_duration(2547868.5) == "29 d 11 h"
