"""The two roles exist after migrate and after a test-database flush."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.test import Client

from sessions_app.roles import ADMINS, OPERATORS, ROLE_PERMISSIONS, ensure_role_groups


@pytest.mark.django_db(transaction=True)
def test_role_groups_are_restored_after_a_flush_with_their_permissions() -> None:
    call_command("flush", interactive=False, verbosity=0)
    ensure_role_groups()
    for name in (OPERATORS, ADMINS):
        group = Group.objects.get(name=name)
        granted = {
            f"{p.content_type.app_label}.{p.codename}"
            for p in group.permissions.select_related("content_type")
        }
        assert granted == set(ROLE_PERMISSIONS[name])


@pytest.mark.django_db
def test_operator_reads_and_admin_also_edits(operator_user: User, admin_user: User) -> None:
    assert operator_user.has_perm("sessions_app.view_session")
    assert not operator_user.has_perm("todos_app.change_todoitem")
    assert admin_user.has_perm("todos_app.change_todoitem")
    assert admin_user.has_perm("sessions_app.record_tool_outcome")


@pytest.mark.django_db
def test_user_without_role_gets_a_403_page_that_says_why(outsider_client: Client) -> None:
    response = outsider_client.get("/sessions/")
    body = response.content.decode()
    assert response.status_code == 403
    assert "has no dashboard role" in body and "Sign in as someone else" in body
