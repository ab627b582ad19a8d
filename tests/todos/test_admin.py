"""Django admin edits go through the service: versioned, audited, conflicts refused."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests.factories import make_session
from todos_app.models import TodoChange, TodoList

pytestmark = pytest.mark.django_db

ITEMS = [
    {"content": "Read", "status": "completed"},
    {"content": "Fix", "status": "in_progress", "active_form": "Fixing"},
]


@pytest.fixture
def staff(client: Client) -> Client:
    user = User.objects.create_superuser("root", password="pw-root")
    client.force_login(user)
    return client


def form_data(
    todo_list: TodoList,
    version: int,
    rows: list[dict[str, Any]],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "expected_version": version,
        "items-TOTAL_FORMS": len(rows),
        "items-INITIAL_FORMS": sum(1 for row in rows if row.get("id")),
        "items-MIN_NUM_FORMS": 0,
        "items-MAX_NUM_FORMS": 1000,
    }
    for i, row in enumerate(rows):
        for key, value in row.items():
            data[f"items-{i}-{key}"] = value
        data[f"items-{i}-todo_list"] = todo_list.pk
    data.update(extra or {})
    return data


def test_admin_save_reorders_edits_adds_and_deletes_through_the_service(staff: Client) -> None:
    make_session("s-1", todos=[*ITEMS, {"content": "Drop me", "status": "pending"}])
    todo_list = TodoList.objects.get(session_id="s-1")
    ids = list(todo_list.items.values_list("id", flat=True))
    page = reverse("admin:todos_app_todolist_change", args=[todo_list.pk])
    assert 'name="expected_version" value="1"' in staff.get(page).content.decode()
    rows = [
        {"id": ids[0], "position": 1, "content": "Read", "status": "completed"},
        {"id": ids[1], "position": 0, "content": "Fix it", "status": "in_progress",
         "active_form": "Fixing it"},
        {"id": ids[2], "position": 2, "content": "Drop me", "status": "pending", "DELETE": "on"},
        {"position": 3, "content": "New", "status": "pending"},
    ]  # fmt: skip
    response = staff.post(page, form_data(todo_list, 1, rows))
    assert response.status_code == 302, response.content.decode()[:2000]
    todo_list.refresh_from_db()
    assert todo_list.version == 2
    assert todo_list.as_state() == [
        {"content": "Fix it", "status": "in_progress", "active_form": "Fixing it"},
        {"content": "Read", "status": "completed"},
        {"content": "New", "status": "pending"},
    ]
    change = TodoChange.objects.get()
    assert change.user is not None
    assert (change.actor, change.action, change.user.username) == ("person", "admin", "root")
    assert change.before[2] == {"content": "Drop me", "status": "pending"}


def test_admin_save_from_an_old_version_is_refused(staff: Client) -> None:
    make_session("s-1", todos=ITEMS)
    todo_list = TodoList.objects.get(session_id="s-1")
    ids = list(todo_list.items.values_list("id", flat=True))
    page = reverse("admin:todos_app_todolist_change", args=[todo_list.pk])
    rows = [
        {"id": ids[0], "position": 0, "content": "Stale", "status": "pending"},
        {"id": ids[1], "position": 1, "content": "Fix", "status": "in_progress"},
    ]
    TodoList.objects.filter(pk=todo_list.pk).update(version=5)  # someone changed it meanwhile
    response = staff.post(page, form_data(todo_list, 1, rows), follow=True)
    html = response.content.decode()
    assert "Not saved" in html and "changed since version 1" in html
    assert "changed successfully" not in html
    assert todo_list.as_state() == ITEMS and not TodoChange.objects.exists()
