"""`bench projection` and `bench append` (ours only) run end to end on small sizes.

No timing assertions (CONVENTIONS.md 14); the peer (google-adk, installed into its own
virtual environment on first use) is never run here.
"""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from sessions_app.models import Session


def test_bench_projection_json_prints_a_figure_per_size(
    capsys: pytest.CaptureFixture[str],
) -> None:
    call_command("bench", "projection", "--json", "-o", "sizes=200,1000")
    figures = json.loads(capsys.readouterr().out)
    assert figures["benchmark"] == "projection"
    assert figures["sizes"] == "200,1000"
    assert figures["target_us_per_event"] == 5.0
    for n in (200, 1000):
        assert figures[f"events_{n}"] >= n
        assert figures[f"context_{n}"] > 0
        assert figures[f"projection_us_per_event_{n}"] > 0
        assert figures[f"explain_us_per_event_{n}"] > 0


def test_bench_projection_rejects_malformed_sizes() -> None:
    with pytest.raises(ValueError, match="sizes"):
        call_command("bench", "projection", "-o", "sizes=ten")


@pytest.mark.django_db
def test_bench_append_json_without_peer_prints_the_sqlite_ratio(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)  # SQLite only here
    call_command(
        "bench", "append", "--json", "--events", "50", "-o", "peer=0", "-o", "rounds=2",
        "-o", "chunk=30",
    )  # fmt: skip
    figures = json.loads(capsys.readouterr().out)
    assert figures["benchmark"] == "append"
    assert figures["events"] == 50
    for subject in ("sqlite_raw", "sqlite", "sqlite_live"):
        assert figures[f"{subject}_stored"] == 3 * 30  # a warm-up round and two timed ones
        assert figures[f"{subject}_events_per_s"] > 0
    ratio = figures["sqlite_vs_raw_per_tx"]
    assert figures["sqlite_vs_raw_per_tx_min"] <= ratio <= figures["sqlite_vs_raw_per_tx_max"]
    assert "sqlite_vs_adk_same_pragmas" not in figures and "postgres_vs_raw_per_tx" not in figures
    # It ran against its own temporary databases, not this one.
    assert not Session.objects.filter(id="bench-append").exists()
