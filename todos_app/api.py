"""The todo list in the HTTP API: GET/PUT /api/v1/sessions/{id}/todos (docs/interfaces.md).

A router of this app, mounted into the API by `agentops/urls.py` (sessions_app never
imports todos_app). Reads answer the list with its version as an `ETag` (``"<version>"``);
a write sends `If-Match` with the version it started from and gets 412 problem+json when
the list changed since (nothing written). Every write goes through `services.replace_todos`
(versioned, audited as "api key NAME", broadcast to the session's watchers).
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse
from ninja import Router, Schema
from pydantic import Field

from agentops.runtime.todos import TodoItem
from sessions_app.api import ApiProblem, api_actor, require_write, session_for_key
from sessions_app.api.schemas import Problem
from sessions_app.api.sessions import ERRORS
from todos_app.services import Actor, TodoConflictError, read_snapshot, replace_todos

__all__ = ["router"]

router = Router(tags=["todos"])


class TodoItemIO(Schema):
    """One item (docs/runtime.md §7)."""

    content: str = Field(max_length=10_000)
    status: str = Field("pending", max_length=64)
    active_form: str = Field("", max_length=10_000)


class TodosIn(Schema):
    """The whole new list (a write replaces it)."""

    items: list[TodoItemIO] = Field(max_length=1000)


class TodosOut(Schema):
    """The list and its version (0: never written)."""

    version: int
    items: list[TodoItemIO]


def _etag(version: int) -> str:
    return f'"{version}"'


def _expected_version(request: HttpRequest) -> int | None:
    value = request.headers.get("If-Match", "").strip()
    if not value or value == "*":
        return None
    try:
        return int(value.removeprefix("W/").strip('"'))
    except ValueError:
        raise ApiProblem(
            400, "bad-if-match", 'If-Match must be the list\'s ETag, e.g. "3"'
        ) from None


def _answer(response: HttpResponse, version: int) -> None:
    response["ETag"] = _etag(version)


@router.get("/sessions/{session_id}/todos", response={200: TodosOut, **ERRORS})
async def get_todos(request: HttpRequest, session_id: str, response: HttpResponse) -> TodosOut:
    """The session's todo list with its version (also as the `ETag` header)."""
    await session_for_key(request, session_id)
    snapshot = await sync_to_async(read_snapshot)(session_id)
    _answer(response, snapshot.version)
    return TodosOut(
        version=snapshot.version,
        items=[TodoItemIO(**item.model_dump()) for item in snapshot.items],
    )


@router.put("/sessions/{session_id}/todos", response={200: TodosOut, 412: Problem, **ERRORS})
async def put_todos(
    request: HttpRequest, session_id: str, body: TodosIn, response: HttpResponse
) -> TodosOut:
    """Replace the list. With `If-Match: "<version>"` only when the list is still at that
    version (412 otherwise, with the current `version`); answers the new list and version."""
    require_write(request)
    await session_for_key(request, session_id)
    expected = _expected_version(request)
    items = [TodoItem(**item.model_dump()) for item in body.items]
    try:
        version = await sync_to_async(replace_todos)(
            session_id,
            items,
            actor=Actor.api(api_actor(request)),
            action="api_replace",
            expected_version=expected,
        )
    except TodoConflictError as conflict:
        raise ApiProblem(
            412, "todos-changed", str(conflict), version=conflict.current.version
        ) from None
    _answer(response, version)
    return TodosOut(version=version, items=body.items)
