"""`manage.py api_lease_sweep`: record the turns of expired run leases abandoned.

Leases also expire on their own when anyone touches the session, and by a timer in the
server process that granted them (docs/interfaces.md, run leases); this sweep covers a
server that was restarted meanwhile (run it from cron, e.g. every minute).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from sessions_app.api.lease import sweep_expired_leases


class Command(BaseCommand):
    help = "Record the running turns of expired run leases interrupted/abandoned."

    def handle(self, *args: Any, **options: Any) -> None:
        count = sweep_expired_leases()
        self.stdout.write(f"{count} turn(s) recorded abandoned")
