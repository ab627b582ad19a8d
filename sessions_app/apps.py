from __future__ import annotations

from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Agent sessions"

    def ready(self) -> None:
        """Connect the receivers that close a watcher's websockets when their right to
        watch ends (`sessions_app.live.revocation`)."""
        from sessions_app.live.revocation import connect_receivers

        connect_receivers()
