"""`python manage.py ensure_local_admin`: create the first admin account if none exists."""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand
from django.db import transaction

from sessions_app.roles import ADMINS


class Command(BaseCommand):
    help = (
        "Create a local superuser (default name 'admin') in the admins group with a generated "
        "password, and print the password, when no superuser exists yet. Does nothing otherwise."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--username", default="admin")

    @transaction.atomic
    def handle(self, *args: Any, username: str, **options: Any) -> None:
        if User.objects.filter(is_superuser=True).exists():
            self.stdout.write("A superuser already exists; no account created.")
            return
        password = secrets.token_urlsafe(12)
        user = User.objects.create_superuser(username=username, password=password, email="")
        user.groups.add(Group.objects.get(name=ADMINS))
        self.stdout.write(
            self.style.SUCCESS(
                f"Created local admin '{username}' with password: {password}\n"
                f"(change it with: .venv/bin/python manage.py changepassword {username})"
            )
        )
