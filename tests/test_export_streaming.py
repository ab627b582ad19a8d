"""The streamed export (`export_text`, the download view) writes exactly the bytes of the
whole document (`build_export` dumped with indent=1), page by page."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from sessions_app.export import build
from sessions_app.export.build import build_export, export_text
from sessions_app.ingest import import_file
from sessions_app.models import Session
from tests.conftest import CORPUS

pytestmark = pytest.mark.django_db

FILES = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".json", ".jsonl"))[::7]


@pytest.fixture
def fixed_now(monkeypatch: pytest.MonkeyPatch) -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    monkeypatch.setattr("django.utils.timezone.now", lambda: moment)


@pytest.mark.parametrize("chunk_rows", [1, 3, 2000])
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:40])
def test_streamed_export_equals_the_whole_document(
    path: Path, chunk_rows: int, fixed_now: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(build, "CHUNK_ROWS", chunk_rows)
    report = import_file(path)
    for session_id in report.session_ids:
        session = Session.objects.get(pk=session_id)
        whole = json.dumps(build_export(session), ensure_ascii=False, indent=1)
        assert "".join(export_text(session)) == whole


def test_export_download_is_streamed_and_ends_with_a_newline(
    corpus: Path, admin_client: Any, fixed_now: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(build, "CHUNK_ROWS", 5)
    sid = import_file(corpus / "google-adk/adk-samples__customer-service__123.session.json")
    session = Session.objects.get(pk=sid.session_ids[0])
    response = admin_client.get(reverse("sessions:export", args=[session.id]))
    assert response.streaming
    body = b"".join(response.streaming_content)
    whole = json.dumps(build_export(session), ensure_ascii=False, indent=1)
    assert body == (whole + "\n").encode()


def test_export_of_a_session_without_turns_or_events_is_empty_lists(fixed_now: None) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    session = Session.objects.create(
        id="empty", app_name="a", user_id="u", created_at=now, updated_at=now
    )
    document = json.loads("".join(export_text(session)))
    assert document["turns"] == [] and document["events"] == []
    assert "".join(export_text(session)) == json.dumps(
        build_export(session), ensure_ascii=False, indent=1
    )
