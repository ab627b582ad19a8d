"""The run lock: one run at a time per run key (app, user, session) (docs/runtime.md §2).

On PostgreSQL a session-level advisory lock held on a dedicated connection for the whole
run, so a crashed holder's lock is released by the server when its connection dies;
elsewhere (SQLite) an in-process lock per run key, shared by every service instance,
thread and event loop of the process.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from django.db import connection

__all__ = ["advisory_lock_key", "postgres_conninfo", "run_lock"]

# Seconds between two attempts to take a PostgreSQL advisory lock (waiting stays cancellable).
_ADVISORY_POLL_SECONDS = 0.02
# The same for the in-process run lock (SQLite and other databases).
_LOCAL_POLL_SECONDS = 0.01
# In-process run locks by run key (app, user, session), shared by every service instance.
_PROCESS_LOCKS: dict[tuple[str, str, str], threading.Lock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()


def advisory_lock_key(app_name: str, user_id: str, session_id: str) -> int:
    """A signed 64-bit PostgreSQL advisory-lock key for the run key (app, user, session)."""
    digest = hashlib.blake2b(
        "\x1f".join((app_name, user_id, session_id)).encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


def run_lock(
    app_name: str, user_id: str, session_id: str, *, wait: float | None = None
) -> AbstractAsyncContextManager[None]:
    """Async context manager serialising runs of (app, user, session) (docs/runtime.md §2).

    PostgreSQL: `pg_advisory_lock` semantics on a dedicated connection (polled with
    `pg_try_advisory_lock`, so a waiter can be cancelled), released on exit or when the
    holder's connection dies. Other databases: an in-process lock. `wait`: give up
    after that many seconds (None: wait as long as it takes); entering then raises
    TimeoutError and nothing is held.
    """
    if connection.vendor == "postgresql":
        return _advisory_lock(advisory_lock_key(app_name, user_id, session_id), wait)
    return _local_lock((app_name, user_id, session_id), wait)


@asynccontextmanager
async def _local_lock(key: tuple[str, str, str], wait: float | None) -> AsyncIterator[None]:
    # One lock per run key for the whole process, whichever service instance, thread
    # or event loop runs the turn; polled so that a waiter stays cancellable.
    with _PROCESS_LOCKS_GUARD:
        lock = _PROCESS_LOCKS.setdefault(key, threading.Lock())
    deadline = _deadline(wait)
    while not lock.acquire(blocking=False):
        _check_deadline(deadline, key)
        await asyncio.sleep(_LOCAL_POLL_SECONDS)
    try:
        yield
    finally:
        lock.release()


@asynccontextmanager
async def _advisory_lock(key: int, wait: float | None) -> AsyncIterator[None]:
    import psycopg

    conninfo = postgres_conninfo()
    deadline = _deadline(wait)
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
        while True:
            row = await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))).fetchone()
            if row and row[0]:
                break
            _check_deadline(deadline, key)
            await asyncio.sleep(_ADVISORY_POLL_SECONDS)
        try:
            yield
        finally:
            # Closing the connection releases the lock too; unlock explicitly first so a
            # pooled or slow close cannot delay the next run.
            await asyncio.shield(conn.execute("SELECT pg_advisory_unlock(%s)", (key,)))


def _deadline(wait: float | None) -> float | None:
    return None if wait is None else asyncio.get_running_loop().time() + wait


def _check_deadline(deadline: float | None, key: object) -> None:
    if deadline is not None and asyncio.get_running_loop().time() >= deadline:
        raise TimeoutError(f"run lock {key!r} is held by a run")


def postgres_conninfo() -> str:
    """libpq connection string for the default database (the test database in tests)."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    params.pop("server_side_binding", None)
    parts = []
    for name in ("host", "port", "user", "password", "dbname"):
        value = params.get(name)
        if value:
            parts.append(f"{name}={value}")
    return " ".join(parts)
