"""Errors of the HTTP API as ``application/problem+json`` (RFC 9457).

Every error answer has `type` (a URN naming the problem, ``urn:agentops:problem:<slug>``),
`title`, `status`, `detail` (specific, one line) and `instance` (the request path), plus
extension members naming the ids involved (e.g. `turn_id`, `status` for a conflict), so a
client can rebuild the runtime's named error. Tracebacks are never sent; an unexpected
error is logged without the request (its headers carry the key) and answered 500. A
database that could not give its lock in time (`agentops.db_busy`) is answered 503 with
``Retry-After``: a temporary condition, and nothing was written.
"""

from __future__ import annotations

import json
import logging
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from django.http import Http404, HttpRequest, HttpResponse
from ninja.errors import AuthenticationError, HttpError, ValidationError

from agentops.db_busy import RETRY_AFTER_SECONDS, is_database_busy
from agentops.runtime import errors
from agentops.runtime.todos import TodoToolError

if TYPE_CHECKING:
    from ninja import NinjaAPI

__all__ = ["PROBLEM_CONTENT_TYPE", "ApiProblem", "install_handlers", "problem_response"]

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"

_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    412: "Precondition failed",
    413: "Content too large",
    415: "Unsupported media type",
    422: "Unprocessable content",
    428: "Precondition required",
    429: "Too many requests",
    500: "Internal server error",
    503: "Service unavailable",
}


class ApiProblem(Exception):
    """An error answer: `status`, a problem `slug`, a one-line `detail` and extension
    members (`extra`, JSON values)."""

    def __init__(self, status: int, slug: str, detail: str, **extra: Any) -> None:
        self.status = status
        self.slug = slug
        self.detail = detail
        self.extra = extra
        super().__init__(detail)


def problem_response(
    request: HttpRequest | None,
    status: int,
    slug: str,
    detail: str,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> HttpResponse:
    """A problem+json response (RFC 9457) with `extra` as extension members."""
    body = {
        "type": f"urn:agentops:problem:{slug}",
        "title": _TITLES.get(status) or HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "instance": request.path if request is not None else "",
        **extra,
    }
    response = HttpResponse(json.dumps(body), status=status, content_type=PROBLEM_CONTENT_TYPE)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="agentops"'
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def problem_for(exc: Any) -> ApiProblem | None:
    """The problem a runtime error stands for, or None for an unexpected one."""
    if isinstance(exc, ApiProblem):
        return exc
    if isinstance(exc, errors.SessionNotFoundError):
        return ApiProblem(404, "session-not-found", str(exc), session_id=exc.session_id)
    if isinstance(exc, errors.TurnNotFoundError):
        return ApiProblem(404, "turn-not-found", str(exc), turn_id=exc.turn_id)
    if isinstance(exc, errors.EventNotFoundError):
        return ApiProblem(404, "event-not-found", str(exc), event_id=exc.event_id)
    if isinstance(exc, errors.TurnStateConflictError):
        return ApiProblem(
            409, "turn-state-conflict", str(exc), turn_id=exc.turn_id, turn_status=exc.status
        )
    if isinstance(exc, errors.InvalidOutcomeError):
        return ApiProblem(
            422, "invalid-outcome", str(exc), turn_status=exc.status, reason=exc.reason
        )
    if isinstance(exc, errors.InvalidTurnError):
        return ApiProblem(422, "invalid-turn", str(exc), turn_id=exc.turn_id, problem=exc.problem)
    if isinstance(exc, errors.InvalidEventError):
        return ApiProblem(422, "invalid-event", str(exc), problem=exc.problem)
    if isinstance(exc, TodoToolError):
        return ApiProblem(422, "invalid-todos", str(exc))
    return None


def _validation_detail(exc: Any) -> tuple[str, list[dict[str, Any]]]:
    found = []
    for error in exc.errors[:20]:
        parts = [str(part) for part in error.get("loc", ())]
        if parts[:2] == ["body", "body"]:  # django-ninja names the body parameter "body" too
            parts = parts[1:]
        location = ".".join(parts)
        found.append({"location": location, "message": str(error.get("msg", "invalid"))[:200]})
    first = found[0] if found else {"location": "body", "message": "invalid"}
    return f"{first['location']}: {first['message']}", found


def _unparsed(cause: BaseException) -> str:
    """Why a request body could not be parsed, in one line (positions, never content)."""
    if isinstance(cause, UnicodeDecodeError):
        return f"the body is not UTF-8 (byte {cause.start})"
    if isinstance(cause, RecursionError):
        return "the body is not JSON this server reads: it nests too deeply"
    if isinstance(cause, json.JSONDecodeError):
        return f"the body is not JSON: {cause.msg} at line {cause.lineno} column {cause.colno}"
    if isinstance(cause, ValueError):  # api.urls.NotJsonError
        return f"the body is not JSON: {str(cause)[:200]}"
    return "the body could not be parsed as JSON"


def install_handlers(api: NinjaAPI) -> None:
    """Make every error `api` answers a problem+json response."""

    def on_problem(request: HttpRequest, exc: Any) -> HttpResponse:
        problem = problem_for(exc)
        if problem is None:  # pragma: no cover (handled by on_unexpected)
            raise exc
        return problem_response(
            request, problem.status, problem.slug, problem.detail, **problem.extra
        )

    def on_validation(request: HttpRequest, exc: Any) -> HttpResponse:
        detail, found = _validation_detail(exc)
        return problem_response(request, 422, "invalid-request", detail, errors=found)

    def on_auth(request: HttpRequest, exc: Any) -> HttpResponse:
        return problem_response(
            request, 401, "unauthorized", "send a valid, unrevoked API key as Authorization: Bearer"
        )

    def on_http(request: HttpRequest, exc: Any) -> HttpResponse:
        unparsed = exc.__cause__
        if exc.status_code == 400 and unparsed is not None:  # the body parser's reason
            return problem_response(request, 400, "malformed-body", _unparsed(unparsed))
        return problem_response(request, exc.status_code, "http-error", str(exc)[:300])

    def on_404(request: HttpRequest, exc: Any) -> HttpResponse:
        return problem_response(request, 404, "not-found", "no such resource")

    def on_unexpected(request: HttpRequest, exc: Any) -> HttpResponse:
        problem = problem_for(exc)
        if problem is not None:
            return on_problem(request, problem)
        if isinstance(exc, ValueError):  # e.g. a duplicate session id from the store
            return problem_response(request, 409, "conflict", str(exc)[:300])
        if is_database_busy(exc):
            logger.warning("503 database busy: %s %s (%s)", request.method, request.path, exc)
            return problem_response(
                request, 503, "database-busy",
                "the database is busy with another write; nothing was changed: "
                f"try again in {RETRY_AFTER_SECONDS} seconds",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )  # fmt: skip
        # Logged without the request: its headers hold the caller's key.
        logger.error("API error in %s %s", request.method, request.path, exc_info=exc)
        return problem_response(request, 500, "internal-error", "the server failed; see its log")

    api.add_exception_handler(ApiProblem, on_problem)
    api.add_exception_handler(errors.AgentOpsRuntimeError, on_unexpected)
    api.add_exception_handler(ValidationError, on_validation)
    api.add_exception_handler(AuthenticationError, on_auth)
    api.add_exception_handler(HttpError, on_http)
    api.add_exception_handler(Http404, on_404)
    api.add_exception_handler(Exception, on_unexpected)
