"""Shared fixtures: personas (admin, operator, outsider) and the corpus location."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from django.contrib.auth.models import Group, User
from django.db import connections
from django.test import Client

from sessions_app.roles import ensure_role_groups

# The third-party transcripts live beside the project, never inside it.
CORPUS = Path(
    os.environ.get("AGENTOPS_CORPUS", Path(__file__).resolve().parents[2] / "shared" / "corpus")
)


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"corpus not found at {CORPUS}; set AGENTOPS_CORPUS")
    return CORPUS


def _user_in(username: str, group: str | None) -> User:
    # A transactional test's flush removes the groups migration 0002 created.
    ensure_role_groups()
    user = User.objects.create_user(username=username, password="pw-" + username)
    if group:
        user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def admin_user(db: None) -> User:
    return _user_in("ada-admin", "admins")


@pytest.fixture
def operator_user(db: None) -> User:
    return _user_in("otto-operator", "operators")


@pytest.fixture
def outsider_user(db: None) -> User:
    return _user_in("olga-outsider", None)


@pytest.fixture
def admin_client(client: Client, admin_user: User) -> Client:
    client.force_login(admin_user)
    return client


@pytest.fixture
def operator_client(client: Client, operator_user: User) -> Client:
    client.force_login(operator_user)
    return client


@pytest.fixture
def outsider_client(client: Client, outsider_user: User) -> Client:
    client.force_login(outsider_user)
    return client


@pytest.fixture(autouse=True)
def _testserver_origin(settings: Any) -> None:
    """In-process websocket tests open their sockets from the test client's origin."""
    settings.AGENTOPS_ALLOWED_ORIGINS = [*settings.AGENTOPS_ALLOWED_ORIGINS, "http://testserver"]


@pytest.fixture(autouse=True)
def _close_worker_thread_connections() -> Iterator[None]:
    """Close DB connections that sync_to_async opened in its worker thread during a test.

    Async tests run ORM code in asgiref's single worker thread, whose connections would
    otherwise stay open and block dropping the PostgreSQL test database.
    """
    yield
    SyncToAsync.single_thread_executor.submit(connections.close_all).result()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run browser tests last: Playwright's sync API keeps an event loop running in the
    main thread for the rest of the session, which async tests cannot share."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@pytest.fixture(autouse=True)
def _fresh_channel_layer_per_test() -> Iterator[None]:
    """Each test gets its own channel layer object. A Redis layer's connections belong to
    the event loop that opened them; one cached across tests (each with its own loop, e.g.
    a todo edit broadcasting through async_to_sync) would stall the next test's receive."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()
