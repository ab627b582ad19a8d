"""In a real browser: the list's search box finds text inside a message, a tool argument
and a tool result; the session header shows the token total; times turn local."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, Page
from pytest_django.live_server_helper import LiveServer

from sessions_app.models import Event
from sessions_app.store import refresh_resume_status
from tests.browser.conftest import sign_in
from tests.factories import BASE, make_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_search_box_finds_message_argument_and_result_and_header_shows_tokens(
    page: Page, live_server: LiveServer, operator_user: User, screenshot_dir: Path
) -> None:
    session = make_session("s-order", text="nothing here")
    make_session("s-other", text="unrelated")
    turn = session.turns.get()
    common = {"session": session, "turn_id": turn.id, "created_at": BASE, "updated_at": BASE}
    Event.objects.create(role="user", text="Where is order 88231?", **common)
    Event.objects.create(
        role="assistant",
        tool_calls=[{"id": "c1", "name": "lookup_order", "arguments": {"carrier": "Zephyrco"}}],
        usage={"prompt_tokens": 1200, "completion_tokens": 34, "total_tokens": 1234},
        **common,
    )
    Event.objects.create(
        role="tool",
        tool_response={"tool_call_id": "c1", "name": "lookup_order", "result": "Quixotic"},
        **common,
    )
    refresh_resume_status(session.id)  # rows written behind the store: its kept totals too
    sign_in(page, live_server, operator_user.username, "pw-" + operator_user.username)
    for word in ("88231", "Zephyrco", "Quixotic"):
        page.fill("input[name=q]", "")
        page.locator("input[name=q]").press_sequentially(word)  # keyup: htmx searches
        page.wait_for_url(f"**/sessions/?*q={word}*")
        page.wait_for_selector("#session-results >> text=1 session")
        assert page.locator("#session-results tbody tr").count() == 1
        assert page.locator("#session-results >> text=Session s-order").is_visible()
    page.screenshot(path=str(screenshot_dir / "search-list.png"), full_page=True)

    page.click("text=Session s-order")
    total = page.locator("#session-tokens .token-total")
    assert total.inner_text() == "1,234"
    created = page.locator("time[data-local]").first
    assert "UTC" in (created.get_attribute("title") or "")
    page.screenshot(path=str(screenshot_dir / "session-tokens.png"))


def test_find_within_a_session_marks_the_words_and_leads_to_the_turn(
    browser: Browser, live_server: LiveServer, operator_user: User, screenshot_dir: Path
) -> None:
    session = make_session("s-find", turns=3, text="nothing here")
    make_session("s-elsewhere", text="order 88231 in another session")
    turn = session.turns.order_by("started_at").last()
    assert turn is not None
    common = {"session": session, "turn_id": turn.id, "created_at": BASE, "updated_at": BASE}
    Event.objects.create(
        role="assistant",
        tool_calls=[{"id": "c1", "name": "lookup_order", "arguments": {"order_id": "88231"}}],
        **common,
    )
    Event.objects.create(
        role="tool",
        tool_response={"tool_call_id": "c1", "name": "lookup_order", "result": "88231 shipped"},
        **common,
    )
    # A reader in Tokyo: times turn local (UTC stays in the tooltip).
    context = browser.new_context(timezone_id="Asia/Tokyo", viewport={"width": 390, "height": 800})
    page = context.new_page()
    sign_in(page, live_server, operator_user.username, "pw-" + operator_user.username)
    page.goto(f"{live_server.url}/sessions/s-find/")
    page.fill("form[role=search] input[name=q]", "88231")
    page.press("form[role=search] input[name=q]", "Enter")
    page.wait_for_url("**/sessions/s-find/find/?q=88231")
    assert page.locator("#find-count").inner_text().startswith("2 events hold")
    assert page.locator(".found mark").all_inner_texts() == ["88231", "88231"]
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    when = page.locator(".found time[data-local]").first
    assert "UTC" in (when.get_attribute("title") or "")
    assert "UTC" not in when.inner_text()  # shown in the reader's zone
    page.screenshot(path=str(screenshot_dir / "find-in-session-390.png"), full_page=True)
    page.locator(".found-links a", has_text="Turn on the timeline").first.click()
    page.wait_for_url(f"**/sessions/s-find/?page=1#turn-{turn.id}")
    page.wait_for_selector(f"#turn-{turn.id} .tool-call")
    context.close()
