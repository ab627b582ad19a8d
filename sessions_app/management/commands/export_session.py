"""`manage.py export_session SESSION_ID [-o FILE]`: write a session's export document.

The document (`agentops.session-export/1`, see `sessions_app.export`) goes to FILE, or
to standard output; `import_sessions FILE` reads it back.
"""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from sessions_app.export.build import export_text
from sessions_app.models import Session


class Command(BaseCommand):
    help = "Export one session (turns, all events, todos and audit, tool outcomes) as JSON."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("session_id")
        parser.add_argument("-o", "--output", metavar="FILE", help="write here, not stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            session = Session.objects.get(pk=options["session_id"])
        except Session.DoesNotExist:
            raise CommandError(f"no session {options['session_id']!r}", returncode=2) from None
        if options["output"]:
            with Path(options["output"]).open("w", encoding="utf-8") as out:
                out.writelines(export_text(session))
                out.write("\n")
            self.stderr.write(f"{options['output']}: session {session.id}")
        else:
            for piece in export_text(session):
                self.stdout.write(piece, ending="")
            self.stdout.write("")
