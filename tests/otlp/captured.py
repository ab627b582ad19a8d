"""Reading the OTLP fixtures captured from real producers (`tests/otlp/fixtures/`, how
they were made: its README), for the tests that replay them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_spans(fixture: str) -> list[dict[str, Any]]:
    """The spans of OTLP/JSON fixture `fixture` by start time, each with its attributes
    as ``attrs`` (name -> the value of whichever type it has)."""
    document = json.loads((FIXTURES / fixture).read_text())
    spans = [
        {
            **span,
            "attrs": {
                a["key"]: next(iter(a["value"].values())) for a in span.get("attributes", [])
            },
        }
        for resource in document["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    ]
    return sorted(spans, key=lambda s: int(s["startTimeUnixNano"]))


def land_fixture(poster: Any, fixture: str) -> None:
    """POST fixture `fixture` as the exporter's JSON; every span is kept (no partial
    success)."""
    response = poster.post((FIXTURES / fixture).read_bytes(), "application/json")
    assert response.status_code == 200, response.content
    assert json.loads(response.content) == {}  # no partial success: every span kept


def session_turns(session_id: str) -> list[Any]:
    """The turns of `session_id`, in the order they started."""
    from sessions_app import models

    return list(models.Turn.objects.filter(session_id=session_id).order_by("started_at"))
