from __future__ import annotations

from django.apps import AppConfig


class TodosAppConfig(AppConfig):
    name = "todos_app"
    verbose_name = "Todo lists"
