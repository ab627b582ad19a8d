"""Store registry for the runtime tests.

Every runner/turn-store test runs against each registered store kind. To add a store
(say the Django one), append a `StoreKind` to `STORE_KINDS` (or call `register_store`)
from here or from a conftest that imports this module. A kind names the fixtures its
factory needs (e.g. ``("transactional_db",)``); kinds without fixtures also run in the
hypothesis property tests.

Fixtures:
- `store`: every kind.
- `durable_store`: kinds with a turn store (durable-turn semantics; SPEC.md 3).
- `legacy_store`: kinds without a turn store (rollback semantics).
- `locking_store`: kinds with a turn store *and* a run lock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest

from agentops.runtime import InMemorySessionService, LegacyInMemorySessionService, SessionService


@dataclass
class StoreHarness:
    """A store under test plus what tests need beyond the protocols."""

    service: SessionService
    durable: bool
    locking: bool
    #: archive(session_id, event_ids): mark events archived (excluded from list_events).
    archive: Callable[[str, list[int]], Awaitable[None]]


@dataclass(frozen=True)
class StoreKind:
    name: str
    factory: Callable[[], StoreHarness]
    durable: bool
    locking: bool
    fixtures: tuple[str, ...] = ()


def _memory() -> StoreHarness:
    service = InMemorySessionService()
    return StoreHarness(service, durable=True, locking=True, archive=service.archive_events)


def _memory_legacy() -> StoreHarness:
    service = LegacyInMemorySessionService()
    return StoreHarness(service, durable=False, locking=False, archive=service.archive_events)


STORE_KINDS: list[StoreKind] = [
    StoreKind("memory", _memory, durable=True, locking=True),
    StoreKind("memory-legacy", _memory_legacy, durable=False, locking=False),
]


def register_store(kind: StoreKind) -> None:
    """Add a store kind to every store-parametrised runtime test."""
    STORE_KINDS.append(kind)


_SELECTORS: dict[str, Callable[[StoreKind], bool]] = {
    "store": lambda kind: True,
    "durable_store": lambda kind: kind.durable,
    "legacy_store": lambda kind: not kind.durable,
    "locking_store": lambda kind: kind.durable and kind.locking,
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "turn_store: needs a store with a turn store (durable-turn semantics)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for fixture_name, select in _SELECTORS.items():
        if fixture_name in metafunc.fixturenames:
            kinds = [kind for kind in STORE_KINDS if select(kind)]
            metafunc.parametrize(
                fixture_name, kinds, ids=[kind.name for kind in kinds], indirect=True
            )


def _harness(request: pytest.FixtureRequest) -> StoreHarness:
    kind: StoreKind = request.param
    for name in kind.fixtures:
        request.getfixturevalue(name)
    return kind.factory()


@pytest.fixture
def store(request: pytest.FixtureRequest) -> StoreHarness:
    return _harness(request)


@pytest.fixture
def durable_store(request: pytest.FixtureRequest) -> StoreHarness:
    return _harness(request)


@pytest.fixture
def legacy_store(request: pytest.FixtureRequest) -> StoreHarness:
    return _harness(request)


@pytest.fixture
def locking_store(request: pytest.FixtureRequest) -> StoreHarness:
    return _harness(request)
