"""Fixtures of the HTTP API tests: keys of each kind and a client that sends one."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from sessions_app.api.keys import create_key


class ApiClient:
    """Django's test client with a bearer key and JSON bodies."""

    def __init__(self, key: str) -> None:
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {key}") if key else Client()

    def get(self, path: str, **headers: Any) -> Any:
        return self.client.get(f"/api/v1{path}", headers=headers)

    def post(self, path: str, body: Any = None, **headers: Any) -> Any:
        return self.client.post(
            f"/api/v1{path}", body or {}, content_type="application/json", headers=headers
        )

    def put(self, path: str, body: Any = None, **headers: Any) -> Any:
        return self.client.put(
            f"/api/v1{path}", body or {}, content_type="application/json", headers=headers
        )

    def delete(self, path: str, **headers: Any) -> Any:
        return self.client.delete(f"/api/v1{path}", headers=headers)


@pytest.fixture
def writer(db: None) -> ApiClient:
    return ApiClient(create_key("writer").key)


@pytest.fixture
def reader(db: None) -> ApiClient:
    return ApiClient(create_key("reader", read_only=True).key)


@pytest.fixture
def ops_only(db: None) -> ApiClient:
    return ApiClient(create_key("ops-only", app_names=["ops"]).key)
