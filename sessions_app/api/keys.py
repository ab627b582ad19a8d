"""API keys: made once, shown once, stored as a SHA-256 of their secret.

A key reads ``ao_<prefix>_<secret>``: the 8-character prefix is stored in clear (shown,
used to find the row), the 43-character secret (32 random bytes, url-safe base64) only
as its SHA-256. Why not a slow password hash: those exist to slow down guessing of
low-entropy passwords; 256 random bits cannot be guessed, so a fast hash is as safe and
keeps authentication one cheap lookup per request.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import OperationalError, transaction
from django.db.models import Q
from django.utils import timezone

from agentops.db_busy import is_database_busy
from sessions_app.api.models import ApiKey

__all__ = [
    "KEY_PREFIX",
    "NewKey",
    "bearer_token",
    "create_key",
    "find_key",
    "hash_secret",
    "revoke_key",
]

KEY_PREFIX = "ao_"
_PREFIX_LENGTH = 8
#: Last-used times are written at most this often per key (seconds), not on every call.
LAST_USED_RESOLUTION_SECONDS = 60


@dataclass(frozen=True)
class NewKey:
    """A key just made: its row and the full key text (shown once, never stored)."""

    row: ApiKey
    key: str


def hash_secret(secret: str) -> str:
    """Hex SHA-256 of a key's secret part."""
    return hashlib.sha256(secret.encode()).hexdigest()


def create_key(
    name: str,
    *,
    read_only: bool = False,
    app_names: Sequence[str] = (),
    created_by: User | None = None,
) -> NewKey:
    """Make and store a key named `name`; returns it with its text (the only copy).

    Raises ValueError when the name is empty or taken.
    """
    name = name.strip()
    if not name:
        raise ValueError("a key needs a name")
    with transaction.atomic():
        if ApiKey.objects.filter(name=name).exists():
            raise ValueError(f"a key named {name!r} already exists")
        prefix = secrets.token_hex(_PREFIX_LENGTH // 2)
        while ApiKey.objects.filter(prefix=prefix).exists():  # pragma: no cover (2^-32)
            prefix = secrets.token_hex(_PREFIX_LENGTH // 2)
        secret = secrets.token_urlsafe(32)
        row = ApiKey.objects.create(
            name=name,
            prefix=prefix,
            secret_hash=hash_secret(secret),
            read_only=read_only,
            app_names=sorted(set(app_names)),
            created_by=created_by,
        )
    return NewKey(row=row, key=f"{KEY_PREFIX}{prefix}_{secret}")


def bearer_token(authorization: str) -> str:
    """The token of an ``Authorization: Bearer <token>`` value (any case of the scheme),
    else ""."""
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def find_key(token: str) -> ApiKey | None:
    """The active key whose text is `token`, or None (unknown, malformed or revoked).

    Compares hashes in constant time. Notes the use (`last_used_at`, at most once a
    minute per key, so reads stay reads).
    """
    if not token.startswith(KEY_PREFIX):
        return None
    prefix, _, secret = token[len(KEY_PREFIX) :].partition("_")
    if len(prefix) != _PREFIX_LENGTH or not secret:
        return None
    row = ApiKey.objects.active().filter(prefix=prefix).first()
    if row is None or not hmac.compare_digest(row.secret_hash, hash_secret(secret)):
        return None
    now = timezone.now()
    stale = now.timestamp() - LAST_USED_RESOLUTION_SECONDS
    if row.last_used_at is None or row.last_used_at.timestamp() < stale:
        try:
            ApiKey.objects.filter(pk=row.pk).update(last_used_at=now)
        except OperationalError as error:
            # Bookkeeping only: a busy database must not refuse the request (a read
            # especially); the next request records the use.
            if not is_database_busy(error):
                raise
        else:
            row.last_used_at = now
    return row


def revoke_key(prefix_or_name: str) -> ApiKey:
    """Revoke the active key with that prefix or name; returns it.

    Raises LookupError when no active key matches.
    """
    with transaction.atomic():
        row = (
            ApiKey.objects.active()
            .filter(Q(prefix=prefix_or_name) | Q(name=prefix_or_name))
            .first()
        )
        if row is None:
            raise LookupError(f"no active key with prefix or name {prefix_or_name!r}")
        row.revoked_at = timezone.now()
        row.save(update_fields=["revoked_at"])
    return row
