"""A write that cannot get the database's write lock in time answers 503, not 500.

SQLite has one writer at a time. A request that writes while another writer (a long
import, a running turn) holds the lock waits up to ``SQLITE_TIMEOUT_SECONDS`` (the
connection's busy timeout, `agentops/settings.py`); if the lock is still taken then,
SQLite raises ``OperationalError: database is locked``. PostgreSQL raises a lock-timeout
error (SQLSTATE 55P03) when ``lock_timeout`` is set. Either is a temporary condition of
the server, not a fault of the request: `DatabaseBusyMiddleware` answers it with
``503 Service Unavailable``, a ``Retry-After`` header (seconds) and one plain-text line,
and logs one warning line without a traceback. Nothing was written: the request's
transaction never began, or was rolled back.
"""

from __future__ import annotations

import logging

from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

__all__ = ["RETRY_AFTER_SECONDS", "DatabaseBusyMiddleware", "is_database_busy"]

#: What ``Retry-After`` tells a client to wait, in seconds.
RETRY_AFTER_SECONDS = 5

_BUSY_MESSAGES = ("database is locked", "database table is locked")
_LOCK_NOT_AVAILABLE = "55P03"
logger = logging.getLogger("agentops.db_busy")


def is_database_busy(error: BaseException) -> bool:
    """True when `error` says the database's lock could not be had in time (SQLite's
    "database is locked", PostgreSQL's lock timeout); False for any other error."""
    if not isinstance(error, OperationalError):
        return False
    if any(text in str(error).lower() for text in _BUSY_MESSAGES):
        return True
    cause = error.__cause__
    return getattr(cause, "sqlstate", None) == _LOCK_NOT_AVAILABLE


class DatabaseBusyMiddleware(MiddlewareMixin):
    """Middleware: a view that raised `is_database_busy` answers 503 + Retry-After."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        """The 503 answer for a busy database; None (Django goes on) for other errors."""
        if not is_database_busy(exception):
            return None
        logger.warning("503 database busy: %s %s (%s)", request.method, request.path, exception)
        response = HttpResponse(
            "The database is busy with another write (an import or a run); "
            f"nothing was changed. Try again in {RETRY_AFTER_SECONDS} seconds.\n",
            status=503,
            content_type="text/plain; charset=utf-8",
        )
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
