"""The todos page, panel and a person's edits: roles, versions, audit (docs/runtime.md §7)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from sessions_app.models import Session
from tests.factories import make_session
from todos_app.models import TodoChange, TodoList

pytestmark = pytest.mark.django_db

ITEMS = [
    {"content": "Read the code", "status": "completed"},
    {"content": "Fix the bug", "status": "in_progress", "active_form": "Fixing the bug"},
    {"content": "Run the tests", "status": "pending"},
]


@pytest.fixture
def session() -> Session:
    return make_session("s-1", todos=ITEMS)  # list at version 1


def url(name: str, *args: object) -> str:
    return reverse(f"todos:{name}", args=["s-1", *args])


def state() -> list[dict[str, Any]]:
    return TodoList.objects.get(session_id="s-1").as_state()


def test_admin_sees_controls_progress_and_active_form(
    admin_client: Client, session: Session
) -> None:
    for page in (reverse("sessions:detail", args=["s-1"]), url("page")):
        html = admin_client.get(page).content.decode()
        assert 'id="todos"' in html and "1 of 3 completed" in html and "version 1" in html
        assert "now: Fixing the bug" in html
        assert 'name="version" value="1"' in html and "Move item 2 up" in html


def test_operator_sees_no_controls_and_gets_403_on_every_post(
    operator_client: Client, session: Session
) -> None:
    html = operator_client.get(url("page")).content.decode()
    assert "Fix the bug" in html and 'name="version"' not in html and "Delete" not in html
    for name, args in [
        ("add", ()),
        ("clear", ()),
        ("edit", (0,)),
        ("status", (0,)),
        ("move", (0,)),
        ("delete", (0,)),
    ]:
        response = operator_client.post(url(name, *args), {"version": 1, "content": "x"})
        assert response.status_code == 403, name
    assert state() == ITEMS and not TodoChange.objects.exists()


def test_outsider_gets_404(outsider_client: Client, session: Session) -> None:
    assert outsider_client.get(url("page")).status_code == 404
    assert outsider_client.post(url("clear"), {"version": 1}).status_code == 404


def test_plain_posts_apply_each_action_and_redirect(
    admin_client: Client, admin_user: User, session: Session
) -> None:
    detail = reverse("sessions:detail", args=["s-1"])
    response = admin_client.post(
        url("edit", 2), {"version": 1, "content": "Run all tests", "active_form": "Running"}
    )
    assert response.status_code == 302 and response["Location"] == url("page")
    admin_client.post(url("move", 2), {"version": 2, "direction": "up"})
    admin_client.post(url("status", 1), {"version": 3, "status": "completed", "next": detail})
    admin_client.post(url("add"), {"version": 4, "content": "Ship it"})
    response = admin_client.post(url("delete", 0), {"version": 5, "next": "https://evil.test/"})
    assert response["Location"] == url("page")  # foreign redirect refused
    assert state() == [
        {"content": "Run all tests", "status": "completed", "active_form": "Running"},
        {"content": "Fix the bug", "status": "in_progress", "active_form": "Fixing the bug"},
        {"content": "Ship it", "status": "pending"},
    ]
    changes = list(TodoChange.objects.order_by("version"))
    assert [c.action for c in changes] == ["edit", "move", "status", "add", "delete"]
    assert all(c.actor == "person" and c.user == admin_user for c in changes)
    edited = {"content": "Run all tests", "status": "pending", "active_form": "Running"}
    assert changes[1].before == [ITEMS[0], ITEMS[1], edited]  # the move's before/after
    assert changes[1].after == [ITEMS[0], edited, ITEMS[1]]
    admin_client.post(url("clear"), {"version": 6})
    assert state() == [] and TodoList.objects.get(session_id="s-1").version == 7
    page = admin_client.get(url("page")).content.decode()
    assert "6 changes" in page and "ada-admin" in page and "Ship it" in page


def test_conflicting_edit_is_refused_with_the_current_list(
    admin_client: Client, session: Session
) -> None:
    # Someone else changes the list first (version 1 -> 2).
    admin_client.post(url("status", 2), {"version": 1, "status": "in_progress"})
    current = state()
    response = admin_client.post(url("edit", 0), {"version": 1, "content": "Stale edit"})
    assert response.status_code == 409
    html = response.content.decode()
    assert "changed while you were editing" in html and "now at version 2" in html
    assert "Nothing was saved" in html and 'name="version" value="2"' in html
    assert "Read the code" in html
    # What the person typed is shown back (not saved, not lost), outside the list itself.
    assert 'What you typed (not saved): <q class="draft-content">Stale edit</q>' in html
    assert html.count("Stale edit") == 2  # the note and the Add form's prefill
    assert state() == current and TodoChange.objects.count() == 1
    # With htmx the panel comes back (200, so it is swapped in) with the same message.
    response = admin_client.post(url("delete", 0), {"version": 1}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert "changed while you were editing" in response.content.decode()
    assert state() == current


def test_htmx_edit_returns_the_panel_and_bad_input_is_explained(
    admin_client: Client, session: Session
) -> None:
    response = admin_client.post(
        url("status", 0), {"version": 1, "status": "pending"}, headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<section class="card todos"')
    assert "<html" not in html and "version 2" in html
    response = admin_client.post(url("move", 0), {"version": 2, "direction": "up"})
    assert response.status_code == 400 and "cannot move up" in response.content.decode()
    response = admin_client.post(url("edit", 9), {"version": 2, "content": "x"})
    assert "there is no item 10: the list has 3 items now" in response.content.decode()
    response = admin_client.post(url("add"), {"version": 2, "content": "   "})
    assert "content must not be empty" in response.content.decode()
    response = admin_client.post(url("add"), {"version": 2, "content": "x" * 2_001})
    assert "content is 2,001 characters long; at most 2,000" in response.content.decode()
    response = admin_client.post(url("edit", 0), {"version": 2, "content": "a\x00b"})
    # Refused before the view (agentops.middleware), with the field named.
    assert response.status_code == 400
    assert "NUL character in form field 'content'" in response.content.decode()
    response = admin_client.post(url("status", 0), {"version": 2, "status": "bogus"})
    assert "status must be one of" in response.content.decode()
    assert TodoList.objects.get(session_id="s-1").version == 2


def test_admin_can_start_a_list_on_a_session_without_one(admin_client: Client) -> None:
    make_session("s-1")
    assert "has not written a todo list" in admin_client.get(url("page")).content.decode()
    admin_client.post(url("add"), {"version": 0, "content": "First"})
    assert state() == [{"content": "First", "status": "pending"}]


def test_panel_endpoint_for_live_refresh(operator_client: Client, session: Session) -> None:
    html = operator_client.get(url("panel"), headers={"HX-Request": "true"}).content.decode()
    assert 'data-version="1"' in html and "Fix the bug" in html
