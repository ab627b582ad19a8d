"""Todo panel editing in Chromium: htmx edits, reorder, status; operators read only."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.urls import reverse
from playwright.sync_api import Page
from pytest_django.live_server_helper import LiveServer

from tests.browser.conftest import sign_in
from tests.factories import make_session
from todos_app.models import TodoChange, TodoList

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ITEMS = [
    {"content": "Read the code", "status": "completed"},
    {"content": "Fix the bug", "status": "in_progress", "active_form": "Fixing the bug"},
    {"content": "Run the tests", "status": "pending"},
]


@pytest.fixture(autouse=True)
def _roles(transactional_db: None) -> None:
    """The role groups of migration sessions_app.0002_roles; a transactional test run
    before this one flushed them (post_migrate recreates permissions, not groups)."""
    roles = importlib.import_module("sessions_app.migrations.0002_roles")
    for name, perms in (
        (roles.OPERATORS, roles.OPERATOR_PERMISSIONS),
        (roles.ADMINS, roles.ADMIN_PERMISSIONS),
    ):
        group, _ = Group.objects.get_or_create(name=name)
        for dotted in perms:
            app_label, codename = dotted.split(".")
            group.permissions.add(
                Permission.objects.get(content_type__app_label=app_label, codename=codename)
            )


def shown(page: Page) -> list[tuple[str, str]]:
    """(status badge's recorded word, content) of each item in the panel, top to bottom
    (the badge shows the plain label, e.g. "Done" for completed)."""
    rows = page.locator("#todos .todo-items > li")
    return [
        (
            rows.nth(i).locator(".badge").get_attribute("data-word") or "",
            rows.nth(i).locator(".content").inner_text(),
        )
        for i in range(rows.count())
    ]


def stored() -> list[tuple[str, str]]:
    return [(i["status"], i["content"]) for i in TodoList.objects.get(session_id="s-t").as_state()]


def wait_version(page: Page, version: int) -> None:
    page.wait_for_selector(f'#todos[data-version="{version}"]')


def test_admin_edits_reorders_and_completes_inline(
    page: Page, live_server: LiveServer, admin_user: User, screenshot_dir: Path
) -> None:
    make_session("s-t", todos=ITEMS)
    sign_in(page, live_server, admin_user.username, "pw-" + admin_user.username)
    page.goto(live_server.url + reverse("sessions:detail", args=["s-t"]))
    page.wait_for_selector("#todos")
    assert page.locator("#todos .active-form").inner_text() == "now: Fixing the bug"
    assert "1 of 3 completed" in page.locator("#todos .todo-progress").inner_text()
    page.screenshot(path=str(screenshot_dir / "todos-admin-before.png"), full_page=True)

    # Edit the third item's content and active form (htmx: no page load).
    page.evaluate("window.__same_page = true")
    third = page.locator("#todos .todo-items > li").nth(2)
    third.locator("summary", has_text="Edit").click()
    third.locator("input[name=content]").fill("Run the whole test suite")
    third.locator("input[name=active_form]").fill("Running the test suite")
    third.locator("button", has_text="Save").click()
    wait_version(page, 2)

    # Move it up above "Fix the bug", then mark "Fix the bug" (now third) completed.
    page.get_by_label("Move item 3 up").click()
    wait_version(page, 3)
    page.get_by_label("Status of item 3").select_option("completed")
    page.locator("#todos .todo-items > li").nth(2).locator("button", has_text="Set").click()
    wait_version(page, 4)
    assert page.evaluate("window.__same_page") is True  # every edit was swapped in place

    expected = [
        ("completed", "Read the code"),
        ("pending", "Run the whole test suite"),
        ("completed", "Fix the bug"),
    ]
    assert shown(page) == expected == stored()
    assert "2 of 3 completed" in page.locator("#todos .todo-progress").inner_text()
    assert TodoChange.objects.filter(actor="person").count() == 3
    page.screenshot(path=str(screenshot_dir / "todos-admin-after.png"), full_page=True)

    # The history page shows who changed what.
    page.click("text=History of changes")
    page.wait_for_selector("#todo-history")
    assert page.locator("#todo-history .change").count() == 3
    assert admin_user.username in page.locator("#todo-history").inner_text()
    page.screenshot(path=str(screenshot_dir / "todos-history.png"), full_page=True)


def test_stale_edit_shows_conflict_and_current_list(
    page: Page, live_server: LiveServer, admin_user: User, screenshot_dir: Path
) -> None:
    make_session("s-t", todos=ITEMS)
    sign_in(page, live_server, admin_user.username, "pw-" + admin_user.username)
    page.goto(live_server.url + reverse("todos:page", args=["s-t"]))
    # Meanwhile the agent changes the list (the page still shows version 1).
    from todos_app import services

    services.replace_todos("s-t", [], actor=services.Actor.agent("turn-x"), action="todos_clear")
    page.get_by_label("Delete item 1", exact=True).click()  # Delete asks first
    page.get_by_label("Confirm: delete item 1").click()
    page.wait_for_selector("#todos .todo-message.conflict")
    assert "Nothing was saved" in page.locator("#todos .todo-message").inner_text()
    assert page.locator("#todos .todo-items > li").count() == 0  # the current (empty) list
    assert stored() == []
    # The history below reloads too and shows the agent's change.
    page.wait_for_selector("#todo-history .change.actor-agent")
    page.screenshot(path=str(screenshot_dir / "todos-conflict.png"), full_page=True)


def test_operator_sees_no_controls_and_post_is_forbidden(
    page: Page, live_server: LiveServer, operator_user: User, screenshot_dir: Path
) -> None:
    make_session("s-t", todos=ITEMS)
    sign_in(page, live_server, operator_user.username, "pw-" + operator_user.username)
    page.goto(live_server.url + reverse("sessions:detail", args=["s-t"]))
    page.wait_for_selector("#todos")
    assert shown(page) == [(i["status"], i["content"]) for i in ITEMS]
    assert page.locator("#todos form, #todos button, #todos select").count() == 0
    status = page.evaluate(
        """async (url) => {
            const token = document.cookie.match(/csrftoken=([^;]+)/);
            const response = await fetch(url, {method: "POST",
                headers: {"X-CSRFToken": token ? token[1] : ""},
                body: new URLSearchParams({version: "1"})});
            return response.status;
        }""",
        reverse("todos:clear", args=["s-t"]),
    )
    assert status == 403
    assert stored() == [(i["status"], i["content"]) for i in ITEMS]
    page.screenshot(path=str(screenshot_dir / "todos-operator.png"), full_page=True)
