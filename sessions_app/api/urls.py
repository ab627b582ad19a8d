"""The API object: `build_api` makes the django-ninja `NinjaAPI` of /api/v1/.

`agentops/urls.py` builds it once with the routers of other apps (todos_app's todo
endpoints: this app never imports todos_app) and mounts `api_urls(api)` at ``api/v1/``.
The OpenAPI 3.1 document is at ``/api/v1/openapi.json``, a page rendering it at
``/api/v1/docs``; both are public, every operation needs an API key.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest
from django.urls import URLPattern, URLResolver
from ninja import NinjaAPI, Router
from ninja.openapi.schema import OpenAPISchema
from ninja.parser import Parser
from ninja.renderers import JSONRenderer
from ninja.responses import NinjaJSONEncoder
from pydantic_core import to_jsonable_python

from sessions_app.api import sessions, turns
from sessions_app.api.auth import ApiKeyBearer
from sessions_app.api.problems import install_handlers

__all__ = ["LedgerApi", "NotJsonError", "StrictJsonParser", "api_urls", "build_api"]

DESCRIPTION = """\
The turn ledger of agentops: agents that run in other processes, machines or languages
record their sessions, turns and events here, and the dashboard's watchers see them live.
Authenticate with `Authorization: Bearer <API key>` (`manage.py api_key create NAME`).
Errors are `application/problem+json` (RFC 9457). See docs/interfaces.md, "HTTP API".
"""


class _Encoder(NinjaJSONEncoder):
    """JSON as the runtime writes it: bytes (a tool call's `thought_signature`) as
    base64, like the runtime models' own JSON (docs/runtime.md §1)."""

    def default(self, o: object) -> object:
        if isinstance(o, bytes):
            return to_jsonable_python(o, bytes_mode="base64")
        return super().default(o)


class _Renderer(JSONRenderer):
    encoder_class = _Encoder


class NotJsonError(ValueError):
    """A request body that RFC 8259 does not allow (its message says where and why)."""


def _no_constant(name: str) -> None:
    raise NotJsonError(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise NotJsonError(f"the number {text[:40]} is too large")
    return value


class StrictJsonParser(Parser):
    """Request bodies parsed as RFC 8259 JSON: the standard library's parser without its
    extensions (NaN, Infinity, numbers too large for a float), which no other JSON
    reader accepts and the database's JSON columns refuse."""

    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(
            request.body, parse_constant=_no_constant, parse_float=_finite
        )
        return parsed


class LedgerApi(NinjaAPI):
    """A `NinjaAPI` whose OpenAPI document is derived once per path prefix (it takes
    150-190 ms, and the operations never change after start)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._schemas: dict[str, OpenAPISchema] = {}

    def get_openapi_schema(
        self, *, path_prefix: str | None = None, path_params: dict[str, Any] | None = None
    ) -> OpenAPISchema:
        if path_prefix is None:
            path_prefix = self.get_root_path(path_params or {})
        if path_prefix not in self._schemas:
            self._schemas[path_prefix] = super().get_openapi_schema(path_prefix=path_prefix)
        return self._schemas[path_prefix]


def build_api(routers: Sequence[tuple[str, Router]] = ()) -> NinjaAPI:
    """The /api/v1/ API with this app's operations and `routers` ((prefix, router) pairs
    of other apps) added; every operation needs an API key, errors are problem+json."""
    api = LedgerApi(
        title="agentops API",
        version="1",
        description=DESCRIPTION,
        auth=ApiKeyBearer(),
        urls_namespace="api",
        docs_url="/docs",
        renderer=_Renderer(),
        parser=StrictJsonParser(),
    )
    install_handlers(api)
    api.add_router("", sessions.router)
    api.add_router("", turns.router)
    for prefix, router in routers:
        api.add_router(prefix, router)
    return api


def api_urls(api: NinjaAPI) -> tuple[list[URLPattern | URLResolver], str, str]:
    """`api.urls` with every view exempt from the sign-in redirect (the API answers 401
    problem+json itself; `LoginRequiredMiddleware` would redirect to the login page)."""
    patterns, app_name, namespace = api.urls
    for pattern in patterns:
        if isinstance(pattern, URLPattern):
            pattern.callback = login_not_required(pattern.callback)
    result: tuple[list[URLPattern | URLResolver], str, str] = (list(patterns), app_name, namespace)
    return result
