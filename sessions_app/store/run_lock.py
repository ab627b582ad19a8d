"""The run lock: one run at a time per run key (app, user, session) (docs/runtime.md §2).

Both kinds die with their holder, so a crashed run never blocks the session:

- PostgreSQL: a session-level advisory lock held on a dedicated connection for the whole
  run; the server releases it when that connection dies.
- SQLite (and any other database): an OS file lock (`fcntl.flock`, exclusive) on one file
  per run key under settings.AGENTOPS_LOCK_DIR, shared by every process on the machine;
  the kernel releases it when the holder's process dies. flock belongs to an open file
  description, so each acquisition opens the file afresh: two tasks or threads of one
  process exclude each other exactly as two processes do.

Lock files are never deleted (deleting a file another process has open and waits on
would let two holders in); they are empty and one per session.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import logging
import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection

__all__ = ["advisory_lock_key", "lock_file_path", "postgres_conninfo", "run_lock"]

logger = logging.getLogger(__name__)

# Seconds between two attempts to take a PostgreSQL advisory lock (waiting stays cancellable).
_ADVISORY_POLL_SECONDS = 0.02
# The same for the file lock (SQLite and other databases).
_FILE_POLL_SECONDS = 0.01


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
    holder's connection dies. Other databases: an exclusive `flock` on
    `lock_file_path(...)` (polled with LOCK_NB), released on exit or when the holder's
    process dies. `wait`: give up after that many seconds (None: wait as long as it
    takes; 0: one attempt); entering then raises TimeoutError and nothing is held.
    """
    if connection.vendor == "postgresql":
        return _advisory_lock(advisory_lock_key(app_name, user_id, session_id), wait)
    return _file_lock(lock_file_path(app_name, user_id, session_id), wait)


def lock_file_path(app_name: str, user_id: str, session_id: str) -> Path:
    """The lock file of the run key in settings.AGENTOPS_LOCK_DIR: a hash of the database
    name and (app, user, session), so two SQLite databases on one machine (the dev
    database and the test database) never block each other."""
    database = str(connection.settings_dict.get("NAME") or "")
    if database and not database.startswith(":memory:") and "mode=memory" not in database:
        database = os.path.realpath(database)
    digest = hashlib.blake2b(
        "\x1f".join((database, app_name, user_id, session_id)).encode(), digest_size=16
    ).hexdigest()
    return Path(settings.AGENTOPS_LOCK_DIR) / f"run-{digest}.lock"


@asynccontextmanager
async def _file_lock(path: Path, wait: float | None) -> AsyncIterator[None]:
    deadline = _deadline(wait)
    path.parent.mkdir(parents=True, exist_ok=True)
    # A fresh open file description per acquisition (not inherited by child processes).
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    waited = False
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                _check_deadline(deadline, str(path))
                if not waited:
                    waited = True
                    logger.info("run lock %s is held by another run: waiting", path.name)
                await asyncio.sleep(_FILE_POLL_SECONDS)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@asynccontextmanager
async def _advisory_lock(key: int, wait: float | None) -> AsyncIterator[None]:
    import psycopg

    conninfo = postgres_conninfo()
    deadline = _deadline(wait)
    waited = False
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
        while True:
            row = await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))).fetchone()
            if row and row[0]:
                break
            _check_deadline(deadline, key)
            if not waited:
                waited = True
                logger.info("run lock %s is held by another run: waiting", key)
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
