"""The store broadcasts values; watchers' processes render them, once per process.

A stored event costs the store no query beyond storing it (a tool result's call comes
from what the store stored earlier in the turn), and an event watched by many watchers of
one process is rendered once."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agentops.runtime.model import Content, Event, Role, ToolCall
from agentops.runtime.session import Turn
from sessions_app import live
from sessions_app.live import groups, render
from sessions_app.store import DjangoSessionService
from tests.factories import make_session
from tests.live.helpers import (
    communicator,
    receive_frame,
    receive_until,
    scripted_agent,
    session_cookie,
    turn_ended,
)


def _call(call_id: str, turn_id: str = "t-values", session_id: str = "s-values") -> Event:
    call = ToolCall(id=call_id, name="lookup", arguments={"q": call_id})
    content = Content(role=Role.ASSISTANT, tool_calls=(call,))
    return Event(session_id=session_id, turn_id=turn_id, content=content)


def _result(call_id: str, turn_id: str = "t-values", session_id: str = "s-values") -> Event:
    content = Content(role=Role.TOOL, tool_call_id=call_id, text=f"found {call_id}")
    return Event(session_id=session_id, turn_id=turn_id, content=content)


@pytest.mark.django_db
def test_a_stored_tool_result_is_broadcast_as_values_with_its_call_and_no_extra_query(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_session("s-values", turns=0)
    sent: list[dict[str, Any]] = []

    async def record(session_id: str, message: dict[str, Any]) -> None:
        sent.append(message)

    monkeypatch.setattr(groups, "broadcast", record)
    service = live.LiveSessionService()
    turn = Turn(id="t-values", session_id="s-values", started_at=datetime.now(UTC))
    async_to_sync(service.begin_turn)("s-values", turn)
    call = async_to_sync(service.append_event)(_call("c1"))
    # The same append on the plain store: a result closing a call of a running turn.
    make_session("s-plain", turns=0)
    plain_store = DjangoSessionService()
    other = Turn(id="t-plain", session_id="s-plain", started_at=datetime.now(UTC))
    async_to_sync(plain_store.begin_turn)("s-plain", other)
    async_to_sync(plain_store.append_event)(_call("c1", "t-plain", "s-plain"))
    with CaptureQueriesContext(connection) as plain:
        async_to_sync(plain_store.append_event)(_result("c1", "t-plain", "s-plain"))
    with CaptureQueriesContext(connection) as broadcasting:
        result = async_to_sync(service.append_event)(_result("c1"))

    assert len(broadcasting) == len(plain)
    event = sent[-1]["event"]
    assert sent[-1]["type"] == "live.event" and "html" not in event
    assert (event["id"], event["text"], event["event_count"]) == (result.id, "found c1", 2)
    assert event["pair"]["event"]["id"] == call.id and event["pair"]["results"] == []
    assert event["pair"]["event"]["tool_calls"][0]["id"] == "c1"


@pytest.mark.django_db(transaction=True)
async def test_each_event_is_rendered_once_per_process_however_many_watchers(
    operator_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    await sync_to_async(make_session)("s-once", turns=0)
    cookie = await sync_to_async(session_cookie)(operator_user)
    rendered: list[int] = []
    original = render._event_body

    def counting(event: dict[str, Any]) -> object:
        rendered.append(event["id"])
        return original(event)

    monkeypatch.setattr(render, "_event_body", counting)
    render._cache.clear()
    watchers = [communicator("s-once", cookie, after=0) for _ in range(3)]
    for comm in watchers:
        connected, code = await comm.connect()
        assert connected, code
    try:
        for comm in watchers:
            await receive_until(comm, lambda m: m["kind"] == "hello")
        await live.run_turn("s-once", "hi", agent=scripted_agent("Once is enough."))
        received = [
            [m["event_id"] for m in await receive_until(comm, turn_ended) if m["kind"] == "event"]
            for comm in watchers
        ]
        assert received[0] == received[1] == received[2] and len(received[0]) == 2
        assert sorted(rendered) == received[0]  # once each, for three watchers
        # A watcher's frames differ only in their state element, not in the body.
        late = communicator("s-once", cookie, after=received[0][0])
        connected, _ = await late.connect()
        assert connected
        assert (await receive_frame(late))["kind"] == "turn"
        caught_up = await receive_frame(late)
        assert caught_up["event_id"] == received[0][1]
        await late.disconnect()
    finally:
        for comm in watchers:
            await comm.disconnect()


@pytest.mark.django_db
def test_a_turn_frame_carries_the_session_token_totals_for_the_header() -> None:
    """A turn that ends updates the header's token totals of every watcher (out of band),
    as a reload would show them; no query beyond the turn's one."""
    from sessions_app.models import Session

    make_session("s-tokens")
    Session.objects.filter(pk="s-tokens").update(
        tokens_input=1200, tokens_output=34, tokens_cached=200
    )
    turn_id = Session.objects.get(pk="s-tokens").turns.values_list("id", flat=True).get()
    with CaptureQueriesContext(connection) as queries:
        payload = live.turn_payload(turn_id)
    assert payload is not None and len(queries) == 1
    frame = render.turn_frame(payload, 0)
    assert 'id="session-tokens" hx-swap-oob="true"' in frame
    assert 'class="token-total" data-input="1200" data-output="34" data-cached="200"' in frame
    assert "1,234" in frame


@pytest.mark.django_db
def test_a_turn_frame_shows_the_turns_tokens_as_the_page_does(operator_client: Any) -> None:
    """The turn head a watcher gets when a turn changes carries the turn's own token
    figures (priced for the session's model), the same text the reloaded page shows."""
    import re

    from django.test import override_settings

    from sessions_app.models import Event as EventRow
    from sessions_app.models import Session

    make_session("s-turn-tokens", turns=2)
    Session.objects.filter(pk="s-turn-tokens").update(model="priced-1")
    first, second = Session.objects.get(pk="s-turn-tokens").turns.order_by("started_at")
    usage = {"prompt_tokens": 1500, "completion_tokens": 40, "total_tokens": 1540,
             "details": {"cached_input_tokens": 500}}  # fmt: skip
    EventRow.objects.filter(turn_id=first.id, role="assistant").update(usage=usage)
    EventRow.objects.filter(turn_id=second.id, role="assistant").update(
        usage={**usage, "prompt_tokens": 7}
    )
    prices = {"priced-1": {"input": 3, "output": 15, "cached": 0.3}}

    def tokens_text(html: str, turn_id: str) -> str:
        head = html[html.index(f'id="turn-head-{turn_id}"') :]
        found = re.search(r'<span class="turn-tokens">(.*?) tokens</span>', head, re.S)
        assert found, head[:400]
        return " ".join(found.group(1).split())

    with override_settings(AGENTOPS_MODEL_PRICES=prices):
        page = operator_client.get("/sessions/s-turn-tokens/").content.decode()
        for turn in (first, second):
            payload = live.turn_payload(turn.id)
            assert payload is not None
            assert (payload["tokens_input"], payload["tokens_output"]) == (
                1500 if turn == first else 7,
                40,
            )
            frame = render.turn_frame(payload, 0)
            assert tokens_text(frame, turn.id) == tokens_text(page, turn.id)
        assert "1,540" in tokens_text(page, first.id)


@pytest.mark.django_db
def test_a_turn_frame_updates_the_tabs_badges_as_the_page_shows_them(operator_client: Any) -> None:
    """A turn that ends with a call left open (or a session that can no longer resume)
    changes the tabs' badges of every watcher, out of band, as a reload shows them; and
    clears them when the issues are gone."""
    from sessions_app.models import Session

    make_session("s-badges")
    turn_id = Session.objects.get(pk="s-badges").turns.values_list("id", flat=True).get()

    def badges(html: str) -> list[str]:
        import re

        pattern = r'<span id="{}"[^>]*>(?:\s*<span [^>]*>[^<]*</span>)?</span>'
        found = [
            re.search(pattern.format(name), html) for name in ("protocol-badge", "resume-badge")
        ]
        assert all(found), html
        return [match.group(0) for match in found if match]

    for count, cannot in ((2, True), (0, False)):
        Session.objects.filter(pk="s-badges").update(
            protocol_issue_count=count, cannot_resume=cannot
        )
        payload = live.turn_payload(turn_id)
        assert payload is not None
        frame = render.turn_frame(payload, 0)
        page = operator_client.get("/sessions/s-badges/").content.decode()
        live_badges = [b.replace(' hx-swap-oob="true"', "") for b in badges(frame)]
        assert live_badges == badges(page)
        assert ('status-unanswered">2<' in frame, "cannot resume" in frame) == (cannot, cannot)


@pytest.mark.django_db
def test_a_turn_frame_updates_the_headers_last_activity_and_model(operator_client: Any) -> None:
    """A turn that changes moves the header's last activity and model of every watcher,
    out of band, to what a reload shows (the payload carries them as JSON values)."""
    import json
    import re

    from sessions_app.models import Session

    make_session("s-activity")
    turn_id = Session.objects.get(pk="s-activity").turns.values_list("id", flat=True).get()
    at = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    Session.objects.filter(pk="s-activity").update(updated_at=at, model="model-b")
    payload = live.turn_payload(turn_id)
    assert payload is not None
    assert json.loads(json.dumps(payload))["session_updated_at"] == at.isoformat()
    frame = render.turn_frame(payload, 0)
    page = operator_client.get("/sessions/s-activity/").content.decode()
    for name in ("last-activity", "session-model"):
        pattern = rf'<div id="{name}"[^>]*>.*?</div>'
        shown = re.search(pattern, frame, re.S)
        assert shown and 'hx-swap-oob="true"' in shown.group(0), frame
        reloaded = re.search(pattern, page, re.S)
        assert reloaded and shown.group(0).replace(' hx-swap-oob="true"', "") == reloaded.group(0)
    assert 'datetime="2026-03-04T05:06:07' in frame and "model-b" in frame
