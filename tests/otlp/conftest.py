"""Fixtures of the OTLP receiver tests: keys and a poster of OTLP bodies."""

from __future__ import annotations

import gzip
from typing import Any

import pytest
from django.test import Client

from sessions_app.api.keys import create_key


class OtlpPoster:
    """Posts OTLP bodies with a bearer key (or none) through Django's test client."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.client = Client()

    def post(
        self,
        body: bytes,
        content_type: str = "application/x-protobuf",
        *,
        path: str = "/v1/traces",
        gzipped: bool = False,
        **headers: Any,
    ) -> Any:
        if gzipped:
            body = gzip.compress(body)
            headers["Content-Encoding"] = "gzip"
        if self.key and "Authorization" not in headers:
            headers["Authorization"] = f"Bearer {self.key}"
        return self.client.post(path, body, content_type=content_type, headers=headers)


@pytest.fixture
def poster(db: None) -> OtlpPoster:
    return OtlpPoster(create_key("otel-writer").key)


@pytest.fixture
def reader(db: None) -> OtlpPoster:
    return OtlpPoster(create_key("otel-reader", read_only=True).key)
