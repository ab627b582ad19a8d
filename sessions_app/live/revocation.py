"""Closing the websockets of a watcher who lost the right to watch.

Each live-session socket (`sessions_app.live.consumer`) also joins its user's group
(`user_group`). When something may have taken that right away, the receivers here send
that group a message, after the change is committed, and the consumer acts on it:

- ``user_logged_out``: ``watcher.logout`` carrying the ended sign-in's session key; only
  the sockets opened with that sign-in close (the user's other browsers stay).
- a user saved (e.g. ``is_active=False``) or deleted, the user's groups changed
  (``m2m_changed`` on ``User.groups``), the user's own permissions changed, or a group's
  permissions changed (every member is told): ``watcher.recheck``; each socket reloads its
  user from a fresh read of its sign-in and closes unless they still may view sessions.

Sockets close with code 4403 (`consumer.CLOSE_FORBIDDEN`). Sending is best effort: a
channel layer that is down must not fail the change, and each socket's sign-in is also
re-read every ``AGENTOPS_WATCHER_RECHECK_SECONDS`` anyway (`recheck_periodically`): one
sweep per server process, about once a second, reads the sign-ins that are due, each once
however many sockets share it (and each of their users' roles once), in one call on a
worker thread of its own (never the thread the process's turns write through), and closes
the sockets of those that ended.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Iterable
from importlib import import_module
from typing import Any, Protocol

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import get_user, user_logged_out
from django.contrib.auth.models import AnonymousUser, Group, User
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.http import HttpRequest

from sessions_app.roles import can_view

logger = logging.getLogger(__name__)

RECHECK = "watcher.recheck"
LOGOUT = "watcher.logout"

_CHANGES = {"post_add", "post_remove", "post_clear"}


def user_group(user_id: int | str) -> str:
    """The channel-layer group every live socket of user `user_id` joins."""
    return f"watcher.user.{user_id}"


def _send(user_ids: Iterable[int], message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    for user_id in user_ids:
        try:
            async_to_sync(layer.group_send)(user_group(user_id), message)
        except Exception:  # a dead layer must not fail the change; the periodic re-check remains
            logger.warning("could not tell user %s's live sockets to %s", user_id, message["type"])


def _send_after_commit(user_ids: Iterable[int], message: dict[str, Any]) -> None:
    ids = list(user_ids)
    if ids:
        transaction.on_commit(lambda: _send(ids, message))


def _on_logout(sender: object, request: HttpRequest, user: User | None, **_: object) -> None:
    # Sent before the session is flushed, so the key is still the signed-in one.
    key = getattr(getattr(request, "session", None), "session_key", None)
    if user is not None and user.pk is not None and key:
        _send([user.pk], {"type": LOGOUT, "session_key": key})


def _on_user_saved(
    sender: type[User], instance: User, update_fields: frozenset[str] | None = None, **_: object
) -> None:
    if update_fields is not None and set(update_fields) <= {"last_login"}:
        return  # every sign-in saves last_login; no right changed
    _send_after_commit([instance.pk], {"type": RECHECK})


def _on_user_m2m(
    sender: object, instance: User | Group, action: str, reverse: bool, pk_set: set[int] | None,
    **_: object,
) -> None:  # fmt: skip
    """User.groups or User.user_permissions changed, from either side."""
    if action == "pre_clear" and isinstance(instance, Group):
        # group.user_set.clear(): who the members were is only known before.
        instance._watchers_cleared = list(instance.user_set.values_list("pk", flat=True))  # type: ignore[attr-defined]
        return
    if action not in _CHANGES:
        return
    if isinstance(instance, User):
        user_ids: Iterable[int] = [instance.pk]
    elif action == "post_clear":
        user_ids = getattr(instance, "_watchers_cleared", [])
    else:
        user_ids = pk_set or []
    _send_after_commit(user_ids, {"type": RECHECK})


def _on_group_permissions(
    sender: object, instance: Any, action: str, reverse: bool, pk_set: set[int] | None,
    **_: object,
) -> None:  # fmt: skip
    """Group.permissions changed: every member of the group(s) re-checks."""
    if action not in _CHANGES:
        return
    if isinstance(instance, Group):
        groups: Iterable[int] = [instance.pk]
    else:
        groups = pk_set or []  # permission.group_set changed
    members = User.objects.filter(groups__in=list(groups)).values_list("pk", flat=True)
    _send_after_commit(set(members), {"type": RECHECK})


def connect_receivers() -> None:
    """Connect the receivers above (called once from `SessionsAppConfig.ready`)."""
    uid = "sessions_app.live.revocation"
    user_logged_out.connect(_on_logout, dispatch_uid=f"{uid}.logout")
    post_save.connect(_on_user_saved, sender=User, dispatch_uid=f"{uid}.saved")
    post_delete.connect(_on_user_saved, sender=User, dispatch_uid=f"{uid}.deleted")
    m2m_changed.connect(_on_user_m2m, sender=User.groups.through, dispatch_uid=f"{uid}.groups")
    m2m_changed.connect(
        _on_user_m2m, sender=User.user_permissions.through, dispatch_uid=f"{uid}.perms"
    )
    m2m_changed.connect(
        _on_group_permissions, sender=Group.permissions.through, dispatch_uid=f"{uid}.group"
    )


# -- the periodic re-check ---------------------------------------------------------------


class Revocable(Protocol):
    """An open socket whose watcher may lose the right to watch (`consumer`)."""

    async def revoke(self) -> None:
        """Close 4403 and send nothing more."""


def _signed_in_user(session_key: str) -> User | AnonymousUser:
    """The user of sign-in `session_key`, read afresh (anonymous when the sign-in ended,
    the user is inactive or changed password)."""
    request = HttpRequest()
    request.session = import_module(settings.SESSION_ENGINE).SessionStore(session_key=session_key)
    return get_user(request)


def signed_in_may_view(session_key: str) -> bool:
    """Whether sign-in `session_key` still exists and its user (read afresh: active,
    password unchanged, role) may view sessions."""
    return can_view(_signed_in_user(session_key))


def _ended(session_keys: list[str]) -> list[str]:
    """The sign-ins of `session_keys` whose user may no longer view sessions: each sign-in
    and its user read afresh, each user's role read once (many sign-ins are one user's:
    reading their permissions once per sign-in was most of a sweep)."""
    role: dict[Any, bool] = {}  # user pk -> may view, as read in this sweep
    ended = []
    for key in session_keys:
        user = _signed_in_user(key)
        if not user.is_authenticated:
            ended.append(key)
            continue
        if user.pk not in role:
            role[user.pk] = can_view(user)
        if not role[user.pk]:
            ended.append(key)
    return ended


class _Sweep:
    """This process's (event loop's) periodic re-check (module docstring)."""

    def __init__(self) -> None:
        self.sockets: dict[str, set[Revocable]] = {}
        self.due: dict[str, float] = {}
        self.task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        ended_of = database_sync_to_async(_ended, thread_sensitive=False)
        try:
            while self.sockets:
                period = float(settings.AGENTOPS_WATCHER_RECHECK_SECONDS)
                await asyncio.sleep(min(1.0, period))
                now = loop.time()
                keys = [key for key, due in self.due.items() if due <= now]
                for key in keys:
                    self.due[key] = now + period
                if not keys:
                    continue
                try:
                    ended = await ended_of(keys)
                except Exception:
                    logger.warning("re-checking live sockets' sign-ins failed", exc_info=True)
                    continue
                for key in ended:
                    for socket in list(self.sockets.get(key, ())):
                        await socket.revoke()
        finally:
            self.task = None


_SWEEPS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Sweep] = weakref.WeakKeyDictionary()


def recheck_periodically(session_key: str, socket: Revocable) -> None:
    """Re-read sign-in `session_key` every AGENTOPS_WATCHER_RECHECK_SECONDS while `socket`
    is open; `socket.revoke()` when it ended or its user may no longer view sessions."""
    loop = asyncio.get_running_loop()
    sweep = _SWEEPS.setdefault(loop, _Sweep())
    if session_key not in sweep.sockets:
        sweep.sockets[session_key] = set()
        sweep.due[session_key] = loop.time() + settings.AGENTOPS_WATCHER_RECHECK_SECONDS
    sweep.sockets[session_key].add(socket)
    if sweep.task is None:
        sweep.task = loop.create_task(sweep.run(), name="agentops-watcher-recheck")


def stop_rechecking(session_key: str, socket: Revocable) -> None:
    """`socket` closed: no more re-checks for it."""
    sweep = _SWEEPS.get(asyncio.get_running_loop())
    if sweep is None or socket not in sweep.sockets.get(session_key, ()):
        return
    sweep.sockets[session_key].discard(socket)
    if not sweep.sockets[session_key]:
        del sweep.sockets[session_key], sweep.due[session_key]
