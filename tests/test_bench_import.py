"""`bench import --json` runs end to end on a small size (no timing assertions)."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import Session


@pytest.mark.django_db
def test_bench_import_json_prints_expected_keys(capsys: pytest.CaptureFixture[str]) -> None:
    call_command("bench", "import", "--json", "--events", "400", "-o", "rounds=2")
    figures = json.loads(capsys.readouterr().out)
    assert figures["benchmark"] == "import"
    assert figures["events"] == figures["expected_events"] == 400
    # The raw side inserts every row the import wrote, in every table it wrote.
    assert figures["rows_per_table"] == {
        "sessions_app_session": 1,
        "sessions_app_turn": 100,
        "sessions_app_event": 400,
        "sessions_app_importedfile": 1,
    }
    assert len(figures["import_s_range"]) == len(figures["raw_executemany_s_range"]) == 2
    assert figures["import_vs_raw_executemany"] > 0
    assert figures["peak_rss_vs_session_bytes"] >= 0
    # It ran against its own temporary database, not this one.
    assert not Session.objects.filter(id="bench-session").exists()


@pytest.mark.django_db
def test_bench_import_of_a_codex_rollout(capsys: pytest.CaptureFixture[str]) -> None:
    call_command(
        "bench", "import", "--json", "--events", "400", "-o", "rounds=1", "-o", "format=codex_cli"
    )
    figures = json.loads(capsys.readouterr().out)
    assert figures["format"] == "codex_cli"
    assert figures["events"] == figures["expected_events"] == 400
    assert figures["rows_per_table"] == {
        "sessions_app_session": 1,
        "sessions_app_turn": 100,
        "sessions_app_event": 400,
        "sessions_app_importedfile": 1,
    }


def test_unknown_benchmark_exits_2() -> None:
    with pytest.raises(CommandError) as excinfo:
        call_command("bench", "nope")
    assert excinfo.value.returncode == 2
