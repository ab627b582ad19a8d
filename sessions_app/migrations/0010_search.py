"""Full-text search over events (sessions_app.search.text) and the model a session used.

SQLite: an FTS5 table `sessions_app_event_fts` (rowid = event id) kept current by
triggers on `sessions_app_event`, so the importer's bulk INSERTs, the store's appends,
updates and deletes (cascades too) all reach it; existing events are indexed here.
PostgreSQL: a GIN expression index over the same fields (`event_search_idx`); the
expression must stay identical to `sessions_app.search.text.PG_VECTOR_SQL`.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

SQLITE_BODY = (
    "coalesce({r}.text, '') || ' ' || coalesce({r}.reasoning, '') || ' ' || "
    "coalesce((SELECT group_concat(json_extract(p.value, '$.text'), ' ') "
    "FROM json_each(CASE WHEN json_valid({r}.parts) AND json_type({r}.parts) = 'array' "
    "THEN {r}.parts ELSE '[]' END) p WHERE p.type = 'object'), '')"
    " || ' ' || "
    "coalesce({r}.tool_calls, '') || ' ' || coalesce({r}.tool_response, '')"
)

SQLITE_FORWARD = [
    "CREATE VIRTUAL TABLE sessions_app_event_fts USING fts5(body, tokenize = 'unicode61')",
    "CREATE TRIGGER sessions_app_event_fts_ai AFTER INSERT ON sessions_app_event BEGIN "
    "INSERT INTO sessions_app_event_fts(rowid, body) VALUES (new.id, "
    + SQLITE_BODY.format(r="new")
    + "); END",
    "CREATE TRIGGER sessions_app_event_fts_ad AFTER DELETE ON sessions_app_event BEGIN "
    "DELETE FROM sessions_app_event_fts WHERE rowid = old.id; END",
    "CREATE TRIGGER sessions_app_event_fts_au AFTER UPDATE OF text, reasoning, parts, "
    "tool_calls, tool_response ON sessions_app_event BEGIN "
    "DELETE FROM sessions_app_event_fts WHERE rowid = old.id; "
    "INSERT INTO sessions_app_event_fts(rowid, body) VALUES (new.id, "
    + SQLITE_BODY.format(r="new")
    + "); END",
    "INSERT INTO sessions_app_event_fts(rowid, body) SELECT e.id, "
    + SQLITE_BODY.format(r="e")
    + " FROM sessions_app_event e",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS sessions_app_event_fts_au",
    "DROP TRIGGER IF EXISTS sessions_app_event_fts_ad",
    "DROP TRIGGER IF EXISTS sessions_app_event_fts_ai",
    "DROP TABLE IF EXISTS sessions_app_event_fts",
]

PG_VECTOR = (
    "to_tsvector('simple'::regconfig, "
    "coalesce(text, '') || ' ' || coalesce(reasoning, '') || ' ' || "
    "coalesce(jsonb_path_query_array(parts, '$[*].text')::text, '') || ' ' || "
    "coalesce(tool_calls::text, '') || ' ' || coalesce(tool_response::text, ''))"
)
PG_FORWARD = [f"CREATE INDEX event_search_idx ON sessions_app_event USING GIN ({PG_VECTOR})"]
PG_BACKWARD = ["DROP INDEX IF EXISTS event_search_idx"]


def _run(statements: list[str], vendor: str) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == vendor:
            for statement in statements:
                schema_editor.execute(statement)

    return run


def forward(apps: Any, schema_editor: Any) -> None:
    _run(SQLITE_FORWARD, "sqlite")(apps, schema_editor)
    _run(PG_FORWARD, "postgresql")(apps, schema_editor)


def backward(apps: Any, schema_editor: Any) -> None:
    _run(SQLITE_BACKWARD, "sqlite")(apps, schema_editor)
    _run(PG_BACKWARD, "postgresql")(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0009_otlp_span"),
    ]

    operations = [
        migrations.RunPython(forward, backward),
        migrations.AddField(
            model_name="session",
            name="model",
            field=models.CharField(blank=True, db_default="", default="", max_length=255),
        ),
        migrations.AddIndex(
            model_name="session",
            # Sessions list filter `?model=`.
            index=models.Index(
                fields=["model", "-updated_at"],
                name="session_model_idx",
                condition=models.Q(("model", ""), _negated=True),
            ),
        ),
    ]
