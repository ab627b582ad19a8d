"""The page facts kept as events are written (`sessions_app.store.page_facts`) equal the
full recomputation, after every write path, on every corpus file and demo session:

- the protocol page's cheap read (`kept_protocol_pass`: only the flagged events) finds
  what the runtime's inspector finds streaming over the whole live history
  (`store.stream.live_protocol_pass`);
- the session's token totals equal the sums over its active events.

And the protocol page's query count does not grow with the session.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db.models import Sum
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings

from agentops.runtime.model import Event, Usage
from agentops.runtime.session import Turn, TurnReason, TurnStatus
from sessions_app import models
from sessions_app.demo import load_demo
from sessions_app.ingest import import_file
from sessions_app.search.numbers import token_expressions
from sessions_app.store import DjangoSessionService
from sessions_app.store.page_facts import kept_protocol_pass
from sessions_app.store.stream import live_protocol_pass
from tests.test_resume_status import EXAMPLES, OPERATIONS, OUTCOMES, T0, content_of

pytestmark = pytest.mark.django_db

_ids = count()


def _recomputed(session_id: str) -> dict[str, Any]:
    found, compacted = live_protocol_pass(session_id)
    sums = (
        models.Event.objects.active()
        .filter(session_id=session_id, usage__isnull=False)
        .aggregate(**{name: Sum(expr) for name, expr in token_expressions().items()})
    )
    return {
        "issues": [(i.event_id, i.turn_id, i.tool_calls) for i in found.issues],
        "orphans": [
            (o.event_id, o.turn_id, o.call_id, found.orphan_events[o.position])
            for o in found.orphans
        ],
        "compacted": compacted,
        "tokens": tuple(int(sums[name] or 0) for name in ("input", "output", "cached")),
        "legacy": _legacy_query(session_id),
    }


def _kept(session_id: str) -> dict[str, Any]:
    kept = kept_protocol_pass(session_id)
    row = models.Session.objects.get(pk=session_id)
    return {
        "issues": [(i.event_id, i.turn_id, i.tool_calls) for i in kept.issues],
        "orphans": [(o.event_id, o.turn_id, o.call_id, event) for o, event in kept.orphans],
        "compacted": kept.compacted,
        "tokens": (row.tokens_input, row.tokens_output, row.tokens_cached),
        "legacy": row.has_legacy_events,
    }


def test_kept_facts_equal_the_recomputation_on_every_corpus_file(corpus: Path) -> None:
    seen = []
    for path in sorted(corpus.rglob("*.json*")):
        report = import_file(path)
        assert report.status == "imported", path
        for session_id in report.session_ids:
            kept = _kept(session_id)
            assert kept == _recomputed(session_id), (path, session_id)
            seen.append(kept)
    # The comparison means something: issues and tokens occur (orphans and compactions
    # do not in the corpus: the generated histories below have orphans).
    assert seen
    assert any(kept["issues"] for kept in seen)
    assert any(kept["tokens"][0] for kept in seen)
    assert any(kept["tokens"][2] for kept in seen)


def test_kept_facts_equal_the_recomputation_on_every_demo_session() -> None:
    sessions = load_demo()
    kept = [_kept(parsed.id) for parsed in sessions]
    assert kept == [_recomputed(parsed.id) for parsed in sessions]
    assert any(k["issues"] for k in kept)


@pytest.mark.django_db
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations=OPERATIONS)
def test_runtime_appends_keep_the_facts(operations: list[tuple[str, str, int, list[str]]]) -> None:
    """The runtime's append path (and finishes, interrupts, deletes) on generated
    histories, with usage on some events."""
    service = DjangoSessionService()
    sid = async_to_sync(service.create_session)("app", session_id=f"facts-{next(_ids)}").id
    turns: list[str] = []
    for operations_ in [operations, *EXAMPLES[:1]]:
        for step, (op, kind, pick, calls) in enumerate(operations_):
            if op == "begin":
                turn = Turn(
                    id=f"{sid}-t{len(turns)}-{step}",
                    session_id=sid,
                    started_at=T0 + timedelta(seconds=len(turns)),
                )
                async_to_sync(service.begin_turn)(sid, turn)
                turns.append(turn.id)
            elif op == "append":
                turn_id = "" if pick < 0 or not turns else turns[-1 - pick % len(turns)]
                usage = Usage(prompt_tokens=step, completion_tokens=1) if step % 2 else None
                event = Event(
                    session_id=sid, turn_id=turn_id, content=content_of(kind, calls), usage=usage
                )
                stored = async_to_sync(service.append_event)(event)
                if kind == "text" and pick == 2:
                    async_to_sync(service.delete_event)(sid, stored.id)
            elif op == "finish" and turns:
                turn_id = turns[-1 - pick % len(turns)]
                if models.Turn.objects.get(pk=turn_id).status == TurnStatus.RUNNING:
                    async_to_sync(service.finalize_turn)(turn_id, OUTCOMES[kind])
            elif op == "interrupt":
                async_to_sync(service.interrupt_running_turns)(sid, TurnReason.ABANDONED)
            assert _kept(sid) == _recomputed(sid), (step, op, kind)


def _protocol_queries(
    client: Client, session_id: str, django_assert_num_queries: Any, expected: int
) -> str:
    url = reverse("sessions:protocol", args=[session_id])
    with django_assert_num_queries(expected):
        response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_protocol_page_queries_do_not_grow_with_the_session(
    operator_client: Client, django_assert_num_queries: Any
) -> None:
    """Nine queries (session, user, groups, live start, flagged events, their turns,
    outcomes...): the same count for 3 and 300 tool-call groups with one issue each."""
    service = DjangoSessionService()
    for size in (3, 300):
        sid = async_to_sync(service.create_session)("app", session_id=f"big-{size}").id
        turn = Turn(id=f"{sid}-t", session_id=sid, started_at=T0)
        async_to_sync(service.begin_turn)(sid, turn)
        for _ in range(size):
            for kind in ("user", "calls", "tool"):
                event = Event(session_id=sid, turn_id=turn.id, content=content_of(kind, ["a"]))
                async_to_sync(service.append_event)(event)
        # One unanswered call at the end.
        event = Event(session_id=sid, turn_id=turn.id, content=content_of("calls", ["b"]))
        async_to_sync(service.append_event)(event)
        body = _protocol_queries(operator_client, sid, django_assert_num_queries, 9)
        assert body.count('<article class="card issue">') == 1


def _legacy_query(session_id: str) -> bool:
    session = models.Session.objects.get(pk=session_id)
    return (
        models.Event.objects.active()
        .filter(session=session)
        .exclude(turn_id__in=session.turns.values("id"))
        .exists()
    )


def test_the_legacy_flag_follows_appends_and_new_turn_records() -> None:
    """`Session.has_legacy_events` (the session page's "events without a turn") equals
    the full query after each runtime write."""
    service = DjangoSessionService()
    sid = async_to_sync(service.create_session)("app", session_id="legacy").id
    seen = []

    def append(turn_id: str) -> None:
        event = Event(session_id=sid, turn_id=turn_id, content=content_of("user", ["a"]))
        async_to_sync(service.append_event)(event)

    def begin(turn_id: str) -> None:
        async_to_sync(service.begin_turn)(sid, Turn(id=turn_id, session_id=sid, started_at=T0))

    steps: list[tuple[Callable[[str], None], str]] = [
        (begin, "t-1"),
        (append, "t-1"),
        (append, "t-later"),  # no record yet
        (begin, "t-later"),  # now it has one
        (append, ""),  # no turn at all
        (begin, "t-2"),
    ]
    for step, turn_id in steps:
        step(turn_id)
        flag = models.Session.objects.get(pk=sid).has_legacy_events
        assert flag == _legacy_query(sid)
        seen.append(flag)
    assert seen == [False, False, True, False, True, True]
