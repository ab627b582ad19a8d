"""The triage chart's days are UTC days computed by the database itself (issue 17: Django's
`TruncDate` calls a Python function per row on SQLite): the kept tally's days equal the UTC
days `TruncDate` gives, and reading the chart runs no Python date function."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.models import Count
from django.db.models.functions import TruncDate
from django.test.utils import CaptureQueriesContext

from sessions_app.models import Session, Turn
from sessions_app.triage.filters import DIMENSIONS, Filters
from sessions_app.triage.tally import tallied_chart

pytestmark = pytest.mark.django_db


def test_chart_days_are_utc_days_computed_in_sql() -> None:
    base = datetime(2026, 3, 1, tzinfo=UTC)
    session = Session.objects.create(id="s", app_name="a", created_at=base, updated_at=base)
    moments = [
        base + timedelta(days=d, hours=h, microseconds=m)
        for d in range(3)
        for h, m in ((0, 0), (23, 999_999), (12, 5))
    ]
    Turn.objects.bulk_create(
        Turn(id=f"t{n}", session=session, status=("failed", "interrupted")[n % 2], started_at=at)
        for n, at in enumerate(moments)
    )
    with CaptureQueriesContext(connection) as queries:
        counts = tallied_chart(Filters({name: "" for name in DIMENSIONS}))
    assert len(queries) == 1 and "django_datetime_cast_date" not in queries[0]["sql"]
    expected = (
        Turn.objects.annotate(day=TruncDate("started_at", tzinfo=UTC))
        .values("day", "status")
        .annotate(n=Count("pk"))
        .order_by("-day", "status")
    )
    assert counts == [(row["day"], row["status"], row["n"]) for row in expected]
    assert len({day for day, _status, _n in counts}) == 3
