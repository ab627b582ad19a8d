"""The resume status and page facts of the sessions one OTLP request changed.

`refresh_resume_statuses` is `store.resume.refresh_resume_status` of many sessions at
once, with the same result (the full recomputation: `tests/otlp` compare it), but without
reading back what the request just wrote: `landing.land` knows every active event of each
turn it wrote (`watched` values, ids set) and the rows of those turns, so only the other
turns of a session that existed before the request, and their events, are read. A session
the request created holds nothing else: no query reads it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any, cast

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field
from django.db.models.sql.subqueries import UpdateQuery

from sessions_app import models
from sessions_app.projector import load_outcomes
from sessions_app.store.page_facts import (
    new_context_generation,
    refresh_page_facts_of,
    row_page_facts,
)
from sessions_app.store.resume import orphan_count, protocol_events, resume_status
from sessions_app.store.resume_delta import GROUP_COLUMNS
from sessions_app.store.rows import turn_from_row

__all__ = ["refresh_resume_statuses"]


def _facts(values: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(values[name] for name in GROUP_COLUMNS)


def refresh_resume_statuses(
    session_ids: Collection[str],
    created: Collection[str],
    written: Mapping[str, tuple[str, Sequence[Mapping[str, Any]]]],
    turn_rows: Mapping[str, models.Turn],
    now: datetime,
) -> None:
    """Store the resume status, orphan count and page facts of `session_ids`, and
    `now` as their `updated_at`.

    `created`: those of them the request created; `written`: {turn id: (session id, its
    active events in id order as `watched` values)} of every turn the request wrote;
    `turn_rows`: those turns' rows as written. Reads the other turns and active events of
    the sessions not `created` (two queries, none when all are), which of them have
    recorded tool outcomes (one; read per such session: rare), the page facts' marks
    (`refresh_page_facts_of`), and one UPDATE statement run for each row (`_update_rows`)."""
    ids = sorted(session_ids)
    known = set(written)
    if any(values["id"] is None for _s, timeline in written.values() for values in timeline):
        created, known = (), set()  # an event whose id is unknown: read everything back
    older = [session_id for session_id in ids if session_id not in created]
    turns: dict[str, list[Any]] = defaultdict(list)
    facts: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    rows: list[models.Turn] = [turn_rows[turn_id] for turn_id in known]
    if older:
        rows += models.Turn.objects.filter(session_id__in=older).exclude(pk__in=known)
        events = models.Event.objects.active().filter(session_id__in=older)
        for session_id, *fact in (
            events.exclude(turn_id__in=known).values_list("session_id", *GROUP_COLUMNS)
            if known
            else events.values_list("session_id", *GROUP_COLUMNS)
        ):
            facts[session_id].append(tuple(fact))
    for row in sorted(rows, key=lambda row: (row.started_at, row.id)):
        turns[row.session_id].append(turn_from_row(row))
    for turn_id in known:
        session_id, timeline = written[turn_id]
        facts[session_id] += map(_facts, timeline)
    with_outcomes = (
        set(
            models.ToolOutcome.objects.filter(session_id__in=older).values_list(
                "session_id", flat=True
            )
        )
        if older
        else set()
    )
    rows_facts: list[tuple[str, int, bool, int]] = []
    every: dict[str, Sequence[Any]] = {}
    for session_id in ids:
        ordered = sorted(facts.get(session_id, []), key=lambda fact: fact[0])
        stored = every[session_id] = protocol_events(session_id, ordered)
        outcomes = load_outcomes(session_id) if session_id in with_outcomes else {}
        issues, cannot_resume = resume_status(turns.get(session_id, []), stored, outcomes)
        rows_facts.append((session_id, issues, cannot_resume, orphan_count(stored)))
    # The kept page facts too (tool-protocol marks, token totals, legacy flag): a turn
    # rebuilt from its spans replaced its events. Set in the same UPDATE of the rows.
    refresh_page_facts_of(every, created)
    _update_rows(rows_facts, now)


#: The columns `_update_rows` sets from values, in the order its statement names them.
_GIVEN = ("protocol_issue_count", "cannot_resume", "orphan_result_count",
          "context_checkpoint", "updated_at")  # fmt: skip
_SOME_ID = "\x00session"


@cache
def _row_update(alias: str) -> tuple[str, tuple[Any, ...]]:
    """The UPDATE of one session row, compiled once for database `alias`: the `_GIVEN`
    columns from values, then the token totals and legacy flag from the row's events
    (`row_page_facts`); its SQL and the parameters between the given values and the id
    (Django compiles the SET list in order, then the WHERE)."""
    given: dict[str, Any] = {
        "protocol_issue_count": 0, "cannot_resume": False, "orphan_result_count": 0,
        "context_checkpoint": {}, "updated_at": datetime.now(UTC),
    }  # fmt: skip
    query = cast(UpdateQuery, models.Session.objects.filter(pk=_SOME_ID).query.chain(UpdateQuery))
    query.add_update_values({**{name: given[name] for name in _GIVEN}, **row_page_facts()})
    sql, params = query.get_compiler(alias).as_sql()
    if params[-1] != _SOME_ID:  # pragma: no cover - a Django that compiles otherwise
        raise RuntimeError("the session UPDATE's last parameter is not the row's id")
    return sql, tuple(params[len(_GIVEN) : -1])


def _update_rows(rows: Sequence[tuple[str, int, bool, int]], now: datetime) -> None:
    """Store each (session id, protocol issues, cannot resume, orphan results) with `now`
    as `updated_at` and a new context generation, and its page facts: one statement,
    compiled once (`_row_update`), run for every row."""
    connection = connections[router.db_for_write(models.Session)]
    sql, facts = _row_update(connection.alias)
    at = _prepared("updated_at", now, connection)
    params = []
    for session_id, issues, cannot_resume, orphans in rows:
        checkpoint = _prepared("context_checkpoint", new_context_generation(), connection)
        params.append((issues, cannot_resume, orphans, checkpoint, at, *facts, session_id))
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


def _prepared(name: str, value: Any, connection: BaseDatabaseWrapper) -> Any:
    """`value` as a parameter of session column `name` on `connection`."""
    return cast("Field[Any, Any]", models.Session._meta.get_field(name)).get_db_prep_save(
        value, connection
    )
