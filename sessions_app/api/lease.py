"""Run leases: how a runner in another process holds a session's run (docs/interfaces.md).

A runner acquires a lease with a time-to-live, renews it while its turn runs and releases
it at the end. A lease not renewed in time expires: the running turn it covered
(`RunLease.turn_id`) is recorded interrupted/abandoned (docs/runtime.md §2 reasons) and
broadcast, at once when anyone next touches the session (an API call, the session page,
a sweep) and, in the server process that granted or last renewed it, by a timer at its
expiry. No 10-minute stuck threshold is involved.

A second runner of the same session waits (up to `wait` seconds) or is refused with 409
naming the holder and the expiry.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from asgiref.sync import sync_to_async
from django.db import IntegrityError, transaction
from django.utils import timezone

from agentops.db_busy import RETRY_AFTER_SECONDS, is_database_busy
from agentops.runtime.session import TurnReason
from sessions_app import models
from sessions_app.api.models import ApiKey, RunLease
from sessions_app.api.problems import ApiProblem
from sessions_app.live import LiveSessionService

logger = logging.getLogger(__name__)

__all__ = [
    "Grant",
    "acquire_lease",
    "broadcast_expired",
    "expire_due_lease_sync",
    "release_lease",
    "renew_lease",
    "sweep_expired_leases",
]

#: Seconds between two tries while a runner waits for a lease.
_POLL_SECONDS = 0.1
#: Turns recorded abandoned by `expire_due_lease_sync` whose broadcast is still due, by
#: session (the broadcast runs in the request's event loop, after the transaction).
_PENDING: dict[str, list[str]] = {}
#: Expiry timers of this process by session id (granted or renewed here).
_TIMERS: dict[str, asyncio.TimerHandle] = {}
_TASKS: set[asyncio.Task[None]] = set()


@dataclass(frozen=True)
class Grant:
    """A lease as a runner sees it: id, expiry (UTC) and time-to-live (seconds)."""

    lease_id: str
    expires_at: datetime
    ttl_seconds: float


def expire_due_lease_sync(session_id: str, now: datetime | None = None) -> list[str]:
    """If the session's lease is past its expiry: delete it and record the running turn
    it covered interrupted/abandoned, in one transaction. Returns the ids of the turns so
    recorded (their broadcast is left to `broadcast_expired`)."""
    now = now or timezone.now()
    # Read first: a request on a session without a due lease (nearly every one) takes
    # no write transaction for it (on SQLite a transaction takes the write lock).
    if not RunLease.objects.filter(session_id=session_id, expires_at__lte=now).exists():
        return []
    with transaction.atomic():
        lease = (
            RunLease.objects.select_for_update()
            .filter(session_id=session_id, expires_at__lte=now)
            .first()
        )
        if lease is None:
            return []
        turn_id = lease.turn_id
        lease.delete()
        if not turn_id:
            return []
        turns = LiveSessionService()._interrupt_running_turns(
            session_id, TurnReason.ABANDONED, [turn_id]
        )
    ids = [turn.id for turn in turns]
    if ids:
        _PENDING.setdefault(session_id, []).extend(ids)
    return ids


async def broadcast_expired(session_id: str) -> None:
    """Broadcast the turns `expire_due_lease_sync` recorded abandoned for `session_id`."""
    service = LiveSessionService()
    for turn_id in _PENDING.pop(session_id, []):
        await service.announce_turn(turn_id)


async def expire_due_lease(session_id: str) -> None:
    """`expire_due_lease_sync`, then broadcast what it recorded."""
    await sync_to_async(expire_due_lease_sync)(session_id)
    await broadcast_expired(session_id)


def sweep_expired_leases() -> int:
    """Expire every lease past its expiry (`manage.py api_lease_sweep`); returns how many
    turns were recorded abandoned. Watchers learn of them when they next load the page."""
    now = timezone.now()
    due = RunLease.objects.filter(expires_at__lte=now).values_list("session_id", flat=True)
    return sum(len(expire_due_lease_sync(session_id, now)) for session_id in list(due))


def _holder_conflict(lease: RunLease) -> ApiProblem:
    return ApiProblem(
        409,
        "session-leased",
        f"session {lease.session_id!r} is leased by {lease.holder} until "
        f"{lease.expires_at.isoformat()}",
        holder=lease.holder,
        expires_at=lease.expires_at.isoformat(),
    )


def _try_acquire(
    session_id: str, lease_id: str, ttl: float, holder: str, key: ApiKey
) -> tuple[Grant | None, RunLease | None]:
    """One attempt: (the grant, None) or (None, the lease held by someone else)."""
    now = timezone.now()
    expire_due_lease_sync(session_id, now)
    expires = now + timedelta(seconds=ttl)
    try:
        with transaction.atomic():
            lease = RunLease.objects.select_for_update().filter(session_id=session_id).first()
            if lease is not None and lease.lease_id != lease_id:
                return None, lease
            if lease is None:  # a new lease (or a retried acquire of ours, renewed below)
                if not models.Session.objects.filter(pk=session_id).exists():
                    raise ApiProblem(404, "session-not-found", f"session {session_id!r} not found")
                lease = RunLease(session_id=session_id, lease_id=lease_id, acquired_at=now)
            lease.holder, lease.api_key, lease.ttl_seconds, lease.expires_at = (
                holder, key, ttl, expires,
            )  # fmt: skip
            lease.save()
    except IntegrityError:  # another runner created it first, or the lease id is taken
        lease = RunLease.objects.filter(session_id=session_id).first()
        if lease is None:
            raise ApiProblem(409, "lease-id-taken", "that lease id is in use") from None
        return None, lease
    return Grant(lease_id, expires, ttl), None


async def acquire_lease(
    session_id: str, *, ttl: float, wait: float, holder: str, key: ApiKey, lease_id: str = ""
) -> Grant:
    """Acquire the session's lease for `ttl` seconds, waiting up to `wait` seconds for
    another holder's lease to be released or to expire. A repeated acquire with the same
    `lease_id` renews it (a retried request). Raises ApiProblem 409 naming the holder."""
    lease_id = lease_id or secrets.token_urlsafe(18)
    deadline = asyncio.get_running_loop().time() + wait
    while True:
        grant, held = await sync_to_async(_try_acquire)(session_id, lease_id, ttl, holder, key)
        await broadcast_expired(session_id)
        if grant is not None:
            _arm_timer(session_id, ttl)
            return grant
        assert held is not None
        if asyncio.get_running_loop().time() >= deadline:
            raise _holder_conflict(held)
        await asyncio.sleep(_POLL_SECONDS)


def _renew(session_id: str, lease_id: str, ttl: float) -> Grant:
    now = timezone.now()
    expire_due_lease_sync(session_id, now)
    expires = now + timedelta(seconds=ttl)
    with transaction.atomic():
        updated = RunLease.objects.filter(session_id=session_id, lease_id=lease_id).update(
            expires_at=expires, ttl_seconds=ttl
        )
    if not updated:
        raise ApiProblem(
            409, "lease-lost", f"lease {lease_id[:80]!r} is not held (expired or released)"
        )
    return Grant(lease_id, expires, ttl)


async def renew_lease(session_id: str, lease_id: str, ttl: float) -> Grant:
    """Move the lease's expiry to now + `ttl`; 409 "lease-lost" when it expired."""
    try:
        grant = await sync_to_async(_renew)(session_id, lease_id, ttl)
    finally:
        await broadcast_expired(session_id)
    _arm_timer(session_id, ttl)
    return grant


def _release(session_id: str, lease_id: str) -> bool:
    with transaction.atomic():
        deleted, _ = RunLease.objects.filter(session_id=session_id, lease_id=lease_id).delete()
    return deleted > 0


async def release_lease(session_id: str, lease_id: str) -> bool:
    """Release the lease (True), or do nothing when it is not held (False)."""
    released = await sync_to_async(_release)(session_id, lease_id)
    timer = _TIMERS.pop(session_id, None)
    if timer is not None and released:
        timer.cancel()
    return released


def _arm_timer(session_id: str, ttl: float) -> None:
    """Expire the lease in this process right after its expiry unless renewed."""
    loop = asyncio.get_running_loop()
    old = _TIMERS.pop(session_id, None)
    if old is not None:
        old.cancel()

    def fire() -> None:
        _TIMERS.pop(session_id, None)
        # A fresh context: the request that armed the timer has ended, and with it the
        # executor its context names for thread-sensitive ORM calls.
        task = loop.create_task(_expire_on_time(session_id), context=contextvars.Context())
        _TASKS.add(task)
        task.add_done_callback(_TASKS.discard)

    _TIMERS[session_id] = loop.call_later(ttl + 0.05, fire, context=contextvars.Context())


async def _expire_on_time(session_id: str) -> None:
    """The timer's `expire_due_lease`: a busy database is tried again a little later;
    another failure is logged (a request on the session or the sweep expires it then)."""
    try:
        await expire_due_lease(session_id)
    except Exception as error:
        if is_database_busy(error):
            _arm_timer(session_id, RETRY_AFTER_SECONDS)
        else:
            logger.warning("expiring the run lease of session %s failed", session_id, exc_info=True)
