"""The resume status a request keeps on its sessions (`otlp.resume_batch`, from what it
wrote, without reading it back) equals the full recomputation
(`store.resume.refresh_resume_status`), with the page facts, after every batch: whole,
split, re-sent, reordered, a session's turns arriving in different requests."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from sessions_app import models
from sessions_app.otlp.models import OtlpSpan
from sessions_app.store.resume import refresh_resume_status
from tests.otlp.agent_spans import conversation_spans, protobuf_body, shuffled_batches
from tests.otlp.conftest import OtlpPoster
from tests.test_page_facts import _kept, _recomputed

_COLUMNS = ("protocol_issue_count", "cannot_resume", "orphan_result_count")


def _kept_status() -> dict[str, tuple[Any, ...]]:
    return {row[0]: row[1:] for row in models.Session.objects.values_list("pk", *_COLUMNS)}


def _assert_recomputed() -> None:
    kept = _kept_status()
    assert kept
    for session_id in kept:
        assert _kept(session_id) == _recomputed(session_id), session_id
    with transaction.atomic():
        for session_id in kept:
            refresh_resume_status(session_id)
        assert _kept_status() == kept
        transaction.set_rollback(True)


def test_kept_status_equals_the_full_recomputation_after_every_batch(
    poster: OtlpPoster,
) -> None:
    spans = conversation_spans()
    for start in range(0, len(spans), 4):
        assert poster.post(protobuf_body(spans[start : start + 4])).status_code == 200
        _assert_recomputed()
    assert poster.post(protobuf_body(spans)).status_code == 200  # an exporter's retry
    _assert_recomputed()
    verdicts = _kept_status()
    assert any(any(values) for values in verdicts.values())  # a dangling call is counted
    for seed in (1, 2, 3):
        models.Session.objects.all().delete()
        OtlpSpan.objects.all().delete()
        for batch in shuffled_batches(spans, seed):
            assert poster.post(protobuf_body(batch)).status_code == 200
            _assert_recomputed()
        assert _kept_status() == verdicts, seed
