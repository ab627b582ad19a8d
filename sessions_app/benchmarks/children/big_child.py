"""`bench big`'s child: migrate a scratch database and store one very large session.

Usage: ``python -m sessions_app.benchmarks.children.big_child EVENTS`` with
``DATABASE_URL`` set to a scratch SQLite file. Stores one session of EVENTS events in
completed turns of `EVENTS_PER_TURN` (a prompt, assistant tool calls with their results, a
final answer) with the import writer's `executemany` INSERTs, signs an operator in (a
database session) and prints ``{"session_id", "cookie", "events", "turns", "build_s"}``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import django

SESSION_ID = "bench-big"
#: Events per generated turn: a prompt, 9 (call, result) pairs, a final answer.
EVENTS_PER_TURN = 20
#: Rows per INSERT batch (bounded memory while building).
BATCH = 20_000
BASE = datetime(2026, 1, 1, tzinfo=UTC)
TEXT = "Looking at the **logs** of part {i}: " + "lorem ipsum dolor sit amet " * 6


def _events(session_id: str, turns: int) -> Iterator[tuple[Any, ...]]:
    """Rows of `EVENT_INSERT_COLUMNS` for `turns` turns, in conversation order."""
    for t in range(turns):
        turn_id = f"big-t{t:06d}"
        at = BASE + timedelta(seconds=t)
        yield _row(session_id, turn_id, "user", f"Step {t}: check the logs", at)
        for i in range((EVENTS_PER_TURN - 2) // 2):
            call = f"call-{t}-{i}"
            calls = [{"id": call, "name": "grep", "arguments": {"q": str(i)}}]
            yield _row(session_id, turn_id, "assistant", TEXT.format(i=i), at, tool_calls=calls)
            result = {"tool_call_id": call, "name": "grep", "result": "match " * 30}
            yield _row(session_id, turn_id, "tool", "", at, tool_response=result, call_id=call)
        yield _row(session_id, turn_id, "assistant", f"Done with step {t}.", at)


def _row(
    session_id: str,
    turn_id: str,
    role: str,
    text: str,
    at: datetime,
    *,
    tool_calls: Any = None,
    tool_response: Any = None,
    call_id: str = "",
) -> tuple[Any, ...]:
    # (session, turn, source id, author, role, text, parts, reasoning, tool calls, tool
    # response, tool call id, pending calls, finish reason, usage, state delta, raw,
    # created, updated, deleted, archived): EVENT_INSERT_COLUMNS' order.
    author = {"user": "user", "assistant": "agent", "tool": "tool"}[role]
    return (session_id, turn_id, "", author, role, text, [], "", tool_calls or [],
            tool_response, call_id, [], "", None, {}, None, at, at, None, None)  # fmt: skip


def _batches(rows: Iterator[tuple[Any, ...]]) -> Iterator[list[tuple[Any, ...]]]:
    batch: list[tuple[Any, ...]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def build(events: int) -> dict[str, Any]:
    """Store the session (and its turns); return its figures."""
    from django.db import transaction

    from sessions_app.ingest.writer import insert_rows
    from sessions_app.models import Event, Session, Turn
    from sessions_app.store import EVENT_INSERT_COLUMNS

    started = time.perf_counter()
    turns = max(1, events // EVENTS_PER_TURN)
    with transaction.atomic():
        Session.objects.create(
            id=SESSION_ID, app_name="bench", title="big", created_at=BASE, updated_at=BASE
        )
        Turn.objects.bulk_create(
            [
                Turn(id=f"big-t{t:06d}", session_id=SESSION_ID, status="completed",
                     started_at=BASE + timedelta(seconds=t),
                     finished_at=BASE + timedelta(seconds=t + 1))
                for t in range(turns)
            ],
            batch_size=5000,
        )  # fmt: skip
        for batch in _batches(_events(SESSION_ID, turns)):
            insert_rows(Event, EVENT_INSERT_COLUMNS, batch)
    return {
        "session_id": SESSION_ID,
        "events": turns * EVENTS_PER_TURN,
        "turns": turns,
        "build_s": round(time.perf_counter() - started, 1),
    }


def sign_in() -> str:
    """A signed-in operator's session key (a database session, as a sign-in makes)."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import Group, User
    from django.contrib.sessions.backends.db import SessionStore

    user = User.objects.create_user("bench-operator")
    user.groups.add(Group.objects.get(name="operators"))
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.create()
    return f"{settings.SESSION_COOKIE_NAME}={store.session_key}"


def main(argv: Sequence[str] | None = None) -> None:
    """Migrate, build, sign in; print the figures as one JSON line. argv: ``[EVENTS]``."""
    (events,) = sys.argv[1:] if argv is None else argv
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    figures = build(int(events))
    figures["cookie"] = sign_in()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
