"""`manage.py export_schema [--write | --check]`: the export format's JSON Schema.

Generated from the models in `sessions_app.export.format`. Without options it prints the
schema; `--write` rewrites `docs/session-export.schema.json`; `--check` exits with code 1
when that file differs from what the models generate.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from sessions_app.export.schema import SCHEMA_PATH, export_schema_text


class Command(BaseCommand):
    help = "Print, write (--write) or check (--check) docs/session-export.schema.json."

    def add_arguments(self, parser: ArgumentParser) -> None:
        action = parser.add_mutually_exclusive_group()
        action.add_argument("--write", action="store_true", help=f"rewrite {SCHEMA_PATH}")
        action.add_argument(
            "--check", action="store_true", help=f"fail when {SCHEMA_PATH} is out of date"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        text = export_schema_text()
        if options["write"]:
            SCHEMA_PATH.write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote {SCHEMA_PATH}")
        elif options["check"]:
            if SCHEMA_PATH.read_text(encoding="utf-8") != text:
                raise CommandError(
                    f"{SCHEMA_PATH} is out of date; run: python manage.py export_schema --write"
                )
            self.stdout.write(f"{SCHEMA_PATH} is up to date")
        else:
            self.stdout.write(text, ending="")
