"""Token totals and cost (sessions_app.search.numbers): usage shapes of every source."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from sessions_app.models import Event, Session, Turn
from sessions_app.search.numbers import cost_of, session_token_totals, with_turn_tokens
from sessions_app.store import refresh_resume_status
from tests.factories import BASE, make_session

pytestmark = pytest.mark.django_db

CLAUDE = {
    "prompt_tokens": 1200,
    "completion_tokens": 300,
    "total_tokens": 1500,
    "details": {"input_tokens": 200, "cache_read_input_tokens": 1000, "output_tokens": 300},
}
CODEX = {
    "prompt_tokens": 500,
    "completion_tokens": 50,
    "total_tokens": 550,
    "details": {"input_tokens": 500, "cached_input_tokens": 100, "output_tokens": 50},
}
OPENAI = {
    "prompt_tokens": 40,
    "completion_tokens": 10,
    "total_tokens": 50,
    "details": {"prompt_tokens_details": {"cached_tokens": 8}},
}
ODD = {"prompt_tokens": "lots", "completion_tokens": -5, "details": {"cached_input_tokens": [1]}}


def with_usage(session: Session, *usages: object) -> None:
    turn = session.turns.first()
    assert turn is not None
    for usage in usages:
        Event.objects.create(
            session=session,
            turn_id=turn.id,
            role="assistant",
            text="x",
            usage=usage,
            created_at=BASE,
            updated_at=BASE,
        )
    # Rows written outside the store: recomputed as every rewriting write does.
    refresh_resume_status(session.id)


def test_totals_sum_every_usage_shape_and_ignore_odd_values() -> None:
    session = make_session("s-tok")
    with_usage(session, CLAUDE, CODEX, OPENAI, ODD)
    session.refresh_from_db()
    totals = session_token_totals(session)
    assert (totals.input, totals.output, totals.cached) == (1740, 360, 1108)
    turn = with_turn_tokens(Turn.objects.filter(session=session)).get()
    assert (turn.tokens_input, turn.tokens_output, turn.tokens_cached) == (1740, 360, 1108)  # type: ignore[attr-defined]


def test_cost_bills_cached_input_at_the_cached_price() -> None:
    prices = {"m": {"input": 3.0, "output": 15.0, "cached": 0.3}}
    with override_settings(AGENTOPS_MODEL_PRICES=prices):
        assert cost_of("m", 1_000_000, 1_000_000, 500_000) == Decimal("16.65")
        assert cost_of("other", 10, 10, 0) is None
        assert cost_of("", 10, 10, 0) is None


@override_settings(AGENTOPS_MODEL_PRICES={"claude-x": {"input": 3, "output": 15, "cached": 0.3}})
def test_list_and_header_show_totals_and_cost(operator_client: Client) -> None:
    session = make_session("s-tok")
    Session.objects.filter(pk="s-tok").update(model="claude-x")
    with_usage(session, CLAUDE)
    listing = operator_client.get("/sessions/").content.decode()
    assert 'data-input="1200" data-output="300" data-cached="1000"' in listing
    assert "$0.0054" in listing  # 200 * 3 + 1000 * 0.3 + 300 * 15, per million
    assert "claude-x" in listing
    page = operator_client.get(reverse("sessions:detail", args=["s-tok"])).content.decode()
    assert 'id="session-tokens"' in page and ">1,500<" in page and "$0.0054" in page


@override_settings(AGENTOPS_MODEL_PRICES={"claude-x": {"input": 3, "output": 15, "cached": 0.3}})
def test_each_turn_on_the_timeline_shows_its_own_total(operator_client: Client) -> None:
    session = make_session("s-turns", turns=2)
    Session.objects.filter(pk="s-turns").update(model="claude-x")
    first, second = session.turns.order_by("started_at")
    for turn, usage in ((first, CLAUDE), (second, CODEX)):
        Event.objects.create(
            session=session,
            turn_id=turn.id,
            role="assistant",
            usage=usage,
            created_at=BASE,
            updated_at=BASE,
        )
    page = operator_client.get(reverse("sessions:detail", args=["s-turns"])).content.decode()
    head_1 = page.split(f'id="turn-head-{first.id}"')[1].split("</header>")[0]
    head_2 = page.split(f'id="turn-head-{second.id}"')[1].split("</header>")[0]
    assert ">1,500</span>" in head_1 and "$0.0054" in head_1
    assert ">550</span>" in head_2 and ">1,500<" not in head_2
