"""`manage.py load_demo`: (re)load the project's own demo sessions (sessions_app.demo)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from sessions_app.demo import load_demo


class Command(BaseCommand):
    help = "Load the demo sessions; re-running replaces them (source_format demo)."

    def handle(self, *args: Any, **options: Any) -> None:
        for parsed in load_demo():
            stats = parsed.stats()
            self.stdout.write(
                f"{parsed.id}: {stats['turns']} turns, {stats['events']} events, "
                f"{stats['tool_calls']} tool calls, {stats['todo_items']} todo items"
            )
