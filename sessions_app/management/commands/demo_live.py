"""`manage.py demo_live [--session ID] [--turns N]`: keep a demo session's turn running."""

from __future__ import annotations

import asyncio
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from sessions_app.live.demo_live import DEMO_LIVE_ID, keep_demo_live


class Command(BaseCommand):
    help = (
        "Run slowly streaming demo turns in one session, back to back (Ctrl-C to stop). "
        "Watchers on other processes see them live with the Redis channel layer."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--session", default=DEMO_LIVE_ID, help="session id (created if missing)"
        )
        parser.add_argument("--turns", type=int, default=None, help="stop after N turns")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            asyncio.run(keep_demo_live(options["session"], turns=options["turns"]))
        except KeyboardInterrupt:
            self.stdout.write("stopped")
