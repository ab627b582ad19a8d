"""What only a browser shows: a recorded outcome appears beside its call on the timeline,
an admin approves and rejects calls awaiting a person, and no page is wider than a phone."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page
from pytest_django.live_server_helper import LiveServer

from sessions_app.demo import load_demo
from sessions_app.models import Event, Session, ToolOutcome
from tests.browser.conftest import sign_in
from tests.factories import make_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_recording_an_outcome_shows_it_on_the_timeline(
    page: Page, live_server: LiveServer, admin_user: User, screenshot_dir: Path
) -> None:
    load_demo()
    sign_in(page, live_server, admin_user.username, "pw-" + admin_user.username)
    page.goto(f"{live_server.url}/sessions/demo-support-refund/protocol/")
    form = page.locator("details.outcome-form").first
    form.locator("summary").click()
    form.locator("input[name=reason]").fill("the lookup service logged no request")
    form.locator("button[type=submit]").click()
    page.wait_for_selector(".message.success")
    page.goto(f"{live_server.url}/sessions/demo-support-refund/")
    record = page.locator(".tool-call .outcome-record").first
    record.wait_for()
    assert "Did not run" in record.inner_text()
    assert admin_user.username in record.inner_text()
    assert "the lookup service logged no request" in record.inner_text()
    assert page.locator(".tool-call.is-unanswered").count() == 0
    page.screenshot(path=str(screenshot_dir / "outcome-on-timeline.png"), full_page=True)


@pytest.mark.parametrize("decision", ["approved", "rejected"])
def test_an_admin_decides_on_a_call_awaiting_a_person(
    page: Page, live_server: LiveServer, admin_user: User, screenshot_dir: Path, decision: str
) -> None:
    load_demo()
    sign_in(page, live_server, admin_user.username, "pw-" + admin_user.username)
    page.goto(f"{live_server.url}/sessions/demo-support-refund/")
    form = page.locator(".tool-call.is-pending form.decide-form").first
    form.wait_for()
    form.locator("input[name=reason]").fill("checked with the customer")
    form.locator(f"button[value={decision}]").click()
    page.wait_for_selector(".message.success")
    assert ("Approved." if decision == "approved" else "Rejected.") in page.inner_text(".messages")
    record = page.locator(".tool-call .outcome-record", has_text="checked with the customer")
    record.wait_for()
    assert (decision.capitalize()) in record.inner_text()
    assert page.locator(".tool-call.is-pending").count() == 0
    saved = ToolOutcome.objects.get(call_id="call_refund_1")
    assert saved.outcome == decision and saved.recorded_by == admin_user
    assert Event.objects.get(pk=saved.event_id).pending_call_ids == ["call_refund_1"]
    page.screenshot(path=str(screenshot_dir / f"decision-{decision}.png"), full_page=True)


PAGES = [
    "/sessions/",
    "/sessions/demo-support-refund/",
    "/sessions/demo-large-research/",
    "/sessions/demo-support-refund/context/",
    "/sessions/demo-support-refund/protocol/",
    "/sessions/demo-support-refund/find/?q=88231",
    "/sessions/demo-release-checklist/todos/",
    "/turns/",
    "/docs/concepts.md",
]


@pytest.mark.parametrize("width", [390, 1440])
def test_no_page_is_wider_than_the_screen(
    page: Page, live_server: LiveServer, admin_user: User, screenshot_dir: Path, width: int
) -> None:
    load_demo()
    # A title of one unbroken word (a pasted blob as the first message) wraps.
    make_session("blob-title")
    Session.objects.filter(pk="blob-title").update(title="B" * 300)
    page.set_viewport_size({"width": width, "height": 900})
    sign_in(page, live_server, admin_user.username, "pw-" + admin_user.username)
    for number, path in enumerate(PAGES):
        response = page.goto(f"{live_server.url}{path}")
        assert response is not None and response.status == 200, path
        page.wait_for_load_state("networkidle")
        scroll_width = page.evaluate("document.documentElement.scrollWidth")
        assert scroll_width <= width, f"{path}: {scroll_width} px wide at {width} px"
        page.screenshot(path=str(screenshot_dir / f"width-{width}-{number}.png"), full_page=True)
