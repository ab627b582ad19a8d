"""The `remote` store kind: `agentops.client.RemoteSessionService` against a live server.

A daphne server (tests/live/helpers.py `DaphneServer`) runs on the test database (an
SQLite file, or PostgreSQL) for the whole test session; each case gets a fresh API key
(the transactional flush removes the previous one) and a new client.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.runtime.conftest import StoreHarness, StoreKind

_SERVER_URL: list[str] = []


@pytest.fixture(scope="session")
def remote_api_server(
    django_db_setup: None, django_db_blocker: pytest.FixtureRequest
) -> Iterator[str]:
    """The URL of a daphne server on the test database, started once per test session."""
    from tests.live.helpers import DaphneServer

    with DaphneServer({"AGENTOPS_STUCK_AFTER_SECONDS": "600"}) as server:
        _SERVER_URL[:] = [server.url]
        yield server.url


def _remote() -> StoreHarness:
    from django.utils import timezone

    from agentops.client import RemoteSessionService
    from sessions_app.api.keys import create_key
    from sessions_app.models import Event as EventRow

    async def archive(session_id: str, event_ids: list[int]) -> None:
        await EventRow.objects.filter(session_id=session_id, pk__in=event_ids).aupdate(
            archived_at=timezone.now()
        )

    key = create_key(f"runtime-tests-{timezone.now().timestamp()}").key
    service = RemoteSessionService(_SERVER_URL[0], key, lease_ttl=5.0, lease_wait=1.0)
    return StoreHarness(service, durable=True, locking=True, archive=archive)


REMOTE = StoreKind(
    "remote",
    _remote,
    durable=True,
    locking=True,
    fixtures=("transactional_db", "remote_api_server"),
    marks=(pytest.mark.django_db(transaction=True),),
)
