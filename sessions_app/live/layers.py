"""The in-memory channel layer (one server process, no Redis), without its per-message scan.

Channels' `InMemoryChannelLayer` looks through every channel and every group membership
for expired messages on each `send`... each `group_send` and each `receive`: with 1,000
watchers' channels open that scan is most of what a message costs (about 1 ms per
``group_send`` and ``receive`` pair, measured by ``manage.py bench live``). Messages expire
after ``expiry`` seconds (60) and memberships after ``group_expiry`` (a day), so scanning
more often than once a second finds nothing more; this layer scans at most that often.
Everything else is the library's.
"""

from __future__ import annotations

import time

from channels.layers import InMemoryChannelLayer as ChannelsInMemoryChannelLayer

#: Seconds between two scans for expired messages and memberships.
CLEAN_EVERY_SECONDS = 1.0


class InMemoryChannelLayer(ChannelsInMemoryChannelLayer):  # type: ignore[misc]  # untyped
    """`channels.layers.InMemoryChannelLayer`, scanning for expired messages at most once
    per `CLEAN_EVERY_SECONDS` (module docstring)."""

    _cleaned_at = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._cleaned_at < CLEAN_EVERY_SECONDS:
            return
        self._cleaned_at = now
        super()._clean_expired()
