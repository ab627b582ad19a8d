"""Under the Content-Security-Policy, in Chromium through daphne: a transcript's remote
image is a link and is never fetched (a beacon listener gets nothing), and the session
(with its live websocket), context, protocol, todos, triage, sessions and docs pages run
without a single CSP violation."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser

from sessions_app.models import Turn
from tests.factories import add_unanswered_call, make_session
from tests.live.helpers import DaphneServer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SID = "s-csp"

# Runs before any page script; CSP does not apply to Playwright's init scripts.
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
  e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
"""


class _Beacon(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        _Beacon.hits.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def beacon() -> Iterator[ThreadingHTTPServer]:
    _Beacon.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Beacon)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_no_remote_fetch_and_no_csp_violation_on_any_page(
    browser: Browser, admin_user: User, beacon: ThreadingHTTPServer, screenshot_dir: Path
) -> None:
    port = beacon.server_address[1]
    text = (
        f"Look: ![tracking pixel](http://127.0.0.1:{port}/beacon.png) and "
        "![inline](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==)"
        "\n\n| left | right |\n|:--|--:|\n| a | b |"
    )
    make_session(SID, turns=2, statuses=["completed", "failed"], text=text,
                 todos=[{"content": "check", "status": "pending"}])  # fmt: skip
    add_unanswered_call(Turn.objects.filter(session_id=SID).order_by("started_at").last())  # type: ignore[arg-type]
    with DaphneServer({"REDIS_URL": ""}) as server:
        context = browser.new_context()
        context.add_init_script(RECORD_VIOLATIONS)
        page = context.new_page()
        requested: list[str] = []
        console: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        page.on("console", lambda message: console.append(message.text))
        page.goto(f"{server.url}/accounts/login/")
        page.fill("#id_username", admin_user.username)
        page.fill("#id_password", "pw-" + admin_user.username)
        page.click("button[type=submit]")
        page.wait_for_url(f"{server.url}/sessions/")

        page.goto(f"{server.url}/sessions/{SID}/")
        page.wait_for_selector(".live-indicator[data-state=live]")  # the websocket, under CSP
        page.wait_for_selector("a.remote-image")  # the lazily loaded events (htmx)
        link = page.locator("a.remote-image").first
        assert link.inner_text() == "tracking pixel"
        assert link.get_attribute("href") == f"http://127.0.0.1:{port}/beacon.png"
        assert page.locator(".markdown img[src^='data:image/png']").count() >= 1
        assert page.locator(".markdown td.align-right").count() >= 1
        page.screenshot(path=str(screenshot_dir / "csp-session.png"), full_page=True)
        violations = page.evaluate("window.__csp")
        pages = ["context/", "protocol/", "todos/", "find/?q=tracking"]
        for suffix in pages:
            page.goto(f"{server.url}/sessions/{SID}/{suffix}")
            page.wait_for_load_state("networkidle")
            violations += page.evaluate("window.__csp")
        for url in ("/turns/", "/sessions/", "/docs/", "/accounts/logout/"):
            page.goto(server.url + url)
            page.wait_for_load_state("networkidle")
            violations += page.evaluate("window.__csp")
        assert page.locator("form[action='/accounts/logout/'] button").count() >= 1

    assert violations == []
    assert not [line for line in console if "Content Security Policy" in line], console
    assert not [url for url in requested if f":{port}/" in url]
    assert _Beacon.hits == []
    assert any(url.endswith("/static/live.js") for url in requested)  # scripts did load
