"""Sortable unique ids for runs, turns and sessions (docs/runtime.md §3 step 1)."""

from __future__ import annotations

import os
import threading
import time

__all__ = ["new_id"]

_lock = threading.Lock()
_last_ns = 0


def new_id(prefix: str) -> str:
    """A new id ``<prefix>_<16 hex: ns since epoch, strictly increasing><8 hex random>``.

    Ids made by one process sort in creation order (string order equals time order);
    the random tail keeps ids of different processes apart.
    """
    global _last_ns
    with _lock:
        now = max(time.time_ns(), _last_ns + 1)
        _last_ns = now
    return f"{prefix}_{now:016x}{os.urandom(4).hex()}"
