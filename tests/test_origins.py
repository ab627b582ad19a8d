"""The websocket Origin check (agentops.origins): scheme, host and port must match one of
AGENTOPS_ALLOWED_ORIGINS, so another web app on the same host cannot open the live stream
with a signed-in user's cookies. The default follows PORT (`dev.py serve`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from agentops.asgi import application
from tests.factories import make_session
from tests.live.helpers import session_cookie

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[1]


async def _connects(cookie: str, origin: str | None) -> bool:
    headers = [(b"host", b"localhost:8000"), (b"cookie", cookie.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    comm = WebsocketCommunicator(application, "/ws/sessions/s-origin/", headers=headers)
    connected, _ = await comm.connect()
    await comm.disconnect()
    return bool(connected)


@pytest.mark.parametrize(
    ("origin", "accepted"),
    [
        ("http://localhost:8000", True),
        ("http://127.0.0.1:8000", True),
        ("http://localhost:9999", False),  # another app on the same host
        ("http://localhost", False),  # port 80
        ("https://localhost:8000", False),  # another scheme
        ("http://localhost.evil.example:8000", False),
        ("null", False),
        (None, False),  # no Origin header at all
    ],
)
async def test_origin_must_match_scheme_host_and_port(
    operator_user: User, settings: Any, origin: str | None, accepted: bool
) -> None:
    settings.AGENTOPS_ALLOWED_ORIGINS = ["http://localhost:8000", "http://127.0.0.1:8000"]
    await sync_to_async(make_session)("s-origin")
    cookie = await sync_to_async(session_cookie)(operator_user)
    assert await _connects(cookie, origin) is accepted


def _settings_value(env: dict[str, str], expression: str) -> subprocess.CompletedProcess[str]:
    code = f"from agentops import settings; print({expression})"
    clean = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", **env}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True
    )


def test_default_origins_follow_port_and_trusted_origins() -> None:
    done = _settings_value(
        {"PORT": "8001", "CSRF_TRUSTED_ORIGINS": "https://ops.example.com"},
        "settings.AGENTOPS_ALLOWED_ORIGINS",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(
        ["http://127.0.0.1:8001", "http://localhost:8001", "https://ops.example.com"]
    )


def test_a_malformed_origin_fails_loudly() -> None:
    done = _settings_value({"AGENTOPS_ALLOWED_ORIGINS": "localhost:8000"}, "1")
    assert done.returncode != 0
    assert "AGENTOPS_ALLOWED_ORIGINS" in done.stderr and "is not an origin" in done.stderr
