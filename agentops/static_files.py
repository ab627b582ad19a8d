"""Static files served by whitenoise without making every other request synchronous.

whitenoise's middleware is synchronous only, so under ASGI (daphne) Django ran every
request's middleware above it in a worker thread and the rest of the chain back on the
event loop (`async_to_sync` inside `sync_to_async`): two thread handoffs per request,
API calls included, for a lookup that answers only ``/static/`` URLs. `static_files`
makes the same lookup (whitenoise's own table, or its `find_file` when it refreshes) on
the event loop and hands only a static file's response to whitenoise, in a thread; every
other request goes on asynchronously. On a synchronous chain (the test client) it is
whitenoise's middleware as it is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from inspect import iscoroutinefunction
from typing import Any, cast

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import sync_and_async_middleware
from whitenoise.middleware import WhiteNoiseMiddleware

__all__ = ["static_files"]


@sync_and_async_middleware
def static_files(get_response: Callable[[HttpRequest], Any]) -> Any:
    """Middleware: whitenoise's static files; asynchronous for every other request."""
    files = WhiteNoiseMiddleware(get_response)
    if not iscoroutinefunction(get_response):
        return files
    downstream = cast(Callable[[HttpRequest], Awaitable[HttpResponse]], get_response)

    async def middleware(request: HttpRequest) -> HttpResponse:
        path = request.path_info
        found = files.find_file(path) if files.autorefresh else files.files.get(path)
        if found is None:
            return await downstream(request)
        serve = cast(Callable[[Any, HttpRequest], HttpResponse], files.serve)
        return await sync_to_async(serve, thread_sensitive=False)(found, request)

    return middleware
