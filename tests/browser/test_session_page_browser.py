"""What only a browser shows: htmx lazy loading works and hostile model output stays inert."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Dialog, Page
from pytest_django import Settings
from pytest_django.live_server_helper import LiveServer

from tests.browser.conftest import sign_in
from tests.factories import make_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HOSTILE = '**Done.** <script>window.__pwned = 1</script> <img src=x onerror="window.__pwned = 2">'


def test_session_page_loads_turn_events_and_never_runs_model_html(
    page: Page, live_server: LiveServer, operator_user: User, screenshot_dir: Path
) -> None:
    make_session("s-xss", turns=3, text=HOSTILE, statuses=["completed", "failed", "interrupted"])
    dialogs: list[str] = []

    def dismiss(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    sign_in(page, live_server, operator_user.username, "pw-" + operator_user.username)

    page.click("text=Session s-xss")
    # Turn events arrive through htmx on reveal.
    page.wait_for_selector(".events.loaded .event")
    assert page.locator(".markdown strong", has_text="Done.").first.is_visible()
    assert "<script>window.__pwned = 1</script>" in page.locator(".markdown").first.inner_text()
    assert page.evaluate("window.__pwned") is None
    assert page.locator(".markdown img").count() == 0
    assert dialogs == []
    page.screenshot(path=str(screenshot_dir / "session-xss.png"), full_page=True)


def test_filtering_the_list_with_htmx_shows_clear_and_the_pager_keeps_the_filter(
    page: Page, live_server: LiveServer, operator_user: User, settings: Settings
) -> None:
    settings.AGENTOPS_SESSIONS_PER_PAGE = 2
    for session_id in ("s-a1", "s-a2", "s-a3"):
        make_session(session_id, app="alpha")
    make_session("s-b1", app="beta")
    sign_in(page, live_server, operator_user.username, "pw-" + operator_user.username)
    assert page.locator("#clear-filters").is_hidden()

    # Filtering swaps only the results; the Clear link beside the form follows (out of band).
    page.select_option("select[name=app]", "alpha")
    page.wait_for_url("**/sessions/?*app=alpha*")
    page.wait_for_selector("#session-results >> text=3 sessions")
    assert page.locator("#clear-filters").is_visible()

    page.click("#session-results nav.pager >> text=Older →")
    page.wait_for_url("**/sessions/?*app=alpha*page=2*")
    page.wait_for_selector("#session-results >> text=Page 2 of 2")
    assert page.locator("#session-results tbody tr").count() == 1
    assert page.locator("#clear-filters").is_visible()

    page.click("#clear-filters")
    page.wait_for_url(f"{live_server.url}/sessions/")
    assert page.locator("#clear-filters").is_hidden()
    assert page.locator("#session-results >> text=4 sessions").is_visible()
