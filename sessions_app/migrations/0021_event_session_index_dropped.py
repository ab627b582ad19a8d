"""Events lose the index of their session column alone: every event index starts with the
session (`event_session_turn_idx`, `event_session_active_idx`, ...), so it only cost an
insert into one more B-tree per event.

The field is altered in the state only: on SQLite Django's AlterField remakes the table,
which would drop the search and triage triggers on it. The database drops the index (and
PostgreSQL's ``varchar_pattern_ops`` twin) by what introspection finds on the column."""

import django.db.models.deletion
from django.db import migrations, models

TABLE = "sessions_app_event"
#: The name Django gave the index (0001_initial); made again on the way back.
INDEX = "sessions_app_event_session_id_c115b7c5"


def drop_session_indexes(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, TABLE)
    for name, info in constraints.items():
        if (
            info["index"]
            and info["columns"] == ["session_id"]
            and not (info["unique"] or info["primary_key"])
        ):
            schema_editor.execute(f"DROP INDEX {schema_editor.quote_name(name)}")


def make_session_index(apps, schema_editor):
    schema_editor.execute(f'CREATE INDEX "{INDEX}" ON "{TABLE}" ("session_id")')


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0020_otlp_span_indexes"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="event",
                    name="session",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="sessions_app.session",
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(drop_session_indexes, make_session_index)],
        ),
    ]
