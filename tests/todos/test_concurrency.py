"""No lost updates across processes on PostgreSQL (docs/runtime.md §7: serialised
read-modify-write)."""

from __future__ import annotations

import multiprocessing
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings
from django.db import connection

from tests.factories import make_session
from tests.todos.concurrency_worker import apply_updates
from todos_app.models import TodoChange, TodoList

WORKERS = 8
UPDATES = 50

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs DATABASE_URL=postgres://"),
]


def _test_database_url() -> str:
    """The configured database URL pointing at the test database (its NAME during tests)."""
    db = settings.DATABASES["default"]
    user = db.get("USER") or ""
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    netloc = f"{user}{password}@{db.get('HOST') or 'localhost'}:{db.get('PORT') or 5432}"
    url = urlunsplit(("postgres", netloc, "/" + db["NAME"], "", ""))
    assert urlsplit(url).path == "/" + db["NAME"]
    return url


def test_eight_processes_updating_one_list_lose_nothing() -> None:
    total = WORKERS * UPDATES
    make_session(
        "s-race", todos=[{"content": f"item {i}", "status": "pending"} for i in range(total)]
    )
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    url = _test_database_url()
    processes = [
        ctx.Process(target=apply_updates, args=(url, "s-race", worker, UPDATES, barrier))
        for worker in range(WORKERS)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=180)
    assert [p.exitcode for p in processes] == [0] * WORKERS

    todo_list = TodoList.objects.get(session_id="s-race")
    items = todo_list.as_state()
    assert len(items) == total
    assert all(item["status"] == "completed" for item in items)
    expected = [f"w{i // UPDATES}-{i % UPDATES}" for i in range(total)]
    assert [item["content"] for item in items] == expected
    assert todo_list.version == 1 + total  # the factory's list starts at version 1
    changes = TodoChange.objects.filter(todo_list=todo_list)
    assert changes.count() == total
    versions = sorted(changes.values_list("version", flat=True))
    assert versions == list(range(2, total + 2))  # one version per change, no gaps
    assert changes.filter(actor="agent", action="todos_update").count() == total
    assert set(changes.values_list("turn_id", flat=True)) == {f"turn-{w}" for w in range(WORKERS)}
