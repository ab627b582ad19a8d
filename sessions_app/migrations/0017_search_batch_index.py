"""SQLite: the full-text index's insert trigger does nothing while
`sessions_app_event_fts_deferred` holds a row (the highest event id before a batch), and
deleting that row indexes every event above it with one statement, so a bulk INSERT of
events is indexed once at its end (`sessions_app.search.batch_index`). PostgreSQL:
nothing changes (its GIN index is kept by the database)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

# Migration 0010's document of an event (row alias `{r}`), frozen here.
DOCUMENT = (
    "coalesce({r}.text, '') || ' ' || coalesce({r}.reasoning, '') || ' ' || "
    "coalesce((SELECT group_concat(json_extract(p.value, '$.text'), ' ') "
    "FROM json_each(CASE WHEN json_valid({r}.parts) AND json_type({r}.parts) = 'array' "
    "THEN {r}.parts ELSE '[]' END) p WHERE p.type = 'object'), '')"
    " || ' ' || "
    "coalesce({r}.tool_calls, '') || ' ' || coalesce({r}.tool_response, '')"
)
ROW_TRIGGER = (
    "CREATE TRIGGER sessions_app_event_fts_ai AFTER INSERT ON sessions_app_event {when}"
    "BEGIN INSERT INTO sessions_app_event_fts(rowid, body) VALUES (new.id, "
    + DOCUMENT.format(r="new")
    + "); END"
)
FORWARD = [
    "CREATE TABLE sessions_app_event_fts_deferred (id INTEGER PRIMARY KEY)",
    "DROP TRIGGER sessions_app_event_fts_ai",
    ROW_TRIGGER.format(when="WHEN NOT EXISTS (SELECT 1 FROM sessions_app_event_fts_deferred) "),
    "CREATE TRIGGER sessions_app_event_fts_deferred_ad AFTER DELETE ON "
    "sessions_app_event_fts_deferred BEGIN "
    "INSERT INTO sessions_app_event_fts(rowid, body) SELECT e.id, "
    + DOCUMENT.format(r="e")
    + " FROM sessions_app_event e WHERE e.id > old.id; END",
]
BACKWARD = [
    "DROP TRIGGER sessions_app_event_fts_deferred_ad",
    "DROP TRIGGER sessions_app_event_fts_ai",
    ROW_TRIGGER.format(when=""),
    "DROP TABLE sessions_app_event_fts_deferred",
]


def _run(statements: list[str]) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0016_otlp_span_kind"),
    ]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
