"""OTLP spans of a running turn, sent by the SDK's OTLP/HTTP exporter in three batches,
appear live on the session page in Chromium: the question and the tool call, then the
tool's result, then the answer, each without a reload, the turn running throughout (the
header's last activity moving with them); a
watched trace that moves into its conversation's session takes the page along."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from playwright.sync_api import Browser, Page

from sessions_app.api.keys import create_key
from tests.browser.test_live_browser import LAST, _sign_in
from tests.live.helpers import DaphneServer
from tests.otlp.agent_spans import OpenTurn, ok_turn, provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SESSION = "otlp-live-conversation"


def _send(exporter: OTLPSpanExporter, turn: OpenTurn) -> None:
    assert exporter.export(turn.take()) is SpanExportResult.SUCCESS


def _wait_for_text(page: Page, text: str) -> None:
    page.locator(LAST).get_by_text(text).first.wait_for(timeout=15_000)


def test_three_otlp_batches_of_a_running_turn_appear_live(
    browser: Browser, operator_user: User, screenshot_dir: object
) -> None:
    key = create_key("browser-otlp").key
    turn = OpenTurn("turn-1", conversation=SESSION)
    with DaphneServer({"REDIS_URL": ""}) as server:
        exporter = OTLPSpanExporter(
            endpoint=f"{server.url}/v1/traces", headers={"Authorization": f"Bearer {key}"}
        )
        _send(exporter, turn)  # batch 1: the question and the model's tool call
        page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
        _sign_in(page, server.url, operator_user)
        page.goto(f"{server.url}/sessions/{SESSION}/")
        page.wait_for_selector(".live-indicator[data-state=live]")
        _wait_for_text(page, "turn-1: run the slow tool")
        assert page.locator(LAST).get_attribute("data-status") == "running"
        assert page.locator(LAST + " .tool-call.is-inflight").count() == 1  # no result yet

        turn.tool_answers()
        _send(exporter, turn)  # batch 2: the tool's span (its result)
        page.locator(LAST + " .tool-call .badge.status-completed").wait_for(timeout=15_000)
        assert page.locator(LAST + " .tool-call.is-inflight").count() == 0
        activity = page.locator("#last-activity time")
        before = activity.get_attribute("datetime")
        turn.answers("The slow tool is done.")
        _send(exporter, turn)  # batch 3: the model's answer
        _wait_for_text(page, "The slow tool is done.")
        # The header's last activity follows (out of band), shown in local time again.
        page.wait_for_function(
            "before => document.querySelector('#last-activity time')"
            ".getAttribute('datetime') !== before",
            arg=before,
            timeout=15_000,
        )
        assert activity.get_attribute("data-localised") is not None
        assert page.locator(LAST).get_attribute("data-status") == "running"
        # The turn's event count arrived live too: question, call, result, answer.
        page.wait_for_selector(LAST + " .event-count[data-count='4']")
        page.screenshot(path=f"{screenshot_dir}/otlp-live-1440.png", full_page=True)
        page.set_viewport_size({"width": 390, "height": 844})
        page.screenshot(path=f"{screenshot_dir}/otlp-live-390.png", full_page=True)
        page.reload()  # a fresh page agrees with what arrived live
        page.wait_for_selector(".live-indicator[data-state=live]")
        # A stored turn's events load when they scroll into view (at 390 px they may be
        # below the fold), as a reader scrolls to them.
        page.locator(LAST + " .events").scroll_into_view_if_needed()
        _wait_for_text(page, "The slow tool is done.")
        assert page.locator(LAST + " .tool-call").count() == 1
        assert page.locator(LAST + " .event-count").get_attribute("data-count") == "4"


def test_a_watched_trace_that_moves_into_its_conversation_takes_the_page_along(
    browser: Browser, operator_user: User
) -> None:
    """A running turn's children arrive first (no span names the conversation: the trace
    has a session of its own, ``otlp-<trace id>``), watched; then its root names the
    conversation and the trace moves: the page, told to resume, finds its session gone
    and reloads into the conversation's session, which shows the turn."""
    key = create_key("browser-otlp-moved").key
    exporter_spans = InMemorySpanExporter()
    ok_turn(provider(exporter_spans).get_tracer("tests.browser.moved"), conversation="conv-moving")
    spans = list(exporter_spans.get_finished_spans())
    children, root = spans[:-1], spans[-1]
    own = f"otlp-{root.context.trace_id:032x}"
    with DaphneServer({"REDIS_URL": ""}) as server:
        exporter = OTLPSpanExporter(
            endpoint=f"{server.url}/v1/traces", headers={"Authorization": f"Bearer {key}"}
        )
        assert exporter.export(children) is SpanExportResult.SUCCESS
        page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
        _sign_in(page, server.url, operator_user)
        page.goto(f"{server.url}/sessions/{own}/")
        page.wait_for_selector(".live-indicator[data-state=live]")
        assert exporter.export([root]) is SpanExportResult.SUCCESS
        page.wait_for_url(f"{server.url}/sessions/conv-moving/", timeout=15_000)
        page.wait_for_selector(".live-indicator[data-state=live]")
        assert page.locator("article.turn").count() == 1
