"""Static files under ASGI without a synchronous middleware (`agentops.static_files`)."""

from __future__ import annotations

from typing import Any, cast

from django.conf import settings
from django.test import AsyncClient, Client
from django.utils.module_loading import import_string

from agentops.settings import BASE_DIR


def test_every_middleware_runs_on_the_event_loop_under_asgi() -> None:
    """One synchronous middleware (whitenoise's own) made Django run every request's
    chain above it in a thread and the rest back on the loop."""
    sync_only = [
        path
        for path in settings.MIDDLEWARE
        if not getattr(import_string(path), "async_capable", False)
    ]
    assert sync_only == []


async def test_a_static_file_is_served_through_asgi_as_whitenoise_serves_it() -> None:
    response = await AsyncClient().get("/static/live.js")
    assert response.status_code == 200
    body = b"".join(cast(Any, response).streaming_content)
    assert body == (BASE_DIR / "static" / "live.js").read_bytes()
    assert response["Access-Control-Allow-Origin"] == "*"  # whitenoise's own header
    assert (await AsyncClient().get("/static/no-such-file.js")).status_code == 404


def test_the_synchronous_chain_serves_it_too() -> None:
    response = Client().get("/static/app.css")
    assert response.status_code == 200
    body = b"".join(cast(Any, response).streaming_content)
    assert body == (BASE_DIR / "static" / "app.css").read_bytes()
