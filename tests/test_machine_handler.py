"""The machine endpoints' handler (agentops/handlers.py), over ASGI as daphne calls it:
the same security headers and refusals as every page, none of the browser middleware,
and each request's database work on a long-lived thread that keeps its connection."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import HttpCommunicator
from django.db import connection

from sessions_app.api.keys import create_key

pytestmark = pytest.mark.django_db(transaction=True)

SECURITY_HEADERS = (
    "content-security-policy",
    "x-frame-options",
    "x-content-type-options",
    "referrer-policy",
    "cross-origin-opener-policy",
)


@pytest.fixture
def machine() -> Iterator[Any]:
    from agentops.asgi import machine_handler

    yield machine_handler
    machine_handler.lanes.close_connections()  # PostgreSQL: the test database can be dropped


async def _call(
    path: str,
    method: str = "GET",
    body: bytes = b"",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    from agentops.asgi import application

    sent = [(b"host", b"testserver"), *(headers or [])]
    communicator = HttpCommunicator(application, method, path, body=body, headers=sent)
    response = await communicator.get_response(timeout=10)
    found = {name.decode().lower(): value.decode() for name, value in response["headers"]}
    return response["status"], found, response["body"]


async def test_api_answers_carry_the_security_headers_and_no_session_middleware(
    machine: Any,
) -> None:
    status, headers, _body = await _call("/api/v1/no-such-operation")
    assert status == 404 and headers["content-type"] == "application/problem+json"
    for name in SECURITY_HEADERS:
        assert name in headers, name
    assert headers["x-frame-options"] == "DENY"
    key = (await sync_to_async(create_key)("headers-test")).key
    auth = [(b"authorization", f"Bearer {key}".encode())]
    status, headers, _body = await _call("/api/v1/sessions/no-such-session", headers=auth)
    assert status == 404 and headers["content-type"] == "application/problem+json"
    assert int(headers["content-length"]) > 0
    for name in SECURITY_HEADERS:
        assert name in headers, name
    # Neither the session nor the CSRF middleware ran (they add Vary: Cookie).
    assert "vary" not in headers
    # A page still takes the whole chain.
    status, headers, _body = await _call("/accounts/login/")
    assert status == 200 and "Cookie" in headers["vary"]


async def test_refusals_are_the_api_ones(machine: Any, settings: Any) -> None:
    settings.AGENTOPS_API_MAX_BODY_BYTES = 100
    big = [(b"content-type", b"application/json"), (b"content-length", b"5000")]
    status, headers, _body = await _call("/api/v1/sessions", "POST", b"{}" * 2500, big)
    assert status == 413 and headers["content-type"] == "application/problem+json"
    status, headers, _ = await _call("/api/v1/sessions/x%00y")
    assert status == 400
    protobuf = [(b"content-type", b"application/x-protobuf")]
    status, headers, _ = await _call("/v1/traces", "POST", b"", protobuf)
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")
    for name in SECURITY_HEADERS:
        assert name in headers, name


async def test_a_lane_keeps_its_database_connection_between_requests(
    machine: Any, settings: Any
) -> None:
    key = (await sync_to_async(create_key)("lane-test")).key
    auth = [(b"authorization", f"Bearer {key}".encode())]
    opened = []
    for _ in range(3):
        status, _headers, _body = await _call("/api/v1/sessions/no-such-session", headers=auth)
        assert status == 404
        # The handler goes on a moment after the answer (closing it); then the lane that
        # served is given back, last: the next request takes it again.
        while len(machine.lanes.free) < settings.AGENTOPS_MACHINE_THREADS:
            await asyncio.sleep(0.01)
        lane = machine.lanes.free[-1]
        opened.append(lane.submit(lambda: connection.connection).result())
    assert opened[0] is not None
    assert opened[0] is opened[1] is opened[2]
