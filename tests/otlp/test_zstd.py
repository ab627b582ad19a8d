"""`Content-Encoding: zstd`, which the OpenTelemetry Collector's OTLP/HTTP exporter offers
(`compression: zstd`): bodies land as uncompressed ones do, in one frame with or without
its content size (a streaming encoder leaves it out) or in several; a frame cut short,
other bytes after it, or no frame at all get 400, a small body inflating past the limit
413, and nothing is written."""

from __future__ import annotations

import io

import pytest
import zstandard
from django.test import override_settings
from opentelemetry.sdk.trace import ReadableSpan

from sessions_app import models
from sessions_app.otlp.models import OtlpSpan
from tests.otlp.agent_spans import conversation_spans, json_body, protobuf_body
from tests.otlp.conftest import OtlpPoster
from tests.otlp.test_receiver import landed


def _streamed(body: bytes) -> bytes:
    """`body` as a streaming zstd encoder writes it: no content size in the frame."""
    out = io.BytesIO()
    with zstandard.ZstdCompressor(write_content_size=False).stream_writer(
        out, closefd=False
    ) as writer:
        writer.write(body)
    return out.getvalue()


def _expected(poster: OtlpPoster, spans: list[ReadableSpan]) -> list[object]:
    assert poster.post(protobuf_body(spans)).status_code == 200
    found = landed()
    models.Session.objects.all().delete()
    OtlpSpan.objects.all().delete()
    return found


@pytest.mark.parametrize("layout", ["one frame", "streamed", "two frames", "json"])
def test_zstd_bodies_land_as_plain_ones(poster: OtlpPoster, layout: str) -> None:
    spans = conversation_spans()
    expected = _expected(poster, spans)
    body, content_type = protobuf_body(spans), "application/x-protobuf"
    if layout == "one frame":
        packed = zstandard.ZstdCompressor().compress(body)
    elif layout == "streamed":
        packed = _streamed(body)
    elif layout == "two frames":  # two serialised requests joined are one request
        half = len(spans) // 2
        packed = b"".join(
            zstandard.ZstdCompressor().compress(protobuf_body(part))
            for part in (spans[:half], spans[half:])
        )
    else:
        body, content_type = json_body(spans), "application/json"
        packed = zstandard.ZstdCompressor().compress(body)
    response = poster.post(packed, content_type, Content_Encoding="zstd")
    assert response.status_code == 200, response.content
    assert landed() == expected


def _bad() -> dict[str, bytes]:
    packed = _streamed(protobuf_body(conversation_spans()))
    return {
        "cut short": packed[:-4],
        "cut in the middle": packed[: len(packed) // 2],
        "other bytes after it": packed + b"trailing",
        "not zstd": b"not a zstd frame",
        "empty": b"",
    }


@pytest.mark.parametrize("case", list(_bad()))
def test_corrupt_zstd_bodies_get_400_and_write_nothing(poster: OtlpPoster, case: str) -> None:
    for path in ("/v1/traces", "/v1/logs"):
        response = poster.post(_bad()[case], path=path, Content_Encoding="zstd")
        assert response.status_code == 400, (case, path, response.content)
        assert b"not valid zstd" in response.content
    assert not OtlpSpan.objects.exists() and not models.Session.objects.exists()


def test_a_zstd_bomb_gets_413(poster: OtlpPoster) -> None:
    bomb = zstandard.ZstdCompressor().compress(b"\0" * 5_000_000)  # a few hundred bytes
    with override_settings(AGENTOPS_API_MAX_BODY_BYTES=10_000, AGENTOPS_OTLP_INFLATE_FACTOR=10):
        response = poster.post(bomb, Content_Encoding="zstd")
    assert response.status_code == 413 and b"decompressed" in response.content
    assert not OtlpSpan.objects.exists()


def test_an_unknown_encoding_names_the_supported_ones(poster: OtlpPoster) -> None:
    response = poster.post(b"x", Content_Encoding="br")
    assert response.status_code == 415
    assert b"gzip, deflate, zstd" in response.content
