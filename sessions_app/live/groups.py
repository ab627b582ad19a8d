"""Channel-layer groups: one group per session, watched by every page showing it.

Every message sent to a session's group is a dict with a "type" naming the consumer
handler (Channels convention: "session.event" -> `session_event`). Senders anywhere
(runner, todo edits, imports) use `broadcast`; with the Redis channel layer a message
sent in one process reaches watchers connected to any other.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)


def group_name(session_id: str) -> str:
    """The group of `session_id`: "session." + a hash (group names allow only
    ASCII letters, digits, hyphens, underscores and periods, under 100 characters)."""
    return "session." + hashlib.sha256(session_id.encode()).hexdigest()[:40]


async def broadcast(session_id: str, message: dict[str, Any]) -> None:
    """Send `message` (with a "type") to every watcher of `session_id`; no-op without a
    configured channel layer."""
    layer = get_channel_layer()
    if layer is not None:
        await layer.group_send(group_name(session_id), message)


def broadcast_committed(session_id: str, message: dict[str, Any]) -> None:
    """`broadcast` from synchronous code after a change was committed (``on_commit``): a
    failure is only logged, since a dead channel layer must not fail a committed change."""
    try:
        async_to_sync(broadcast)(session_id, message)
    except Exception:
        logger.warning("%s broadcast failed for %s", message.get("type"), session_id, exc_info=True)
