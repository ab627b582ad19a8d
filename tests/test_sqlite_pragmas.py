"""SQLite connections run with the settings' pragmas (`agentops.settings`): WAL and
synchronous=NORMAL (durability never below that), the larger page cache and checkpoint
interval (SQLITE_CACHE_MB, SQLITE_WAL_AUTOCHECKPOINT_PAGES)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db


def _pragma(name: str) -> object:
    with connection.cursor() as cursor:
        cursor.execute(f"PRAGMA {name}")
        return cursor.fetchone()[0]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite pragmas")
def test_a_connection_runs_with_the_documented_defaults() -> None:
    assert _pragma("journal_mode") == "wal"
    assert _pragma("synchronous") == 1  # NORMAL
    assert _pragma("cache_size") == -64 * 1024  # KiB
    assert _pragma("wal_autocheckpoint") == 10000


def test_the_environment_sets_them() -> None:
    code = (
        "from agentops import settings; "
        "print(settings.DATABASES['default']['OPTIONS']['init_command'])"
    )
    env = {**os.environ, "DATABASE_URL": "sqlite:////tmp/x.sqlite3", "SQLITE_CACHE_MB": "8",
           "SQLITE_WAL_AUTOCHECKPOINT_PAGES": "2000"}  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert "PRAGMA cache_size=-8192;" in out and "PRAGMA wal_autocheckpoint=2000;" in out
    assert "PRAGMA synchronous=NORMAL;" in out
