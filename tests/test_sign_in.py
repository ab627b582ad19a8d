"""Sign-in: the login page, and rate limiting of failed attempts (django-axes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from pytest_django import Settings

if TYPE_CHECKING:
    from django.test.client import _MonkeyPatchedWSGIResponse

pytestmark = pytest.mark.django_db


def _attempt(client: Client, username: str, password: str) -> _MonkeyPatchedWSGIResponse:
    return client.post(reverse("login"), {"username": username, "password": password})


def test_sign_in_with_the_form_lands_on_the_sessions_list(
    client: Client, operator_user: User
) -> None:
    response = _attempt(client, operator_user.username, "pw-" + operator_user.username)
    assert response.status_code == 302 and response["Location"] == reverse("sessions:list")


def test_repeated_wrong_passwords_lock_the_user_out(
    client: Client, operator_user: User, settings: Settings
) -> None:
    settings.AXES_FAILURE_LIMIT = 3
    for _ in range(2):
        response = _attempt(client, operator_user.username, "wrong")
        assert response.status_code == 200
        assert b"didn't match" in response.content
    locked = _attempt(client, operator_user.username, "wrong")
    assert locked.status_code == 429
    assert b"Too many failed sign-in attempts" in locked.content
    # Even the right password is refused during the cool-off.
    right = _attempt(client, operator_user.username, "pw-" + operator_user.username)
    assert right.status_code == 429
    assert "_auth_user_id" not in client.session


def test_lockout_is_per_username(
    client: Client, operator_user: User, admin_user: User, settings: Settings
) -> None:
    settings.AXES_FAILURE_LIMIT = 2
    for _ in range(2):
        _attempt(client, operator_user.username, "wrong")
    response = _attempt(client, admin_user.username, "pw-" + admin_user.username)
    assert response.status_code == 302
