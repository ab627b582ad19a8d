"""An open live websocket closes (4403) when its watcher loses the right to watch: sign-out
of that sign-in, deactivation, removal from the role's group, the role losing its
permission, and (periodic re-check) a sign-in ended behind the signals' back. After the
close the socket receives nothing more, even while a new turn streams."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.contrib.sessions.models import Session as SignIn
from django.test import Client
from django.utils import timezone

from sessions_app import live
from sessions_app.live import revocation
from sessions_app.live.consumer import CLOSE_FORBIDDEN
from tests.factories import make_session
from tests.live.helpers import communicator, receive_until, scripted_agent, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)

SID = "s-revoke"


@pytest.fixture
def watched(db: None) -> str:
    make_session(SID, turns=1)
    return SID


async def _watch(cookie: str) -> WebsocketCommunicator:
    comm = communicator(SID, cookie, after=0)
    connected, code = await comm.connect()
    assert connected, code
    await receive_until(comm, lambda m: m["kind"] == "hello")
    return comm


async def _assert_closed_then_silent(comm: WebsocketCommunicator) -> None:
    try:
        closed = await comm.receive_output(timeout=5)
        assert closed == {"type": "websocket.close", "code": CLOSE_FORBIDDEN}
        # A new turn streams fragments and events to the session's group: none reach it.
        await live.run_turn(SID, "after", agent=scripted_agent("more text", pieces=3))
        assert await comm.receive_nothing(timeout=0.5)
    finally:
        await comm.disconnect()


async def _assert_still_streams(comm: WebsocketCommunicator) -> None:
    try:
        await live.run_turn(SID, "still", agent=scripted_agent("for you", pieces=2))
        frames = await receive_until(
            comm, lambda m: m["kind"] == "turn" and m["status"] != "running"
        )
        assert any(m["kind"] == "partial" for m in frames)
    finally:
        await comm.disconnect()


def _sign_out(cookie: str) -> None:
    client = Client()
    name, value = cookie.split("=", 1)
    client.cookies[name] = value
    assert client.post("/accounts/logout/").status_code == 302


async def test_sign_out_closes_that_sign_ins_sockets_only(
    watched: str, operator_user: User
) -> None:
    first = await sync_to_async(session_cookie)(operator_user)
    second = await sync_to_async(session_cookie)(operator_user)
    signed_out, other_browser = await _watch(first), await _watch(second)
    await sync_to_async(_sign_out)(first)
    await _assert_closed_then_silent(signed_out)
    await _assert_still_streams(other_browser)


def _deactivate(user: User) -> None:
    user.is_active = False
    user.save()


def _leave_groups(user: User) -> None:
    user.groups.clear()


def _group_loses_its_permissions(user: User) -> None:
    Group.objects.get(name="operators").permissions.clear()


def _members_removed(user: User) -> None:
    Group.objects.get(name="operators").user_set.remove(user)


@pytest.mark.parametrize(
    "revoke", [_deactivate, _leave_groups, _group_loses_its_permissions, _members_removed]
)
async def test_losing_the_right_closes_every_socket_of_the_user(
    watched: str, operator_user: User, admin_user: User, revoke: Callable[[User], None]
) -> None:
    operator = await _watch(await sync_to_async(session_cookie)(operator_user))
    admin = await _watch(await sync_to_async(session_cookie)(admin_user))
    await sync_to_async(revoke)(operator_user)
    await _assert_closed_then_silent(operator)
    await _assert_still_streams(admin)  # another user's socket is untouched


async def test_a_sign_in_saved_for_last_login_keeps_the_socket(
    watched: str, operator_user: User
) -> None:
    comm = await _watch(await sync_to_async(session_cookie)(operator_user))
    await sync_to_async(session_cookie)(operator_user)  # signs in again: saves last_login
    await _assert_still_streams(comm)


async def test_periodic_recheck_closes_a_socket_whose_sign_in_ended(
    watched: str, operator_user: User, settings: Any
) -> None:
    settings.AGENTOPS_WATCHER_RECHECK_SECONDS = 0.2
    comm = await _watch(await sync_to_async(session_cookie)(operator_user))
    # Deleted in bulk: no signal tells anyone, only the re-check notices.
    await sync_to_async(SignIn.objects.all().delete)()
    await _assert_closed_then_silent(comm)


@pytest.mark.redis
@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL")
async def test_deactivation_closes_the_socket_through_redis(
    watched: str, operator_user: User
) -> None:
    assert "hosts" in settings.CHANNEL_LAYERS["default"].get("CONFIG", {})
    comm = await _watch(await sync_to_async(session_cookie)(operator_user))
    await sync_to_async(_deactivate)(operator_user)
    await _assert_closed_then_silent(comm)


def test_a_sweep_reads_each_sign_in_and_each_users_role_once(
    operator_user: User, outsider_user: User, django_assert_num_queries: Any
) -> None:
    operators = [session_cookie(operator_user).split("=", 1)[1] for _ in range(3)]
    outsider = session_cookie(outsider_user).split("=", 1)[1]
    ended = SignIn.objects.create(
        session_key="ended-sign-in-1",
        session_data="",
        expire_date=timezone.now() - timedelta(days=1),
    )
    keys = [*operators, outsider, ended.session_key]
    # Per sign-in: its row and its user (none for the expired one); per user: the
    # permissions of the user and of their groups.
    with django_assert_num_queries(5 + 4 + 2 * 2):
        assert revocation._ended(keys) == [outsider, ended.session_key]
