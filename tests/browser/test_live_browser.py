"""Live session page in Chromium: two pages watch one session through a daphne server; one
sends a message, both stream the text and flip the turn badge; stop ends a turn as
interrupted/canceled. A page whose server went away reconnects and shows what was stored
meanwhile, without gaps or doubles."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, Page

from sessions_app import live
from sessions_app.models import Event
from tests.factories import make_session
from tests.live.helpers import DaphneServer, scripted_agent

LAST = "#timeline > article.turn:last-of-type"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]


def _sign_in(page: Page, url: str, user: User) -> None:
    page.goto(f"{url}/accounts/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", "pw-" + user.username)
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/sessions/")


def test_two_pages_watch_a_turn_stream_and_stop(
    browser: Browser, admin_user: User, operator_user: User, screenshot_dir: Path
) -> None:
    make_session("s-watch", turns=1)
    # A slowly streaming demo agent, so the fragments are visible before the event lands.
    env = {"AGENTOPS_AGENT": "agentops.agents.demo.make_slow_agent", "REDIS_URL": ""}
    with DaphneServer(env) as server:
        admin_page = browser.new_context().new_page()
        watcher = browser.new_context().new_page()
        _sign_in(admin_page, server.url, admin_user)
        _sign_in(watcher, server.url, operator_user)
        for page in (admin_page, watcher):
            page.goto(f"{server.url}/sessions/s-watch/")
            page.wait_for_selector(".live-indicator[data-state=live]")
        assert watcher.locator("#composer").count() == 0
        assert "only admins can start or stop turns" in watcher.inner_text(".composer-readonly")

        admin_page.fill("#id_message", "Plan my afternoon")
        admin_page.click("#run-form button[type=submit]")
        for page in (admin_page, watcher):
            page.wait_for_selector(LAST + "[data-status=running] .streaming .stream-text")
            page.wait_for_function(
                # A function, not an expression string: the page's CSP forbids eval.
                "() => document.querySelector('.streaming .stream-text')"
                "?.textContent.includes('demo')",
                timeout=20_000,
            )
        watcher.screenshot(path=str(screenshot_dir / "live-streaming-watcher.png"), full_page=True)
        for page in (admin_page, watcher):
            # Counters move live: the header's turn count, the running turn's event count
            # (its user message is stored before the agent streams).
            assert page.inner_text("#turn-count") == "2"
            count = page.locator(LAST + " .event-count").get_attribute("data-count")
            assert count is not None and int(count) >= 1
        for page in (admin_page, watcher):
            page.wait_for_selector(LAST + "[data-status=completed]", timeout=30_000)
            last = page.locator(LAST)
            assert (
                last.locator(".turn-head .badge").first.inner_text() == "Completed"
            )  # the plain label (sessions_app.labels)
            assert "demo answer" in last.locator(".markdown").last.inner_text()
            assert last.locator(".tool-call .tool-name", has_text="todos_write").count() == 1
            assert last.locator(".tool-call .badge.status-completed").count() >= 7
            assert last.locator(".streaming").count() == 0
            # Live events show their times in the reader's zone, like a reloaded page,
            # and each answered call how long it took.
            times = last.locator(".event time[data-local]").all_inner_texts()
            assert times and not [text for text in times if "UTC" in text]
            assert last.locator(".tool-call .call-duration").count() >= 7
            # The agent's todo list reached the panel (todos.changed over the websocket).
            page.wait_for_selector("#todos .todo-items > li")
        admin_page.screenshot(path=str(screenshot_dir / "live-completed-admin.png"), full_page=True)

        admin_page.fill("#id_message", "hang for a while")
        admin_page.click("#run-form button[type=submit]")
        watcher.wait_for_selector("article.turn.status-running .streaming", timeout=20_000)
        admin_page.wait_for_selector("#stop-form:not([hidden]) button")
        admin_page.click("#stop-form button")
        for page in (admin_page, watcher):
            page.wait_for_selector(LAST + "[data-status=interrupted]", timeout=20_000)
            assert (
                page.locator(LAST + " .turn-head .badge.reason-canceled").inner_text()
                == "Stopped by a person"
            )
            # Nothing is left looking in flight once the turn has ended.
            assert page.locator(LAST + " .tool-call.is-inflight").count() == 0
        watcher.screenshot(path=str(screenshot_dir / "live-stopped-watcher.png"), full_page=True)
        assert watcher.inner_text("#turn-count") == "3"
        stored = Event.objects.filter(turn_id=watcher.locator(LAST).get_attribute("data-turn-id"))
        shown = watcher.locator(LAST + " .event-count").get_attribute("data-count")
        assert shown is not None and int(shown) == stored.count() > 0
        assert admin_page.locator("#stop-form").is_hidden()


def test_a_page_whose_server_restarted_resumes_without_gaps(
    browser: Browser, operator_user: User, screenshot_dir: Path
) -> None:
    make_session("s-resume", turns=1)
    env = {"REDIS_URL": ""}
    page = browser.new_context().new_page()
    server = DaphneServer(env).__enter__()
    try:
        _sign_in(page, server.url, operator_user)
        page.goto(f"{server.url}/sessions/s-resume/")
        page.wait_for_selector(".live-indicator[data-state=live]")
        server.__exit__()
        page.wait_for_selector(".live-indicator[data-state=reconnecting]", timeout=20_000)
        # Stored while the page had no server: it must catch up on these.
        # (In a thread of its own: Playwright's event loop runs in this one.)
        turn = live.run_turn(
            "s-resume", "while you were away", agent=scripted_agent("Missed me?"),
            listen_for_cancel=False,
        )  # fmt: skip
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, turn).result(timeout=30)
        restarted = DaphneServer(env)
        restarted.port, restarted.url = server.port, server.url
        server = restarted.__enter__()
        page.wait_for_selector(".live-indicator[data-state=live]", timeout=40_000)
        page.wait_for_selector(LAST + "[data-status=completed]", timeout=20_000)
        last = page.locator(LAST)
        turn_id = last.get_attribute("data-turn-id")
        stored = list(
            Event.objects.filter(turn_id=turn_id).order_by("id").values_list("id", flat=True)
        )
        shown = [
            int((el.get_attribute("id") or "").removeprefix("event-"))
            for el in last.locator(".event[id^=event-]").all()
        ]
        assert shown == stored and len(stored) == 2
        assert "Missed me?" in last.locator(".markdown").last.inner_text()
        assert page.inner_text("#turn-count") == "2"
        assert last.locator(".event-count").get_attribute("data-count") == "2"
        page.screenshot(path=str(screenshot_dir / "live-resumed.png"), full_page=True)
    finally:
        server.__exit__()
