"""Live tests: a fresh channel layer per test (each async test has its own event loop, and
the Redis layer's connections and receive state belong to the loop that made them)."""

from __future__ import annotations

import pytest
from channels.layers import channel_layers


@pytest.fixture(autouse=True)
async def _fresh_channel_layer():
    channel_layers.backends.clear()
    yield
    layer = channel_layers.backends.get("default")
    close = getattr(layer, "close_pools", None)
    if close is not None:
        await close()
    channel_layers.backends.clear()
