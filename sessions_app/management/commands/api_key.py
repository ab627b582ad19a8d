"""`manage.py api_key create NAME [--read-only] [--app APP ...]`, `api_key list`,
`api_key revoke PREFIX|NAME`: the HTTP API's keys (docs/interfaces.md, "HTTP API").

`create` prints the new key once, on its last line; only its SHA-256 is stored.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from sessions_app.api import ApiKey
from sessions_app.api.keys import create_key, revoke_key


class Command(BaseCommand):
    help = "Create, list and revoke API keys of the HTTP API."

    def add_arguments(self, parser: ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="make a key; prints it once")
        create.add_argument("name")
        create.add_argument("--read-only", action="store_true", help="the key may only read")
        create.add_argument(
            "--app", action="append", default=[], dest="apps",
            help="limit the key to this app name (repeat for several; default: every app)",
        )  # fmt: skip
        actions.add_parser("list", help="list keys (prefix, name, scope, last use)")
        revoke = actions.add_parser("revoke", help="revoke a key by prefix or name")
        revoke.add_argument("key", metavar="PREFIX|NAME")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            try:
                new = create_key(
                    options["name"], read_only=options["read_only"], app_names=options["apps"]
                )
            except ValueError as refused:
                raise CommandError(str(refused)) from None
            scope = ", ".join(new.row.app_names) or "every app"
            mode = "read-only" if new.row.read_only else "read-write"
            self.stdout.write(f"key {new.row.name} ({new.row.prefix}): {mode}, {scope}")
            self.stdout.write("Store it now; it is not shown again:")
            self.stdout.write(new.key)
        elif action == "list":
            for row in ApiKey.objects.order_by("name"):
                state = "revoked" if row.revoked_at else "active"
                used = row.last_used_at.isoformat() if row.last_used_at else "never used"
                scope = ",".join(row.app_names) or "*"
                mode = "ro" if row.read_only else "rw"
                self.stdout.write(
                    f"{row.prefix}  {row.name}  {mode}  apps={scope}  {state}  {used}"
                )
        else:
            try:
                row = revoke_key(options["key"])
            except LookupError as missing:
                raise CommandError(str(missing)) from None
            self.stdout.write(f"revoked {row.name} ({row.prefix})")
