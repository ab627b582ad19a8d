"""Refusing request input no view can use, in one place, before any view runs.

`reject_unusable_input` answers 400 with a one-line plain-text reason when the request
carries a character that no stored value may hold: any control character in the URL path
(ids never hold one, `sessions_app.ids`), or a NUL or other C0 control character except
tab, line feed and carriage return in a query parameter or a form field (names and
values). PostgreSQL's text columns cannot store NUL, so without this check such a value
reached the database as a 500; SQLite stored it silently. Over-long values and wrong types
are left to the views, which know their fields.

`OneLineClientErrors` is a logging filter for ``django.request`` and ``django.security``:
records about 4xx answers (a 403 from PermissionDenied, a 400 from SuspiciousOperation)
keep their one-line message and lose the traceback Django attaches; 5xx keep theirs.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from inspect import iscoroutinefunction

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict
from django.utils.decorators import sync_and_async_middleware

__all__ = ["OneLineClientErrors", "input_problem", "reject_unusable_input"]

_PATH_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Tab, line feed and carriage return are ordinary in a textarea; the other C0 controls
# (and DEL) are never typed by a person.
_FIELD_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

Handler = Callable[[HttpRequest], HttpResponse]
AsyncHandler = Callable[[HttpRequest], Awaitable[HttpResponse]]


def _describe(character: str) -> str:
    return "NUL character" if character == "\x00" else f"control character {character!r}"


def _field_problem(where: str, data: QueryDict) -> str | None:
    for name, values in data.lists():
        texts: Iterable[str] = (name, *values)
        for text in texts:
            bad = _FIELD_CONTROL.search(text)
            if bad:
                return f"{_describe(bad.group())} in {where} {name[:40]!r}"
    return None


def input_problem(request: HttpRequest) -> str | None:
    """Why `request` is refused (one line, e.g. "NUL character in the URL path"), or None.

    Reads the path, the query parameters and, for form-encoded POSTs, the form fields.
    """
    bad = _PATH_CONTROL.search(request.path)
    if bad:
        return f"{_describe(bad.group())} in the URL path"
    problem = _field_problem("query parameter", request.GET)
    if problem is None and request.method == "POST":
        problem = _field_problem("form field", request.POST)
    return problem


def _refusal(problem: str) -> HttpResponse:
    return HttpResponseBadRequest(f"Bad request: {problem}.\n", content_type="text/plain")


@sync_and_async_middleware
def reject_unusable_input(get_response: Handler | AsyncHandler) -> Handler | AsyncHandler:
    """Middleware: 400 with the reason (see the module docstring) instead of the view."""
    if iscoroutinefunction(get_response):
        async_handler: AsyncHandler = get_response

        async def async_middleware(request: HttpRequest) -> HttpResponse:
            problem = input_problem(request)
            return _refusal(problem) if problem else await async_handler(request)

        return async_middleware

    sync_handler: Handler = get_response  # type: ignore[assignment]

    def middleware(request: HttpRequest) -> HttpResponse:
        problem = input_problem(request)
        return _refusal(problem) if problem else sync_handler(request)

    return middleware


class OneLineClientErrors(logging.Filter):
    """Drop the traceback from log records about a 4xx answer (see the module docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep every record; strip `exc_info` when its ``status_code`` is below 500."""
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
