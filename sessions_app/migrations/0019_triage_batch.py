"""SQLite: the triage tally's event insert trigger (`triage_event_ai`, migration
``0013_triage_tally``) does nothing while the batch marker
`sessions_app_event_fts_deferred` holds a row (the highest event id before a bulk INSERT,
`sessions_app.search.batch_index`), and deleting that row counts the tool uses of every
event above it with two statements, as the full-text index is filled since ``0017``.
A per-row trigger ran three json_each passes and up to two upserts per event with tool
calls; the batch reads each event's tool calls once.

Same counts as the per-row trigger: a (session, turn, tool) counts each event calling the
tool (`TurnToolUse.events`), and a tallied (failed or interrupted) turn of that session
counts the tool once, when its first use appears (no `TurnToolUse` row before). The
tally is taken before the uses are added, so "first" means absent before the batch.
PostgreSQL: nothing changes (its per-row PL/pgSQL trigger stays).
"""

from __future__ import annotations

import importlib
from typing import Any

from django.db import migrations

# Migration 0013's SQL (frozen there: a migration never changes).
TALLY = importlib.import_module("sessions_app.migrations.0013_triage_tally")
E, T, S, U, Y = TALLY.E, TALLY.T, TALLY.S, TALLY.U, TALLY.Y
MARKER = "sessions_app_event_fts_deferred"

ADDED = "sessions_app_event_triage_added"
"""The id of an event inserted alone while it is counted (the per-row path)."""

ROW_TRIGGER = (
    f"CREATE TRIGGER triage_event_ai AFTER INSERT ON {E} WHEN {TALLY._sqlite_active('new')} "
    "{when}"
    "BEGIN {body} END"
)
TOOL = (
    "CASE WHEN c.type = 'object' THEN (CASE WHEN json_type(c.value, '$.name') = 'text' "
    "THEN substr(json_extract(c.value, '$.name'), 1, 200) END) END"
)
CALLS = (
    "json_each(CASE WHEN json_valid(e.tool_calls) AND json_type(e.tool_calls) = 'array' "
    "THEN e.tool_calls ELSE '[]' END) c"
)


def _uses(events: str, tallied: bool) -> str:
    """Each (session, turn, tool) of the active events `events` (a condition on `e.id`)
    calls, with the number of those events (`events`); only those of tallied turns when
    `tallied`. NOT INDEXED: the events are read by their ids (the rowid); without it the
    planner scans the whole table through event_session_turn_idx for the GROUP BY order
    (40+ us per event at 100k events). CROSS JOIN: the events first, then their turn."""
    turn = (
        f" CROSS JOIN {T} t ON t.id = e.turn_id AND t.session_id = e.session_id "
        f"AND t.status IN {TALLY.TALLIED}"
        if tallied
        else ""
    )
    return (
        "SELECT session_id, turn_id, tool, count(DISTINCT id) AS events FROM ("
        f"SELECT e.id, e.session_id, e.turn_id, {TOOL} AS tool FROM {E} e NOT INDEXED{turn}, "
        f"{CALLS} WHERE {events} AND {TALLY._sqlite_active('e')}) "
        "WHERE tool IS NOT NULL AND tool <> '' GROUP BY 1, 2, 3"
    )


def _count(events: str) -> str:
    """Count the tool uses of `events` (a condition on `e.id`), as migration 0013's
    per-row trigger counts one event's."""
    return (
        # A tallied turn counts a tool once: when its first use comes (no row before).
        f"INSERT INTO {Y} ({TALLY.KEY}, n) SELECT t.status, t.reason, t.failure_code, "
        "t.failure_stage, coalesce(s.app_name, ''), date(t.started_at), b.tool, count(*) "
        f"FROM ({_uses(events, tallied=True)}) b "
        f"JOIN {T} t ON t.id = b.turn_id AND t.session_id = b.session_id "
        f"LEFT JOIN {S} s ON s.id = t.session_id WHERE NOT EXISTS (SELECT 1 FROM {U} u "
        "WHERE u.session_id = b.session_id AND u.turn_id = b.turn_id AND u.tool = b.tool) "
        f"GROUP BY 1, 2, 3, 4, 5, 6, 7 {TALLY.UPSERT}; "
        f"INSERT INTO {U} (session_id, turn_id, tool, events) "
        f"SELECT session_id, turn_id, tool, events FROM ({_uses(events, tallied=False)}) "
        "WHERE true "
        "ON CONFLICT(session_id, turn_id, tool) DO UPDATE SET events = events + excluded.events;"
    )


FORWARD = [
    f"CREATE TABLE {ADDED} (id INTEGER PRIMARY KEY)",
    "DROP TRIGGER triage_event_ai",
    # While no batch is under way: the new event's id, and that row counts it. A trigger
    # costs every row it is called for in proportion to its body, even when its WHEN is
    # false (SQLite sets up the whole subprogram), so the long body lives on ADDED's trigger.
    ROW_TRIGGER.format(
        when=f"AND NOT EXISTS (SELECT 1 FROM {MARKER}) ",
        body=f"INSERT INTO {ADDED} (id) VALUES (new.id);",
    ),
    f"CREATE TRIGGER triage_event_added_ai AFTER INSERT ON {ADDED} BEGIN "
    f"{_count('e.id = new.id')} DELETE FROM {ADDED} WHERE id = new.id; END",
    # The end of a batch: every event above the marker's id.
    f"CREATE TRIGGER triage_event_deferred_ad AFTER DELETE ON {MARKER} BEGIN "
    f"{_count('e.id > old.id')} END",
]
BACKWARD = [
    "DROP TRIGGER triage_event_deferred_ad",
    "DROP TRIGGER triage_event_added_ai",
    "DROP TRIGGER triage_event_ai",
    ROW_TRIGGER.format(when="", body=TALLY._sqlite_event_add("new")),
    f"DROP TABLE {ADDED}",
]


def _run(statements: list[str]) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0018_otlp_source_label"),
    ]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
