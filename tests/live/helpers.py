"""Helpers for live-session tests: websocket communicators on the real ASGI stack,
scripted agents, and a daphne server in a subprocess."""

from __future__ import annotations

import asyncio
import html
import os
import re
import socket
import subprocess
import sys
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asgiref.sync import ThreadSensitiveContext
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from django.test import AsyncClient, Client

from agentops.asgi import application
from agentops.runtime.model import Content, Event, FinishReason, Role
from sessions_app import live

if TYPE_CHECKING:
    from django.test.client import _MonkeyPatchedASGIResponse

ROOT = Path(__file__).resolve().parents[2]


class PageClient(AsyncClient):
    """AsyncClient whose requests run in a ThreadSensitiveContext, as Django's ASGIHandler
    (daphne) runs them; without it sync middleware would hold asgiref's single thread
    while the view waits for the turn, which needs that thread too.

    A turn started through it runs on the test's event loop, which outlives the request
    (as daphne's does): wait for it with `turns_idle`. Never start a turn with the sync
    `Client`: its event loop closes with the response and cancels the turn mid-run."""

    async def request(self, **request: Any) -> _MonkeyPatchedASGIResponse:
        async with ThreadSensitiveContext():
            return await super().request(**request)


async def turns_idle(session_id: str, seconds: float = 20) -> None:
    """Wait until no turn of `session_id` runs in this process (TimeoutError after
    `seconds`)."""
    async with asyncio.timeout(seconds):
        while live.running_turn_ids(session_id):
            await asyncio.sleep(0.05)


def session_cookie(user: User) -> str:
    """A `Cookie` header value signing `user` in (a real Django session row)."""
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def communicator(
    session_id: str,
    cookie: str = "",
    *,
    after: int | None = None,
    origin: str = "http://testserver",
) -> WebsocketCommunicator:
    """A communicator on the full ASGI application (origin check, auth, routing)."""
    path = f"/ws/sessions/{session_id}/"
    if after is not None:
        path += f"?after={after}"
    headers = [(b"origin", origin.encode()), (b"host", b"testserver")]
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    return WebsocketCommunicator(application, path, headers=headers)


_STATE = re.compile(r'<span id="live-state"[^>]*>')
_DATA = re.compile(r'data-([a-z-]+)="([^"]*)"')
_STREAM = re.compile(r'id="stream-text-[^"]*"[^>]*>(.*?)</div>', re.S)
_IDS = ("last_id", "event_id", "pair_id", "after_id")


def frame(text: str | bytes) -> dict[str, Any]:
    """A frame the live websocket sent (sessions_app.live.render), read from its
    ``#live-state`` element: ``{"kind", "last_id", <its other data-* values>, "html"}``,
    names with underscores, ids as ints."""
    if isinstance(text, bytes):
        text = text.decode()
    head = _STATE.match(text)
    assert head, f"not a live frame: {text[:200]!r}"
    values: dict[str, Any] = {
        name.replace("-", "_"): html.unescape(value) for name, value in _DATA.findall(head[0])
    }
    for name in _IDS:
        if name in values:
            values[name] = int(values[name])
    values["html"] = text
    return values


def stream_text(message: dict[str, Any]) -> str:
    """The text a partial frame streams (plain text, unescaped)."""
    found = _STREAM.search(message["html"])
    assert found, message["html"]
    return html.unescape(found[1])


#: Frames of a message already received but not yet read, per connection.
_UNREAD: weakref.WeakKeyDictionary[Any, deque[str]] = weakref.WeakKeyDictionary()


def frames_of(message: str | bytes) -> list[str]:
    """The frames of one websocket message (each begins with its ``#live-state``; the
    server sends what queued up for a watcher in one message), as static/live.js reads
    them."""
    text = message.decode() if isinstance(message, bytes) else message
    start = '<span id="live-state"'
    return [start + part for part in text.split(start)[1:]] or [text]


async def receive_frame(comm: WebsocketCommunicator, timeout: float = 10) -> dict[str, Any]:
    """The next frame `comm` receives, read by `frame` (a message of several frames is
    read one frame at a time)."""
    unread = _UNREAD.setdefault(comm, deque())
    if not unread:
        unread.extend(frames_of(await comm.receive_from(timeout=timeout)))
    return frame(unread.popleft())


async def recv_frame(ws: Any, timeout: float | None = None) -> dict[str, Any]:
    """The next frame a ``websockets`` client connection `ws` receives, read by `frame`
    (a message of several frames is read one frame at a time); TimeoutError after
    `timeout` seconds."""
    unread = _UNREAD.setdefault(ws, deque())
    if not unread:
        unread.extend(frames_of(await asyncio.wait_for(ws.recv(), timeout)))
    return frame(unread.popleft())


async def receive_until(
    comm: WebsocketCommunicator, done: Callable[[dict[str, Any]], bool], timeout: float = 10
) -> list[dict[str, Any]]:
    """Frames (`frame`) received until `done(message)` is true for one (included)."""
    messages: list[dict[str, Any]] = []
    async with asyncio.timeout(timeout):
        while True:
            message = await receive_frame(comm, timeout)
            messages.append(message)
            if done(message):
                return messages


def turn_ended(message: dict[str, Any]) -> bool:
    return bool(message["kind"] == "turn" and message["status"] != "running")


def scripted_agent(
    text: str = "Hello there, watcher.", *, pieces: int = 3
) -> Callable[[list[Event]], AsyncIterator[Event]]:
    """An agent that streams `text` in `pieces` partial events, then stores it."""
    size = max(1, len(text) // pieces)
    chunks = [text[i : i + size] for i in range(0, len(text), size)]

    async def agent(context: list[Event]) -> AsyncIterator[Event]:
        for chunk in chunks:
            yield Event(
                author="bot", partial=True, content=Content(role=Role.ASSISTANT, text=chunk)
            )
        yield Event(
            author="bot",
            content=Content(role=Role.ASSISTANT, text=text),
            finish_reason=FinishReason.STOP,
        )

    return agent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def database_url_for_servers() -> str:
    """DATABASE_URL of the database this test runs on (for server subprocesses)."""
    params = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{params['NAME']}"
    user = params.get("USER") or ""
    password = f":{params['PASSWORD']}" if params.get("PASSWORD") else ""
    host = params.get("HOST") or "127.0.0.1"
    port = f":{params['PORT']}" if params.get("PORT") else ""
    return f"postgres://{user}{password}@{host}{port}/{params['NAME']}"


class DaphneServer:
    """``python -m daphne -p <free port> agentops.asgi:application`` on the test database.

    `env`: extra environment (e.g. REDIS_URL). Use as a context manager; output goes to
    .local/daphne-<port>.log.
    """

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url_for_servers(),
            "DJANGO_SETTINGS_MODULE": "agentops.settings",
            "AGENTOPS_LIVE_DEMO": "false",
            **(env or {}),
        }
        self.env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        self.process: subprocess.Popen[bytes] | None = None
        self.log = ROOT / ".local" / f"daphne-{self.port}.log"

    def __enter__(self) -> DaphneServer:
        self.log.parent.mkdir(exist_ok=True)
        # The default AGENTOPS_ALLOWED_ORIGINS follow PORT: pages served here may connect
        # (set here: a restarted server takes over the port of the one it replaces).
        self.env["PORT"] = str(self.port)
        out = self.log.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port),
             "agentops.asgi:application"],
            cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"daphne exited: {self.log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.1)
        self.__exit__()
        raise RuntimeError("daphne did not start in 30 s")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
