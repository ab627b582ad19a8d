"""Browser tests: Playwright driving Debian's Chromium (never a downloaded browser).

Skipped when /usr/bin/chromium is missing, except on CI (CI=true), where that is a failure.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page
from pytest_django.live_server_helper import LiveServer

CHROMIUM = Path(os.environ.get("AGENTOPS_CHROMIUM", "/usr/bin/chromium"))
SCREENSHOTS = Path(__file__).resolve().parents[2] / ".local" / "screenshots"

# Playwright's sync API runs an event loop in this thread; the ORM must still be usable.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if CHROMIUM.exists():
        return
    if os.environ.get("CI"):
        raise pytest.UsageError(f"CI needs Debian's chromium at {CHROMIUM} for browser tests")
    skip = pytest.mark.skip(reason=f"no chromium at {CHROMIUM} (apt-get install chromium)")
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    return {
        **browser_type_launch_args,
        "executable_path": str(CHROMIUM),
        "args": [
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
        ],
    }  # fmt: skip


@pytest.fixture
def screenshot_dir() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


def sign_in(page: Page, live_server: LiveServer, username: str, password: str) -> None:
    """Sign in through the real login form."""
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/sessions/")
