"""Body size limit of the HTTP API: a request to /api/ whose body is larger than
AGENTOPS_API_MAX_BODY_BYTES is answered 413 problem+json before anything reads it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import cast

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import sync_and_async_middleware

from sessions_app.api.problems import problem_response

__all__ = ["api_body_limit"]

Handler = Callable[[HttpRequest], HttpResponse] | Callable[[HttpRequest], Awaitable[HttpResponse]]


def _too_large(request: HttpRequest) -> HttpResponse | None:
    if not request.path.startswith("/api/"):
        return None
    limit = settings.AGENTOPS_API_MAX_BODY_BYTES
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length <= limit:
        return None
    return problem_response(
        request, 413, "body-too-large", f"the body has {length} bytes; the limit is {limit}"
    )


@sync_and_async_middleware
def api_body_limit(get_response: Handler) -> Handler:
    """Middleware: 413 problem+json for an API request body over the limit."""
    if iscoroutinefunction(get_response):

        async def middleware(request: HttpRequest) -> HttpResponse:
            refused = _too_large(request)
            if refused is not None:
                return refused
            return await cast(Callable[[HttpRequest], Awaitable[HttpResponse]], get_response)(
                request
            )

        return middleware

    def sync_middleware(request: HttpRequest) -> HttpResponse:
        refused = _too_large(request)
        if refused is not None:
            return refused
        return cast(Callable[[HttpRequest], HttpResponse], get_response)(request)

    return sync_middleware
