"""A request's traces land together: the number of queries does not grow with the number
of traces or spans in the batch (`landing.land`)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.api.keys import create_key
from sessions_app.api.models import ApiKey
from sessions_app.otlp.decode import decode_request, spans_of
from sessions_app.otlp.writer import store_spans
from tests.otlp.agent_spans import ok_turn, protobuf_body, provider


def _batch(traces: int, prefix: str) -> list[Any]:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer = provider(exporter).get_tracer("tests.otlp.queries")
    for number in range(traces):
        ok_turn(tracer, conversation=f"{prefix}-{number}")
    body = protobuf_body(exporter.get_finished_spans())
    records, bad = spans_of(decode_request(body, "application/x-protobuf"))
    assert bad == 0
    return records


def _queries(records: list[Any], key: ApiKey) -> int:
    with CaptureQueriesContext(connection) as captured:
        done = store_spans(records, key)
    assert done.rejected == 0
    return len(captured)


@pytest.mark.django_db
def test_queries_do_not_grow_with_the_traces_of_a_batch(django_assert_num_queries: Any) -> None:
    key = create_key("queries").row
    small, large = _batch(2, "small"), _batch(20, "large")
    assert len(large) == 10 * len(small)
    assert _queries(small, key) == _queries(large, key)
    # Read the kept spans, sessions and turns; write spans, sessions, turns and events in
    # bulk (an existing session's system prompts of earlier turns read first: a turn does
    # not store the same one again, `landing._without_repeated_system`); keep the resume
    # statuses and page facts (`otlp.resume_batch`: new sessions
    # are not read back, neither their turns, events, tool outcomes nor stored marks; the
    # statuses, token totals, legacy flags and updated_at in one UPDATE statement run
    # for each row); read the sessions' turn counts and token totals for the watchers'
    # turn payloads (`otlp.watched`); in a transaction. SQLite: two more, the events'
    # search index marker set and taken away (`search.batch_index`: one index statement
    # for the batch instead of the FTS trigger once per row).
    with django_assert_num_queries(15 + (2 if connection.vendor == "sqlite" else 0)):
        store_spans(_batch(5, "five"), key)
