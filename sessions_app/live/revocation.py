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
channel layer that is down must not fail the change, and each socket also re-checks every
``AGENTOPS_WATCHER_RECHECK_SECONDS`` anyway.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth import user_logged_out
from django.contrib.auth.models import Group, User
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.http import HttpRequest

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
