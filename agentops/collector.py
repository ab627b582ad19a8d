"""The garbage collector of a server process (`agentops.asgi`).

A server process allocates many short-lived objects per request (an OTLP batch of 512
spans: tens of thousands); what Django and the app loaded at start-up never becomes
garbage. Frozen out of the collector's sight, with a larger first-generation threshold
(AGENTOPS_GC_THRESHOLD; 0: Python's default, left alone), the collector runs less often
and scans less each time. Benchmarks that run the server's code in their own process
(`bench otlp`'s writer alone) call it too, so they measure it as the server runs it.
"""

from __future__ import annotations

import gc

from django.conf import settings

__all__ = ["tune_collector"]


def tune_collector() -> None:
    """Freeze what this process holds now and raise the first-generation threshold to
    AGENTOPS_GC_THRESHOLD (nothing when it is 0)."""
    if settings.AGENTOPS_GC_THRESHOLD:
        gc.freeze()
        gc.set_threshold(settings.AGENTOPS_GC_THRESHOLD, *gc.get_threshold()[1:])
