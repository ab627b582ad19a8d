"""The two Django HTTP handlers behind `agentops.asgi`: the machine endpoints' lean one and
everybody else's.

Programs call the machine endpoints (the HTTP API under ``/api/``, the OTLP receiver under
``/v1/``): they authenticate with an API key on every request and never use a browser
session, a CSRF token, messages, a signed-in user or htmx. `MachineHandler` serves them
with the middleware list ``MACHINE_MIDDLEWARE`` (settings.py): the security headers, the
Content-Security-Policy, the API's body limit and problem+json answers, the 400 for
control characters, Content-Length, and the database-busy 503, the same as on every page.
Django's own middleware (`MiddlewareMixin`) under ASGI runs each of its hooks in a worker
thread, two hand-offs per middleware and request; the hooks of those kept here do no I/O,
so `OnTheLoop` runs them on the event loop instead. `WebHandler` serves every other path
with ``MIDDLEWARE``, as Django's `ASGIHandler` does.

Threads and connections: Django runs a request's synchronous code (the ORM) in a thread
of its own, made for the request and ended after it (asgiref's `ThreadSensitiveContext`),
so a database connection never outlives its request. `MachineHandler` runs each request
on one of `Lanes`: AGENTOPS_MACHINE_THREADS long-lived threads, each serving one request
at a time, as a WSGI server's worker threads do, so each keeps its connection (and the
SQLite pragmas set on it) for CONN_MAX_AGE seconds, checked before reuse when
CONN_HEALTH_CHECKS is on. A request that finds every lane busy runs on a thread of its own,
as on the web handler; such a thread closes its connections when its request ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from csp.middleware import CSPMiddleware
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.db import connections
from django.http import HttpRequest, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware

__all__ = [
    "Lanes",
    "MachineHandler",
    "OnTheLoop",
    "WebHandler",
    "is_machine_path",
    "route_http",
]


def is_machine_path(path: str) -> bool:
    """Whether `path` (without the script prefix) is a machine endpoint's."""
    return path.startswith(tuple(settings.MACHINE_PATH_PREFIXES))


class OnTheLoop:
    """Mixin for a `MiddlewareMixin` middleware whose `process_request` and
    `process_response` do no I/O and never block: under ASGI they run on the event loop
    rather than in a worker thread each (`MiddlewareMixin.__acall__`)."""

    get_response: Any

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        """`MiddlewareMixin.__acall__` without the thread hand-offs."""
        response = None
        process_request = getattr(self, "process_request", None)
        if process_request is not None:
            response = process_request(request)
        response = response or await self.get_response(request)
        process_response = getattr(self, "process_response", None)
        if process_response is not None:
            response = process_response(request, response)
        return response  # type: ignore[no-any-return]


class Security(OnTheLoop, SecurityMiddleware):
    """`SecurityMiddleware` (headers, HTTPS redirect) on the event loop."""


class ContentSecurityPolicy(OnTheLoop, CSPMiddleware):
    """django-csp's `CSPMiddleware` (the Content-Security-Policy header) on the event loop."""


class Common(OnTheLoop, CommonMiddleware):
    """`CommonMiddleware` (Content-Length, the trailing-slash redirect) on the event loop."""


class FrameOptions(OnTheLoop, XFrameOptionsMiddleware):
    """`XFrameOptionsMiddleware` (X-Frame-Options) on the event loop."""


class Lanes:
    """`count` long-lived single-thread executors; a request takes a free one for its
    synchronous code (`acquire`) and gives it back when it ends."""

    def __init__(self, count: int, name: str) -> None:
        self.free = [
            ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{name}-{number}")
            for number in range(count)
        ]

    def acquire(self) -> ThreadPoolExecutor | None:
        """A free lane, or None when every lane serves a request."""
        return self.free.pop() if self.free else None

    def release(self, lane: ThreadPoolExecutor) -> None:
        """Give `lane` back."""
        self.free.append(lane)

    def close_connections(self) -> None:
        """Close the database connections of every free lane (tests dropping a database)."""
        for lane in self.free:
            lane.submit(connections.close_all).result()


class WebHandler(ASGIHandler):
    """Django's `ASGIHandler` (``MIDDLEWARE``); the thread a request's synchronous code ran
    on ends with it, and so does that thread's database connection, whatever CONN_MAX_AGE
    says (a persistent connection only lives on a lane, `MachineHandler`)."""

    def __init__(self) -> None:
        super().__init__()
        # With CONN_MAX_AGE 0 Django closes them itself when the request finishes.
        self.closes_connections = any(
            database.get("CONN_MAX_AGE", 0) != 0 for database in settings.DATABASES.values()
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Serve one request on a thread of its own (see the class)."""
        async with ThreadSensitiveContext():
            try:
                await self.handle(scope, receive, send)
            finally:
                if self.closes_connections:
                    await sync_to_async(connections.close_all)()


@contextmanager
def _middleware(names: list[str]) -> Iterator[None]:
    """``settings.MIDDLEWARE`` reads `names` while Django builds a handler's chain from
    it (at start-up, before any request)."""
    full = settings.MIDDLEWARE
    settings.MIDDLEWARE = names
    try:
        yield
    finally:
        settings.MIDDLEWARE = full


class MachineHandler(WebHandler):
    """The machine endpoints' handler: ``MACHINE_MIDDLEWARE``, each request on a lane
    (module docstring)."""

    def __init__(self) -> None:
        self.lanes = Lanes(settings.AGENTOPS_MACHINE_THREADS, "agentops-machine")
        super().__init__()

    def load_middleware(self, is_async: bool = False) -> None:
        """Django's chain of ``MACHINE_MIDDLEWARE``."""
        with _middleware(list(settings.MACHINE_MIDDLEWARE)):
            super().load_middleware(is_async)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Serve one request on a free lane, else as `WebHandler` does."""
        lane = self.lanes.acquire()
        if lane is None:
            await super().__call__(scope, receive, send)
            return
        try:
            async with ThreadSensitiveContext(executor=lane):
                await self.handle(scope, receive, send)
        finally:
            self.lanes.release(lane)


def route_http(web: WebHandler, machine: MachineHandler) -> Any:
    """An ASGI application sending machine endpoints' requests to `machine`, the others to
    `web`."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope["path"].removeprefix(scope.get("root_path", ""))
        handler = machine if is_machine_path(path) else web
        await handler(scope, receive, send)

    return app
