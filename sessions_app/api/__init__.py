"""The HTTP API v1 at ``/api/v1/``: the turn ledger for agents in other processes.

Programs that run agents elsewhere record into the dashboard through it
(docs/interfaces.md, "HTTP API"); every write goes through the broadcasting store
(`sessions_app.live.LiveSessionService`), so watchers see it at once. Modules:

- `models`: `ApiKey`, `RunLease`, `EventClientKey` (registered through `sessions_app.models`);
- `keys`: making, hashing and checking keys; `auth`: the bearer auth and per-key access;
- `problems`: errors as ``application/problem+json`` (RFC 9457); `middleware`: body limit;
- `schemas`: request and response bodies (the OpenAPI document is derived from them);
- `ledger`: the store writes of the API (idempotent event batches, attribution);
- `lease`: run leases of remote runners; `sessions` / `turns`: the operations;
- `urls`: `build_api` (the django-ninja `NinjaAPI`), mounted by `agentops/urls.py`.

Only the models are imported eagerly (this package loads with `sessions_app.models`);
the other names below load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sessions_app.api.models import ApiKey, EventClientKey, RunLease

if TYPE_CHECKING:
    from sessions_app.api.auth import ApiKeyBearer, api_actor, require_write, session_for_key
    from sessions_app.api.keys import create_key
    from sessions_app.api.problems import ApiProblem
    from sessions_app.api.urls import build_api

__all__ = [
    "ApiKey",
    "ApiKeyBearer",
    "ApiProblem",
    "EventClientKey",
    "RunLease",
    "api_actor",
    "build_api",
    "create_key",
    "require_write",
    "session_for_key",
]

_LAZY = {
    "ApiKeyBearer": "sessions_app.api.auth",
    "api_actor": "sessions_app.api.auth",
    "require_write": "sessions_app.api.auth",
    "session_for_key": "sessions_app.api.auth",
    "ApiProblem": "sessions_app.api.problems",
    "create_key": "sessions_app.api.keys",
    "build_api": "sessions_app.api.urls",
}


def __getattr__(name: str) -> Any:
    """Load the names that need the rest of the app (views, store) on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(name)
