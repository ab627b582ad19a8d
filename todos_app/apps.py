from __future__ import annotations

from django.apps import AppConfig


class TodosAppConfig(AppConfig):
    name = "todos_app"
    verbose_name = "Todo lists"

    def ready(self) -> None:
        """Connect the receivers that keep a session's todo list (`todos_app.receivers`
        on `sessions_app.signals`): sessions_app itself imports nothing from this app."""
        from todos_app import receivers  # noqa: F401  (importing connects them)
