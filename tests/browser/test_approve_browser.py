"""Approving a call awaiting a person on a session of the dashboard's agent, in Chromium
through a daphne server: the demo agent's "deploy" turn ends awaiting approval; an admin
approves it on the timeline, and a second page watching the session sees the continued
turn stream in and complete live, without a reload (issue 16, item 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser

from sessions_app.models import Session, Turn
from tests.browser.test_live_browser import _sign_in
from tests.factories import make_session
from tests.live.helpers import DaphneServer

LAST = "#timeline > article.turn:last-of-type"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: Counts, at every change of the page, the most copies of one event element it held.
MOST_COPIES = """
window.__mostCopies = 0;
new MutationObserver(() => {
  const seen = {};
  document.querySelectorAll(".turn .event[id^=event-]").forEach((el) => {
    seen[el.id] = (seen[el.id] || 0) + 1;
    window.__mostCopies = Math.max(window.__mostCopies, seen[el.id]);
  });
}).observe(document, { childList: true, subtree: true });
"""


def test_approving_a_pending_call_continues_the_turn_live(
    browser: Browser, admin_user: User, operator_user: User, screenshot_dir: Path
) -> None:
    make_session("s-approve", turns=1)
    # The slowly streaming demo agent: the continued answer streams for a few seconds.
    env = {"AGENTOPS_AGENT": "agentops.agents.demo.make_slow_agent", "REDIS_URL": ""}
    with DaphneServer(env) as server:
        admin = browser.new_context().new_page()
        watcher = browser.new_context().new_page()
        watcher.add_init_script(MOST_COPIES)
        _sign_in(admin, server.url, admin_user)
        _sign_in(watcher, server.url, operator_user)
        admin.goto(f"{server.url}/sessions/s-approve/")
        admin.wait_for_selector(".live-indicator[data-state=live]")
        admin.fill("#id_message", "Please deploy the app")
        admin.click("#run-form button[type=submit]")
        admin.wait_for_selector(LAST + "[data-status=completed]", timeout=30_000)

        watcher.goto(f"{server.url}/sessions/s-approve/")
        watcher.wait_for_selector(".live-indicator[data-state=live]")
        # The turn's events may arrive twice on a fresh page (lazily loaded and caught up
        # live); the page never shows both (static/live.js drops one in the same task).
        watcher.wait_for_selector(LAST + " .tool-call.is-pending")
        pending = watcher.locator(LAST + " .tool-call.is-pending")
        assert "deploy" in pending.inner_text()
        assert watcher.locator("form.decide-form").count() == 0  # operators do not decide

        admin.reload()
        form = admin.locator(".tool-call.is-pending form.decide-form").first
        form.wait_for()
        assert "its turn continues at once" in form.inner_text()
        form.locator("input[name=reason]").fill("ship it")
        form.locator("button[value=approved]").click()
        admin.wait_for_selector(".message.success")
        assert "The agent continues the turn with your decision." in admin.inner_text(".messages")

        # The watcher never reloads: the decided call stops awaiting the user in place
        # (``live.outcome``), and the continuation arrives over its websocket.
        watcher.wait_for_selector(".tool-call.is-recorded .outcome-record", timeout=20_000)
        assert "approved" in watcher.inner_text(".tool-call.is-recorded .tool-head")
        assert watcher.locator(".tool-call.is-pending").count() == 0
        watcher.wait_for_selector("#timeline > article.turn[data-status=running]", timeout=20_000)
        watcher.wait_for_function(
            "() => document.querySelector('.streaming .stream-text')"
            "?.textContent.includes('Approved')",
            timeout=20_000,
        )
        watcher.screenshot(path=str(screenshot_dir / "approve-streaming.png"), full_page=True)
        watcher.wait_for_selector(LAST + "[data-status=completed]", timeout=30_000)
        answer = watcher.locator(LAST + " .markdown").last.inner_text()
        assert f"Approved by {admin_user.username} (note: ship it)" in answer
        assert "Deployed demo-app to staging" in answer
        assert watcher.inner_text("#turn-count") == "3"
        # The header's token totals moved with the turn's end, as a reload would show them.
        session = Session.objects.get(pk="s-approve")
        total = watcher.locator("#session-tokens .token-total")
        total.wait_for()
        assert total.get_attribute("data-output") == str(session.tokens_output) != "0"
        continued = Turn.objects.filter(session_id="s-approve").order_by("-started_at").first()
        assert continued is not None and continued.status == "completed"
        assert watcher.locator(LAST).get_attribute("data-turn-id") == continued.id
        assert watcher.evaluate("window.__mostCopies") == 1  # never an event twice
        watcher.screenshot(path=str(screenshot_dir / "approve-continued.png"), full_page=True)
