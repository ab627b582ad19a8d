"""The kept spans' reads use an index (migration 0020 dropped the span indexes no query
needed): every query of a batch that reads or moves spans by trace id goes through the
unique (trace_id, span_id) constraint's index, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.api.keys import create_key
from sessions_app.api.models import ApiKey
from sessions_app.otlp.writer import store_spans
from tests.otlp.test_queries import _batch

TABLE = "sessions_app_otlpspan"


def _plan(sql: str) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
            return " ".join(str(row[-1]) for row in cursor.fetchall())
        cursor.execute("SET LOCAL enable_seqscan = off")  # tiny tables: a plan, not a cost
        cursor.execute(f"EXPLAIN {sql}")
        return " ".join(row[0] for row in cursor.fetchall())


@pytest.mark.django_db
def test_a_batchs_span_queries_use_the_unique_constraints_index() -> None:
    create_key("spans")
    key = ApiKey.objects.get(name="spans")
    store_spans(_batch(2, "index"), key)
    with CaptureQueriesContext(connection) as captured:
        store_spans(_batch(2, "index"), key)  # reads the kept spans of its traces
    span_queries = [q["sql"] for q in captured if TABLE in q["sql"] and "WHERE" in q["sql"]]
    assert span_queries
    for sql in span_queries:
        plan = _plan(sql)
        index = (
            "sqlite_autoindex_sessions_app_otlpspan_1"
            if connection.vendor == "sqlite"
            else ("otlp_span_unique")
        )
        assert index in plan, (sql, plan)
