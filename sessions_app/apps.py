from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Agent sessions"

    def ready(self) -> None:
        from sessions_app.roles import ensure_role_groups

        # After every migrate (and test-database flush): the role groups exist.
        post_migrate.connect(ensure_role_groups, dispatch_uid="agentops-role-groups")
