"""A Claude Code transcript, and a Codex rollout, appended line by line into a folder the
server watches (AGENTOPS_WATCH_PATHS) show up live on the session page in Chromium: the
turn running while the file grows, events appearing without a reload, the outcome once
it is idle."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser

from sessions_app.ingest.files import parse_file
from tests.browser.test_live_browser import LAST, _sign_in
from tests.live.helpers import DaphneServer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CLAUDE = "claude-code/agentcmd__full-session-three.jsonl"
SESSION = "cfa1e878-62b5-4e40-b281-bbf9b250d766"


def test_growing_claude_transcript_is_live_on_the_session_page(
    browser: Browser, operator_user: User, corpus: Path, tmp_path: Path, screenshot_dir: Path
) -> None:
    lines = (corpus / CLAUDE).read_bytes().splitlines(keepends=True)
    target = tmp_path / "projects" / "demo" / f"{SESSION}.jsonl"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"".join(lines[:4]))
    env = {"AGENTOPS_WATCH_PATHS": str(tmp_path / "projects"), "AGENTOPS_WATCH_IDLE_SECONDS": "4",
           "REDIS_URL": ""}  # fmt: skip
    with DaphneServer(env) as server:
        page = browser.new_context().new_page()
        _sign_in(page, server.url, operator_user)  # the first call starts the watcher
        deadline = time.monotonic() + 30
        while (answer := page.goto(f"{server.url}/sessions/{SESSION}/")) and answer.status == 404:
            assert time.monotonic() < deadline, "the watched transcript never appeared"
            time.sleep(0.5)
        page.wait_for_selector(".live-indicator[data-state=live]")
        before = page.locator("#timeline .event").count()
        for line in lines[4:30]:
            with target.open("ab") as handle:
                handle.write(line)
            time.sleep(0.1)
        page.wait_for_selector(LAST + "[data-status=running]", timeout=20_000)
        page.wait_for_function(
            # Tool results are shown inside their call's card, so fewer boxes than events.
            "(n) => document.querySelectorAll('#timeline .event').length > n",
            arg=before + 2,
        )
        page.screenshot(path=str(screenshot_dir / "watch-running.png"), full_page=True)
        for line in lines[30:]:
            with target.open("ab") as handle:
                handle.write(line)
            time.sleep(0.05)
        # Idle: the transcript ends inside tool calls, so the turn is abandoned.
        page.wait_for_selector(LAST + "[data-status=interrupted]", timeout=30_000)
        calls = "#timeline .tool-call"
        page.wait_for_function(f"() => document.querySelectorAll('{calls}').length >= 21")
        page.screenshot(path=str(screenshot_dir / "watch-idle.png"), full_page=True)
        count = LAST + " .event-count"
        page.wait_for_selector(count + "[data-count='28']")
        # The unanswered calls of the abandoned turn are marked on the live page.
        assert page.locator(LAST + " .tool-call.is-unanswered").count() == 3
        page.reload()
        page.wait_for_selector(".live-indicator[data-state=live]")
        # A fresh page agrees with what arrived live.
        assert page.locator(LAST).get_attribute("data-status") == "interrupted"
        assert page.locator(count).get_attribute("data-count") == "28"


CODEX = "codex-cli/agentcmd__rollout-2025-09-25T15-12-14-019982b8.jsonl"


def test_growing_codex_rollout_is_live_on_the_session_page(
    browser: Browser, operator_user: User, corpus: Path, tmp_path: Path, screenshot_dir: Path
) -> None:
    source = corpus / CODEX
    # What a one-shot import of the whole rollout gives: the page must end the same.
    (parsed,) = parse_file(source).sessions
    last = parsed.turns[-1]
    expected_count = sum(1 for e in parsed.events if e.turn_id == last.id and e.archived_at is None)
    lines = source.read_bytes().splitlines(keepends=True)
    target = tmp_path / "sessions" / "2025" / "09" / "25" / source.name
    target.parent.mkdir(parents=True)
    target.write_bytes(b"".join(lines[:3]))
    env = {"AGENTOPS_WATCH_PATHS": str(tmp_path / "sessions"), "AGENTOPS_WATCH_IDLE_SECONDS": "4",
           "REDIS_URL": ""}  # fmt: skip
    with DaphneServer(env) as server:
        page = browser.new_context().new_page()
        _sign_in(page, server.url, operator_user)  # the first call starts the watcher
        deadline = time.monotonic() + 30
        url = f"{server.url}/sessions/{parsed.id}/"
        while (answer := page.goto(url)) and answer.status == 404:
            assert time.monotonic() < deadline, "the watched rollout never appeared"
            time.sleep(0.5)
        page.wait_for_selector(".live-indicator[data-state=live]")
        running_seen = 0
        for start in range(3, len(lines), 10):
            with target.open("ab") as handle:
                handle.write(b"".join(lines[start : start + 10]))
            time.sleep(0.6)
            running_seen += page.locator(LAST + "[data-status=running]").count()
        assert running_seen, "the turn never showed running while the rollout grew"
        page.screenshot(path=str(screenshot_dir / "watch-codex-growing.png"), full_page=True)
        count = LAST + " .event-count"
        page.wait_for_selector(f"{LAST}[data-status={last.status}]", timeout=30_000)
        page.wait_for_selector(f"{count}[data-count='{expected_count}']", timeout=30_000)
        page.screenshot(path=str(screenshot_dir / "watch-codex-idle.png"), full_page=True)
        page.reload()
        page.wait_for_selector(".live-indicator[data-state=live]")
        # A fresh page agrees with what arrived live.
        assert page.locator(LAST).get_attribute("data-status") == last.status
        assert page.locator(count).get_attribute("data-count") == str(expected_count)
