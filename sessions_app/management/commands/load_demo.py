"""`manage.py load_demo`: (re)load the project's own demo sessions (sessions_app.demo)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from sessions_app.demo import load_demo
from sessions_app.models import Session


class Command(BaseCommand):
    help = (
        "Load the demo sessions; re-running replaces them (source_format demo). "
        "--if-missing loads them only into a database that has no demo session yet."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--if-missing",
            action="store_true",
            help="do nothing when demo sessions exist (keeps edits made to them)",
        )

    def handle(self, *args: Any, if_missing: bool = False, **options: Any) -> None:
        demo = Session.objects.filter(source_format=Session.SourceFormat.DEMO)
        if if_missing and demo.exists():
            self.stdout.write(
                f"{demo.count()} demo sessions already loaded; kept as they are "
                "(run `manage.py load_demo` to reload them)."
            )
            return
        for parsed in load_demo():
            stats = parsed.stats()
            self.stdout.write(
                f"{parsed.id}: {stats['turns']} turns, {stats['events']} events, "
                f"{stats['tool_calls']} tool calls, {stats['todo_items']} todo items"
            )
