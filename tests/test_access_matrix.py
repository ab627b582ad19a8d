"""Every URL pattern as anonymous, outsider (no role), operator and admin.

Anonymous users are sent to the login page; a signed-in user without a role gets 403 on
pages and 404 on objects (existence is not revealed); operators read; admins also edit.
Every POST endpoint also refuses a request without a CSRF token. A URL pattern missing
from the matrix below fails the test, so new pages must declare their access rule.

The HTTP API (/api/v1/) authenticates by API key, never by the session cookie: every
operation answers 401 problem+json to every persona here (none sends a key), its OpenAPI
document and docs page are public, and it needs no CSRF token (a bearer key is not sent
by browsers on their own). Keys' own rules are in tests/api/.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from sessions_app.models import Event, Session, Turn
from todos_app.models import TodoItem, TodoList

if TYPE_CHECKING:
    from django.test.client import _MonkeyPatchedWSGIResponse

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
SID = "s-matrix"

# name -> (kind, method). Kinds: public, page (needs a role), object (a session's page),
# edit (admin-only change of a session's data), api (needs an API key: 401 problem+json),
# api-root (404).
MATRIX: dict[str, tuple[str, str]] = {
    "login": ("public", "GET"),
    "logout": ("logout", "POST"),
    "root": ("page-redirect", "GET"),
    "sessions:list": ("page", "GET"),
    "turn_queue": ("page", "GET"),
    "docs:index": ("page", "GET"),
    "docs:page": ("page", "GET"),
    "docs:export_schema": ("page", "GET"),
    "sessions:detail": ("object", "GET"),
    "sessions:turns": ("object", "GET"),
    "sessions:context": ("object", "GET"),
    "sessions:protocol": ("object", "GET"),
    "sessions:find": ("object", "GET"),
    "sessions:export": ("object", "GET"),
    "sessions:turn_events": ("object", "GET"),
    "sessions:event_raw": ("object", "GET"),
    "todos:page": ("object", "GET"),
    "todos:panel": ("object", "GET"),
    "sessions:tool_outcome_create": ("edit", "POST"),
    "sessions:run_turn": ("edit", "POST"),
    "sessions:stop_turns": ("edit", "POST"),
    "todos:add": ("edit", "POST"),
    "todos:clear": ("edit", "POST"),
    "todos:edit": ("edit", "POST"),
    "todos:status": ("edit", "POST"),
    "todos:move": ("edit", "POST"),
    "todos:delete": ("edit", "POST"),
    "api:openapi-json": ("public", "GET"),
    "api:openapi-view": ("public", "GET"),
    "api:api-root": ("api-root", "GET"),
    "otlp:traces": ("api", "POST"),
    "otlp:langfuse_traces": ("api", "POST"),
    "otlp:logs": ("api", "POST"),
    "otlp:langfuse_logs": ("api", "POST"),
    "otlp:metrics": ("refused", "POST"),  # 404 for everyone: metrics are not received
    "otlp:langfuse_metrics": ("refused", "POST"),
    "api:create_session": ("api", "POST"),
    "api:get_session": ("api", "GET"),
    "api:list_events": ("api", "GET"),
    "api:append_events": ("api", "POST"),
    "api:delete_event": ("api", "DELETE"),
    "api:publish_partials": ("api", "POST"),
    "api:get_context": ("api", "GET"),
    "api:record_outcome": ("api", "POST"),
    "api:export_session": ("api", "GET"),
    "api:list_turns": ("api", "GET"),
    "api:begin_turn": ("api", "POST"),
    "api:get_turn": ("api", "GET"),
    "api:finalize_turn": ("api", "POST"),
    "api:interrupt_turns": ("api", "POST"),
    "api:acquire_lease": ("api", "POST"),
    "api:renew_lease": ("api", "PUT"),
    "api:release_lease": ("api", "DELETE"),
    "api:get_todos": ("api", "GET"),
    "api:put_todos": ("api", "PUT"),
}


def _patterns(
    patterns: Sequence[URLPattern | URLResolver],
    namespace: str | None = None,
    converters: tuple[str, ...] = (),
) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(namespaced name, names of every URL parameter including the includes')."""
    for pattern in patterns:
        here = (*converters, *pattern.pattern.converters)
        if isinstance(pattern, URLResolver):
            if pattern.namespace == "admin":
                continue  # Django admin has its own staff check
            yield from _patterns(pattern.url_patterns, pattern.namespace or namespace, here)
        elif isinstance(pattern, URLPattern):
            name = pattern.name or "root"
            yield f"{namespace}:{name}" if namespace else name, here


def url_values(event_id: int) -> dict[str, str | int]:
    """The value of every URL parameter in the matrix's requests."""
    return {
        "session_id": SID, "turn_id": "t-1", "event_id": event_id, "index": 0, "name": "concepts",
        "lease_id": "l-1",
    }  # fmt: skip


def _url(name: str, parameters: tuple[str, ...], event_id: int) -> str:
    if name == "root":
        return "/"
    values = url_values(event_id)
    return reverse(name, kwargs={key: values[key] for key in parameters})


@pytest.fixture
def stored_session() -> Event:
    return store_matrix_session()


def store_matrix_session() -> Event:
    """The session every URL of the matrix points at; returns its assistant event."""
    session = Session.objects.create(id=SID, app_name="ops", created_at=T0, updated_at=T0)
    Turn.objects.create(id="t-1", session=session, status="completed", started_at=T0)
    event = Event.objects.create(
        session=session, turn_id="t-1", role="assistant", created_at=T0, updated_at=T0,
        tool_calls=[{"id": "c-1", "name": "deploy", "arguments": {}}],
    )  # fmt: skip
    todo_list = TodoList.objects.create(session=session, version=1, updated_at=T0)
    TodoItem.objects.create(todo_list=todo_list, position=0, content="check", status="pending")
    return event


def _request(client: Client, method: str, url: str) -> _MonkeyPatchedWSGIResponse:
    if method == "GET":
        return client.get(url)
    if method == "POST":
        return client.post(url, {})
    return client.generic(method, url)


def test_every_url_pattern_is_in_the_matrix() -> None:
    names = {name for name, _ in _patterns(get_resolver().url_patterns)}
    assert names == set(MATRIX), f"classify these URLs: {sorted(names ^ set(MATRIX))}"


@pytest.mark.parametrize("persona", ["anonymous", "outsider", "operator", "admin"])
def test_access_of_every_url(
    persona: str, stored_session: Event, operator_user: User, admin_user: User, outsider_user: User
) -> None:
    client = Client()
    user = {"operator": operator_user, "admin": admin_user, "outsider": outsider_user}.get(persona)
    if user is not None:
        client.force_login(user)
    login = reverse("login")
    for name, pattern in _patterns(get_resolver().url_patterns):
        kind, method = MATRIX[name]
        url = _url(name, pattern, stored_session.id)
        response = _request(client, method, url)
        status = response.status_code
        where = f"{persona} {method} {url} ({kind})"
        if kind == "public":
            assert status == 200, where
        elif kind == "api":
            assert status == 401, where
            assert response["Content-Type"] == "application/problem+json", where
            assert response.json()["status"] == 401, where
        elif kind in {"api-root", "refused"}:
            assert status == 404, where
        elif kind == "logout":
            assert status == 302, where
            if user is not None:
                client.force_login(user)  # signed out by it: sign in again
        elif persona == "anonymous":
            assert status == 302 and response["Location"].startswith(login), where
        elif kind == "page-redirect":
            assert status == 302, where
        elif persona == "outsider":
            assert status == (403 if kind == "page" else 404), where
        elif kind in {"page", "object"}:
            assert status == 200, where
        elif persona == "operator":
            assert status == 403, where
        else:
            assert status not in {403, 404, 405} and status < 500, where


def test_every_change_needs_a_csrf_token(stored_session: Event, admin_user: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    for name, pattern in _patterns(get_resolver().url_patterns):
        kind, method = MATRIX[name]
        if method == "POST" and kind not in {"logout", "api", "refused"}:
            response = client.post(_url(name, pattern, stored_session.id), {})
            assert response.status_code == 403, name
            assert b"CSRF" in response.content, name
