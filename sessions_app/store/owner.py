"""Who runs a live turn, and whether that owner is gone (docs/concepts.md "Stuck turns").

A turn begun by `DjangoSessionService.begin_turn` records its owner: the host and pid of
the process and a lease (`lease_until`, settings.AGENTOPS_TURN_LEASE_SECONDS ahead) that
the run renews while it runs (`renew_leases`, every third of the lease). The owner is
gone when the lease has lapsed, or when it ran on this host and its pid is dead (or is
this very process, which does not run it). The run lock has the last word: a turn is
recorded abandoned only by whoever holds the session's run lock (`sessions_app.live.stuck`).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Collection, Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from sessions_app import models

__all__ = [
    "HOST",
    "gone_running_turns",
    "lease_seconds",
    "owner_fields",
    "owner_gone",
    "pid_alive",
    "renew_leases",
]

#: This machine's name as recorded in `Turn.owner_host`.
HOST = socket.gethostname()[:255]


def lease_seconds() -> int:
    """settings.AGENTOPS_TURN_LEASE_SECONDS: how long a lease lasts without renewal."""
    return int(settings.AGENTOPS_TURN_LEASE_SECONDS)


def owner_fields(now: datetime) -> dict[str, Any]:
    """`Turn` field values naming this process as the owner, leased from `now` (aware UTC)."""
    return {
        "owner_host": HOST,
        "owner_pid": os.getpid(),
        "lease_until": now + timedelta(seconds=lease_seconds()),
    }


def renew_leases(turn_ids: Iterable[str]) -> int:
    """Extend the leases of the running turns among `turn_ids` that this process owns;
    returns how many were renewed (one UPDATE)."""
    ids = list(turn_ids)
    if not ids:
        return 0
    now = timezone.now()
    return models.Turn.objects.filter(
        pk__in=ids, status=models.Turn.Status.RUNNING, owner_host=HOST, owner_pid=os.getpid()
    ).update(lease_until=now + timedelta(seconds=lease_seconds()))


def pid_alive(pid: int) -> bool:
    """Whether process `pid` of this host exists and is not a zombie (Linux: /proc)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            # "pid (comm) S ...": the state follows the last ")"; Z = zombie, X = dead.
            return stat.read().rpartition(")")[2].split()[0] not in {"Z", "X"}
    except (OSError, IndexError):
        return True


def owner_gone(
    host: str,
    pid: int | None,
    lease_until: datetime | None,
    *,
    now: datetime,
    runs_here: bool,
) -> bool:
    """Whether a running turn's recorded owner is gone (see the module docstring).

    `runs_here`: the turn runs in this process (`sessions_app.live.runs`). A turn with no
    owner recorded (imported, or begun before owners were recorded) does not count: it is
    left to *Stop*, the next run of its session and the stuck rule.
    """
    if runs_here or pid is None or lease_until is None:
        return False
    if lease_until < now:
        return True
    if host != HOST:
        return False
    return pid == os.getpid() or not pid_alive(pid)


def gone_running_turns(
    session_id: str | None = None, *, here: Collection[str] = ()
) -> list[tuple[str, str]]:
    """`(session_id, turn_id)` of running turns whose owner is gone (`owner_gone`), of one
    session or of all; `here`: ids of turns running in this process. One query."""
    rows = models.Turn.objects.filter(status=models.Turn.Status.RUNNING, owner_pid__isnull=False)
    if session_id is not None:
        rows = rows.filter(session_id=session_id)
    now = timezone.now()
    return [
        (session, turn)
        for turn, session, host, pid, lease in rows.values_list(
            "id", "session_id", "owner_host", "owner_pid", "lease_until"
        )
        if owner_gone(host, pid, lease, now=now, runs_here=turn in here)
    ]
