"""Store registry for the runtime tests.

Every runner/turn-store test runs against each registered store kind: the in-memory
stores and the Django store (`django`, on the test database: SQLite, or PostgreSQL when
DATABASE_URL is set). To add a store, append a `StoreKind` to `STORE_KINDS` (or call
`register_store`) from here or from a conftest that imports this module. A kind names the
fixtures its factory needs (e.g. ``("transactional_db",)``) and the marks its cases need;
kinds without fixtures also run in the hypothesis property tests.

Fixtures:
- `store`: every kind.
- `durable_store`: kinds with a turn store (durable-turn semantics; docs/runtime.md §3).
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
    #: pytest marks applied to this kind's parametrised cases. A database kind needs
    #: `pytest.mark.django_db(transaction=True)` here, not only the `transactional_db`
    #: fixture: requested late (from the store fixture) pytest-django would wrap the test
    #: in a transaction that the ORM's worker thread then waits on.
    marks: tuple[pytest.MarkDecorator, ...] = ()


def _memory() -> StoreHarness:
    service = InMemorySessionService()
    return StoreHarness(service, durable=True, locking=True, archive=service.archive_events)


def _memory_legacy() -> StoreHarness:
    service = LegacyInMemorySessionService()
    return StoreHarness(service, durable=False, locking=False, archive=service.archive_events)


def _django() -> StoreHarness:
    """The Django store (`sessions_app.store.DjangoSessionService`) on the test database.

    Imported lazily so the runtime tests stay importable without Django; runs on SQLite by
    default and on PostgreSQL when DATABASE_URL points there (advisory run lock).
    """
    from django.utils import timezone

    from sessions_app.models import Event as EventRow
    from sessions_app.store import DjangoSessionService

    async def archive(session_id: str, event_ids: list[int]) -> None:
        await EventRow.objects.filter(session_id=session_id, pk__in=event_ids).aupdate(
            archived_at=timezone.now()
        )

    return StoreHarness(DjangoSessionService(), durable=True, locking=True, archive=archive)


STORE_KINDS: list[StoreKind] = [
    StoreKind("memory", _memory, durable=True, locking=True),
    StoreKind("memory-legacy", _memory_legacy, durable=False, locking=False),
    StoreKind(
        "django",
        _django,
        durable=True,
        locking=True,
        fixtures=("transactional_db",),
        marks=(pytest.mark.django_db(transaction=True),),
    ),
]


def register_store(kind: StoreKind) -> None:
    """Add a store kind to every store-parametrised runtime test."""
    STORE_KINDS.append(kind)


# The remote client over the HTTP API, against a live server (tests/runtime/remote_store.py).
from tests.runtime.remote_store import REMOTE, remote_api_server  # noqa: E402

register_store(REMOTE)
__all__ = ["remote_api_server"]


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
            params = [pytest.param(kind, marks=kind.marks, id=kind.name) for kind in kinds]
            metafunc.parametrize(fixture_name, params, indirect=True)


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
