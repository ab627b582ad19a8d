"""Live tests: a fresh channel layer per test (each async test has its own event loop, and
the Redis layer's connections and receive state belong to the loop that made them), and
on Redis a key prefix of this run's own, so test runs sharing one Redis (other checkouts,
CI) never see each other's groups (the same session ids would otherwise collide)."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import pytest
from channels.layers import channel_layers
from django.conf import settings


@pytest.fixture(autouse=True, scope="session")
def _own_redis_prefix() -> Iterator[None]:
    # The settings module builds CHANNEL_LAYERS from literals, so its inferred type is too loose.
    layer = cast(dict[str, Any], settings.CHANNEL_LAYERS["default"])
    config: dict[str, Any] = layer.get("CONFIG", {})
    if "hosts" not in config:
        yield
        return
    prefix = f"asgi-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    previous = config.get("prefix"), os.environ.get("REDIS_CHANNEL_PREFIX")
    config["prefix"] = prefix
    os.environ["REDIS_CHANNEL_PREFIX"] = prefix  # daphne subprocesses use it too
    yield
    config["prefix"] = previous[0] or "asgi"
    if previous[1] is None:
        os.environ.pop("REDIS_CHANNEL_PREFIX", None)
    else:
        os.environ["REDIS_CHANNEL_PREFIX"] = previous[1]


@pytest.fixture(autouse=True)
async def _fresh_channel_layer() -> AsyncIterator[None]:
    channel_layers.backends.clear()
    yield
    layer = channel_layers.backends.get("default")
    close = getattr(layer, "close_pools", None)
    if close is not None:
        await close()
    channel_layers.backends.clear()
