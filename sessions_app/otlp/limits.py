"""The receiver's per-key rate limit: a token bucket of spans per API key, in this
process (each server process keeps its own buckets).

A key may send AGENTOPS_OTLP_SPANS_PER_SECOND spans per second on average with bursts of
AGENTOPS_OTLP_BURST_SPANS; a request that would overdraw its bucket is refused whole (429
with Retry-After: the exporter retries the batch later). 0 spans per second: no limit.
"""

from __future__ import annotations

import math
import threading
import time

from django.conf import settings

__all__ = ["take"]

_lock = threading.Lock()
_buckets: dict[int, tuple[float, float]] = {}  # key id -> (tokens, monotonic time)


def take(key_id: int, spans: int) -> float:
    """Take `spans` tokens from the key's bucket; returns 0 when taken, else the seconds
    to wait before the batch fits (at least 1, rounded up: Retry-After is whole seconds)."""
    rate = float(settings.AGENTOPS_OTLP_SPANS_PER_SECOND)
    if rate <= 0 or spans <= 0:
        return 0
    burst = float(max(settings.AGENTOPS_OTLP_BURST_SPANS, 1))
    now = time.monotonic()
    with _lock:
        tokens, then = _buckets.get(key_id, (burst, now))
        tokens = min(burst, tokens + (now - then) * rate)
        if spans <= tokens:
            _buckets[key_id] = (tokens - spans, now)
            return 0
        _buckets[key_id] = (tokens, now)
        needed = min(spans, burst) - tokens
        return float(max(1, math.ceil(needed / rate)))
