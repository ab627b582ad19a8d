"""GET /api/v1/sessions/{id}/export streams the same document as the dashboard's export."""

from __future__ import annotations

import json

import pytest

from sessions_app.export.build import build_export
from sessions_app.models import Session
from tests.api.conftest import ApiClient

pytestmark = pytest.mark.django_db


def test_api_export_is_streamed_and_is_the_export_document(writer: ApiClient) -> None:
    assert writer.post("/sessions", {"app_name": "ops", "session_id": "s-1"}).status_code == 201
    assert writer.post("/sessions/s-1/turns", {"turn_id": "t-1"}).status_code == 201
    response = writer.get("/sessions/s-1/export")
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"].startswith("application/json")
    assert "Content-Disposition" not in response
    document = json.loads(b"".join(response.streaming_content))
    expected = build_export(Session.objects.get(pk="s-1"))
    assert {k: v for k, v in document.items() if k != "exported_at"} == {
        k: v for k, v in expected.items() if k != "exported_at"
    }
    assert [turn["id"] for turn in document["turns"]] == ["t-1"]
