"""SQLite: the full-text index's insert trigger does nothing while
`sessions_app_event_fts_deferred` holds a row, so a bulk INSERT of events can index
them with one statement instead (`sessions_app.search.batch_index`). PostgreSQL: nothing
changes (its GIN index is kept by the database)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

# Frozen copy of migration 0010's document (`batch_index.SQLITE_DOCUMENT_SQL`).
BODY = (
    "coalesce(new.text, '') || ' ' || coalesce(new.reasoning, '') || ' ' || "
    "coalesce((SELECT group_concat(json_extract(p.value, '$.text'), ' ') "
    "FROM json_each(CASE WHEN json_valid(new.parts) AND json_type(new.parts) = 'array' "
    "THEN new.parts ELSE '[]' END) p WHERE p.type = 'object'), '')"
    " || ' ' || "
    "coalesce(new.tool_calls, '') || ' ' || coalesce(new.tool_response, '')"
)
TRIGGER = (
    "CREATE TRIGGER sessions_app_event_fts_ai AFTER INSERT ON sessions_app_event {when}"
    "BEGIN INSERT INTO sessions_app_event_fts(rowid, body) VALUES (new.id, " + BODY + "); END"
)
FORWARD = [
    "CREATE TABLE sessions_app_event_fts_deferred (id INTEGER PRIMARY KEY)",
    "DROP TRIGGER sessions_app_event_fts_ai",
    TRIGGER.format(when="WHEN NOT EXISTS (SELECT 1 FROM sessions_app_event_fts_deferred) "),
]
BACKWARD = [
    "DROP TRIGGER sessions_app_event_fts_ai",
    TRIGGER.format(when=""),
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
        ("sessions_app", "0015_context_checkpoint"),
    ]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
