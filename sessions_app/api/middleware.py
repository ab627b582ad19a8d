"""Request rules of the HTTP API that apply before any operation runs:

- a request to /api/ whose body is larger than AGENTOPS_API_MAX_BODY_BYTES is answered
  413 problem+json before anything reads it;
- HEAD works wherever GET does (as on every page): the operation runs as GET and the
  answer keeps its status and headers without the body (RFC 9110 §9.3.2);
- what Django itself answers under /api/ and /v1/ (an unknown path, a method the path
  does not take) is problem+json like every other error of the API, not an HTML page."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import cast

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import sync_and_async_middleware

from sessions_app.api.problems import problem_response

__all__ = ["api_body_limit", "declared_length"]

Handler = Callable[[HttpRequest], HttpResponse] | Callable[[HttpRequest], Awaitable[HttpResponse]]


def declared_length(request: HttpRequest) -> int:
    """The body's size its Content-Length says (0 when it says none), read before the
    body itself: Django refuses to read one over DATA_UPLOAD_MAX_MEMORY_SIZE."""
    try:
        return max(0, int(request.META.get("CONTENT_LENGTH") or 0))
    except ValueError:
        return 0


def _too_large(request: HttpRequest) -> HttpResponse | None:
    if not request.path.startswith("/api/"):
        return None
    limit = settings.AGENTOPS_API_MAX_BODY_BYTES
    length = declared_length(request)
    if length <= limit:
        return None
    return problem_response(
        request, 413, "body-too-large", f"the body has {length} bytes; the limit is {limit}"
    )


def _nul_in_body(request: HttpRequest) -> HttpResponse | None:
    """400 problem+json for a JSON body of the API holding a NUL character (raw or
    escaped): PostgreSQL text cannot store it, and nothing is written."""
    if not request.path.startswith("/api/v1/") or request.content_type != "application/json":
        return None
    body = request.body
    if b"\x00" not in body and b"\\u0000" not in body:
        return None
    return problem_response(
        request, 400, "nul-character", "the body holds a NUL character (\\u0000): text cannot"
    )


def _head_as_get(request: HttpRequest) -> bool:
    """Run an API HEAD request as GET; True when the body must then be dropped."""
    if request.method != "HEAD" or not request.path.startswith("/api/"):
        return False
    request.method = "GET"
    return True


def _without_body(response: HttpResponse) -> HttpResponse:
    response.content = b""
    return response


def _as_problem(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """An HTML 404 or 405 that Django answered for a path of the API (no operation ran)
    as problem+json; any other response as it is."""
    html = response.get("Content-Type", "").startswith("text/html")
    if not html or not request.path.startswith(("/api/", "/v1/")):
        return response
    if response.status_code == 404:
        problem = problem_response(
            request, 404, "not-found", f"no operation at {request.path[:200]}"
        )
    elif response.status_code == 405:
        problem = problem_response(
            request, 405, "method-not-allowed",
            f"{request.method} is not allowed here; allowed: {response.get('Allow') or 'none'}",
        )  # fmt: skip
    else:
        return response
    # What the middlewares inside added (the security headers, Allow) stays.
    for header, value in response.items():
        if header.lower() not in {"content-type", "content-length"}:
            problem.setdefault(header, value)
    return problem


@sync_and_async_middleware
def api_body_limit(get_response: Handler) -> Handler:
    """Middleware: 413 problem+json for an API request body over the limit; HEAD as GET
    without the body."""
    if iscoroutinefunction(get_response):

        async def middleware(request: HttpRequest) -> HttpResponse:
            refused = _too_large(request) or _nul_in_body(request)
            if refused is not None:
                return refused
            head = _head_as_get(request)
            response = await cast(Callable[[HttpRequest], Awaitable[HttpResponse]], get_response)(
                request
            )
            response = _as_problem(request, response)
            return _without_body(response) if head else response

        return middleware

    def sync_middleware(request: HttpRequest) -> HttpResponse:
        refused = _too_large(request) or _nul_in_body(request)
        if refused is not None:
            return refused
        head = _head_as_get(request)
        response = _as_problem(
            request, cast(Callable[[HttpRequest], HttpResponse], get_response)(request)
        )
        return _without_body(response) if head else response

    return sync_middleware
