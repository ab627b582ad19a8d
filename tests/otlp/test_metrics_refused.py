"""SDKs export metrics to the same endpoint by default (``OTEL_METRICS_EXPORTER`` is
``otlp``): ``/v1/metrics`` answers 404 with the reason in the request's encoding, which
exporters log (and do not retry), and writes nothing."""

from __future__ import annotations

import json

import pytest
from google.rpc import status_pb2

from sessions_app.otlp.models import OtlpSpan
from tests.otlp.conftest import OtlpPoster


@pytest.mark.parametrize("path", ["/v1/metrics", "/api/public/otel/v1/metrics"])
def test_metrics_get_404_with_the_variable_to_set(poster: OtlpPoster, path: str) -> None:
    response = poster.post(b"\x0a\x00", path=path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/x-protobuf"
    status = status_pb2.Status.FromString(response.content)
    assert "OTEL_METRICS_EXPORTER=none" in status.message
    answer = poster.post(b"{}", "application/json", path=path)
    assert answer.status_code == 404
    assert "not metrics" in json.loads(answer.content)["message"]
    assert not OtlpSpan.objects.exists()
