"""The turn payloads a request sends its watchers, made from what it wrote
(`otlp.watched.turn_payloads_written`, no turn read back), equal the stored turns'
(`live.payloads.turn_payload`: the turn row, its active event count, its session's
turn count, token totals and model) after every batch: whole, split, re-sent, shuffled
(children before parents, a trace moving into its conversation when its root arrives),
a turn stopped by a person, a session the request did not create."""

from __future__ import annotations

from typing import Any

import pytest

from sessions_app import models
from sessions_app.api.keys import create_key
from sessions_app.api.models import ApiKey
from sessions_app.live.payloads import turn_payload
from sessions_app.otlp.decode import decode_request, spans_of
from sessions_app.otlp.models import OtlpSpan
from sessions_app.otlp.writer import store_spans
from tests.otlp.agent_spans import OpenTurn, conversation_spans, protobuf_body, shuffled_batches


def _store(spans: Any, key: ApiKey) -> None:
    records, bad = spans_of(decode_request(protobuf_body(spans), "application/x-protobuf"))
    assert bad == 0
    done = store_spans(records, key)
    assert done.rejected == 0
    assert set(done.turn_payloads) == set(done.turns)
    assert done.turn_payloads == {turn_id: turn_payload(turn_id) for turn_id in done.turns}


@pytest.mark.django_db
def test_written_turn_payloads_equal_the_stored_turns_after_every_batch() -> None:
    key = create_key("payloads").row
    spans = conversation_spans()
    for start in range(0, len(spans), 4):
        _store(spans[start : start + 4], key)
    _store(spans, key)  # an exporter's retry: nothing changes, nothing is sent
    for seed in (1, 2, 3):
        models.Session.objects.all().delete()
        OtlpSpan.objects.all().delete()
        for batch in shuffled_batches(spans, seed):
            _store(batch, key)
    assert models.Session.objects.filter(tokens_input__gt=0).exists()


@pytest.mark.django_db
def test_written_turn_payloads_in_sessions_with_earlier_turns() -> None:
    key = create_key("payloads-shared").row
    first, second = OpenTurn("a", "shared"), OpenTurn("b", "shared")
    _store(first.take(), key)  # the session exists before the second turn's batch
    _store(second.take(), key)
    models.Turn.objects.filter(pk__endswith="/a").update(stopped_by="operator")
    for turn in (first, second):
        turn.tool_answers()
        turn.answers("done")
    _store([*first.take(), *second.take()], key)
    assert models.Turn.objects.filter(session_id="shared").count() == 2
