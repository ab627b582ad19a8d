"""`agentops.collector.tune_collector`: a server's garbage collector settings."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from django.test import override_settings

from agentops.collector import tune_collector


@pytest.fixture
def restored() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@override_settings(AGENTOPS_GC_THRESHOLD=12_345)
def test_it_freezes_what_is_loaded_and_raises_the_first_threshold(restored: None) -> None:
    before = gc.get_threshold()
    gc.unfreeze()
    tune_collector()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (12_345, *before[1:])


@override_settings(AGENTOPS_GC_THRESHOLD=0)
def test_zero_leaves_the_collector_alone(restored: None) -> None:
    gc.unfreeze()
    before = gc.get_threshold()
    tune_collector()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before
