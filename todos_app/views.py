"""The todo list of a session: page with history, live panel, and a person's edits.

Views are thin: access through `sessions_app.access.get_session_for_user` (404 for users
who may not see the session), edits allowed by `sessions_app.roles.can_edit_todos` (403
otherwise), every change through `todos_app.services` (versions, audit, broadcast).

Each edit is a POST carrying the list `version` the form was built from. With htmx the
answer is the panel partial (`todos/panel.html#panel`); without JavaScript a success
redirects back (`next`, default the todos page) and a refused edit renders the todos page
with the message (409 for a version conflict, 400 for bad input). Edits therefore answer
with `Vary: HX-Request`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST, require_safe
from django.views.decorators.vary import vary_on_headers

from agentops.runtime.todos import TodoToolError
from sessions_app.access import get_session_for_user
from sessions_app.http import HtmxHttpRequest
from sessions_app.models import Session
from sessions_app.roles import can_edit_todos
from todos_app import edits, services
from todos_app.models import TodoChange, TodoItem

HISTORY_PER_PAGE = 20


def _panel_context(request: HtmxHttpRequest, session_id: str) -> dict[str, Any]:
    """What the panel needs, the same names the session page passes (`session`,
    `todos`: TodoItem rows, `todo_done`), read fresh after any change."""
    session = get_session_for_user(request, session_id)
    todo_list = getattr(session, "todo_list", None)
    todos = list(todo_list.items.all()) if todo_list is not None else []
    context: dict[str, Any] = {
        "session": session,
        "todos": todos,
        "todo_done": sum(1 for item in todos if item.status == TodoItem.Status.COMPLETED),
    }
    if request.htmx and request.htmx.current_url_abs_path:
        # Forms in a swapped-in panel return to the page the person is on.
        context["todo_return"] = request.htmx.current_url_abs_path
    return context


def _page_context(request: HtmxHttpRequest, session_id: str) -> dict[str, Any]:
    context = _panel_context(request, session_id)
    session: Session = context["session"]
    changes = TodoChange.objects.filter(todo_list__session=session).select_related("user")
    context["history"] = Paginator(changes, HISTORY_PER_PAGE).get_page(request.GET.get("page"))
    return context


@require_safe
def todo_page(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """GET /sessions/<id>/todos/?page=: the list (with edit controls for admins) and the
    history of changes, newest first (who, when, before/after)."""
    return render(request, "todos/page.html", _page_context(request, session_id))


@require_safe
def todo_panel(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """GET /sessions/<id>/todos/panel/: the panel alone (live refresh, htmx)."""
    return _panel_response(request, _panel_context(request, session_id))


def _panel_response(request: HtmxHttpRequest, context: dict[str, Any]) -> HttpResponse:
    """The panel partial; `HX-Trigger: todos-updated` lets the history section reload."""
    response = render(request, "todos/panel.html#panel", context)
    response["HX-Trigger"] = "todos-updated"
    return response


def _edit(
    request: HtmxHttpRequest, session_id: str, apply: Callable[[int], object]
) -> HttpResponse:
    """Check access and role, run ``apply(expected_version)``, answer (see module doc)."""
    session = get_session_for_user(request, session_id)
    if not can_edit_todos(request.user):
        raise PermissionDenied("Only admins edit todo lists.")
    message, kind, status = "", "", 200
    try:
        version = request.POST.get("version", "")
        if not version.isdigit():
            raise TodoToolError("the form carries no list version; reload the page")
        apply(int(version))
    except services.TodoConflictError as conflict:
        message = (
            f"The list changed while you were editing: your form was for version "
            f"{conflict.expected}, the list is now at version {conflict.current.version}. "
            "Nothing was saved. This is the current list; make your change again if it is "
            "still needed."
        )
        kind, status = "conflict", 409
    except TodoToolError as error:
        message, kind, status = f"Not saved: {error}", "error", 400
    # A refused edit never throws away what the person typed: it is shown back to them.
    draft = {
        name: request.POST[name].strip()
        for name in ("content", "active_form")
        if message and request.POST.get(name, "").strip()
    }
    if request.htmx:
        context = _panel_context(request, session.id)
        context.update(todo_message=message, todo_message_kind=kind, todo_draft=draft)
        return _panel_response(request, context)
    if not message:
        return HttpResponseRedirect(_return_url(request, session.id))
    context = _page_context(request, session.id)
    context.update(todo_message=message, todo_message_kind=kind, todo_draft=draft)
    return render(request, "todos/page.html", context, status=status)


def _return_url(request: HttpRequest, session_id: str) -> str:
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("todos:page", args=[session_id])


@require_POST
@vary_on_headers("HX-Request")
def todo_add(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """POST content, active_form, status?, version: append an item."""
    post = request.POST
    return _edit(
        request,
        session_id,
        lambda version: edits.add_item(
            session_id,
            post.get("content", ""),
            active_form=post.get("active_form", ""),
            status=post.get("status") or TodoItem.Status.PENDING,
            user=request.user,
            expected_version=version,
        ),
    )


@require_POST
@vary_on_headers("HX-Request")
def todo_edit(request: HtmxHttpRequest, session_id: str, index: int) -> HttpResponse:
    """POST content, active_form, version: change item `index`'s texts."""
    post = request.POST
    return _edit(
        request,
        session_id,
        lambda version: edits.edit_item(
            session_id,
            index,
            content=post.get("content", ""),
            active_form=post.get("active_form", ""),
            user=request.user,
            expected_version=version,
        ),
    )


@require_POST
@vary_on_headers("HX-Request")
def todo_status(request: HtmxHttpRequest, session_id: str, index: int) -> HttpResponse:
    """POST status, version: set item `index`'s status."""
    return _edit(
        request,
        session_id,
        lambda version: edits.set_status(
            session_id,
            index,
            request.POST.get("status", ""),
            user=request.user,
            expected_version=version,
        ),
    )


@require_POST
@vary_on_headers("HX-Request")
def todo_move(request: HtmxHttpRequest, session_id: str, index: int) -> HttpResponse:
    """POST direction=up|down, version: swap item `index` with its neighbour."""
    offset = {"up": -1, "down": 1}.get(request.POST.get("direction", ""), 0)
    return _edit(
        request,
        session_id,
        lambda version: edits.move_item(
            session_id, index, offset, user=request.user, expected_version=version
        ),
    )


@require_POST
@vary_on_headers("HX-Request")
def todo_delete(request: HtmxHttpRequest, session_id: str, index: int) -> HttpResponse:
    """POST version: remove item `index`."""
    return _edit(
        request,
        session_id,
        lambda version: edits.delete_item(
            session_id, index, user=request.user, expected_version=version
        ),
    )


@require_POST
@vary_on_headers("HX-Request")
def todo_clear(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """POST version: empty the list."""
    return _edit(
        request,
        session_id,
        lambda version: edits.clear_items(session_id, user=request.user, expected_version=version),
    )
