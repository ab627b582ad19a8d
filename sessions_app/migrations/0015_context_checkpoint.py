from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0014_api_otlp_sources"),
    ]

    operations = [
        # Nullable, no default: SQLite adds it in place (no rebuild of the session table).
        migrations.AddField(
            model_name="session",
            name="context_checkpoint",
            field=models.JSONField(blank=True, null=True),
        ),
    ]
