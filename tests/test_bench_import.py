"""`bench import --json` runs end to end on a small size (no timing assertions)."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import Session


@pytest.mark.django_db
def test_bench_import_json_prints_expected_keys(capsys: pytest.CaptureFixture[str]) -> None:
    call_command("bench", "import", "--json", "--events", "400")
    figures = json.loads(capsys.readouterr().out)
    assert figures["benchmark"] == "import"
    assert figures["events"] == figures["expected_events"] == 400
    assert figures["raw_executemany_rows"] == 400
    for key in ("parse_s", "import_s", "events_per_s", "raw_executemany_rows_per_s"):
        assert key in figures
    # It ran against its own temporary database, not this one.
    assert not Session.objects.filter(id="bench-session").exists()


def test_unknown_benchmark_exits_2() -> None:
    with pytest.raises(CommandError) as excinfo:
        call_command("bench", "nope")
    assert excinfo.value.returncode == 2
