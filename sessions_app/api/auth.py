"""Who calls the API: ``Authorization: Bearer <key>`` and what each key may do.

- An unknown, malformed or revoked key: 401.
- A read-only key on a write: 403 (`require_write`).
- A key limited to some app names: sessions of other apps do not exist for it (404,
  `session_for_key`), and creating one is refused (403, `require_app`).

The key text is never logged: django-ninja's `HttpBearer` logs the header on a scheme
mismatch when DEBUG is on, so `ApiKeyBearer` reads the header itself.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.http import HttpRequest
from ninja.security.http import HttpBearer

from sessions_app.api.keys import bearer_token, find_key
from sessions_app.api.models import ApiKey
from sessions_app.api.problems import ApiProblem
from sessions_app.models import Session

__all__ = ["ApiKeyBearer", "api_actor", "key_of", "require_app", "require_write", "session_for_key"]


class ApiKeyBearer(HttpBearer):
    """django-ninja auth: the active `ApiKey` named by the bearer token, else None (401)."""

    async def __call__(self, request: HttpRequest) -> ApiKey | None:
        token = bearer_token(request.headers.get(self.header, ""))
        return await self.authenticate(request, token) if token else None

    async def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        """The key row for `token`, or None."""
        return await sync_to_async(find_key)(token)


def key_of(request: HttpRequest) -> ApiKey:
    """The key the request authenticated with (set by `ApiKeyBearer`)."""
    key = getattr(request, "auth", None)
    if not isinstance(key, ApiKey):  # pragma: no cover (auth runs first)
        raise ApiProblem(401, "unauthorized", "no API key")
    return key


def api_actor(request: HttpRequest) -> str:
    """How the records people see name the caller: "api key NAME"."""
    return key_of(request).label


def require_write(request: HttpRequest) -> ApiKey:
    """The caller's key; 403 when it is read-only."""
    key = key_of(request)
    if key.read_only:
        raise ApiProblem(403, "read-only-key", key.read_only_refusal)
    return key


def require_app(request: HttpRequest, app_name: str) -> ApiKey:
    """The caller's key; 403 when it is limited to other app names."""
    key = key_of(request)
    if not key.allows_app(app_name):
        raise ApiProblem(
            403, "app-not-allowed", f"key {key.prefix} may not use app {app_name[:100]!r}"
        )
    return key


def _load(session_id: str) -> Session | None:
    from sessions_app.api.lease import expire_due_lease_sync

    session = Session.objects.filter(pk=session_id).first()
    if session is not None:
        expire_due_lease_sync(session_id)
    return session


async def session_for_key(request: HttpRequest, session_id: str) -> Session:
    """The session, when the caller's key may see it; 404 otherwise (unknown session or
    another app's: existence is not revealed). Touching a session expires its lease when
    due (`lease.expire_due_lease`)."""
    from sessions_app.api.lease import broadcast_expired

    key = key_of(request)
    session = await sync_to_async(_load)(session_id)
    if session is None or not key.allows_app(session.app_name):
        raise ApiProblem(
            404,
            "session-not-found",
            f"session {session_id[:200]!r} not found",
            session_id=session_id,
        )
    await broadcast_expired(session_id)
    return session
