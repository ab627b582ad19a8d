"""Sessions, turns, events, tool outcomes and imported files in Django admin, read-only.

Stored history is never rewritten (docs/runtime.md §1-2): events and turns change only through
the runtime's store, tool outcomes only through `sessions_app.outcomes` (which checks the
call and refreshes the session's resume status), sessions only through the runtime and
the importers. So admin shows them and refuses to add, change or delete any, superusers
included. Lists show columns of the row itself (`session_id`, not the session), so a page
of a big table costs no join per foreign key; counts of filtered lists are not run over
the whole table.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from sessions_app.models import Event, ImportedFile, Session, ToolOutcome, Turn


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Viewing only: no add, change or delete permission for anyone."""

    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Session)
class SessionAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "title",
        "app_name",
        "user_id",
        "source_format",
        "updated_at",
        "protocol_issue_count",
        "cannot_resume",
    )
    list_filter = ("source_format", "cannot_resume")
    search_fields = ("=id", "title", "app_name", "=user_id")


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "session_id",
        "status",
        "reason",
        "failure_code",
        "failure_stage",
        "started_at",
        "finished_at",
    )
    list_filter = ("status", "reason", "failure_stage")
    search_fields = ("=id", "=session__id", "=failure_code")
    raw_id_fields = ("session",)


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "session_id",
        "turn_id",
        "role",
        "author",
        "finish_reason",
        "created_at",
        "deleted_at",
        "archived_at",
    )
    list_filter = ("role", "finish_reason")
    search_fields = ("=session__id", "=turn_id", "=tool_call_id")
    raw_id_fields = ("session",)


@admin.register(ToolOutcome)
class ToolOutcomeAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "session_id",
        "event_id",
        "call_id",
        "tool_name",
        "outcome",
        "recorded_by",
        "recorded_at",
    )
    list_filter = ("outcome",)
    search_fields = ("=session__id", "=call_id", "tool_name")
    raw_id_fields = ("session", "event", "recorded_by")


@admin.register(ImportedFile)
class ImportedFileAdmin(ReadOnlyAdmin):
    list_display = ("path", "source_format", "imported_at", "sha256")
    list_filter = ("source_format",)
    search_fields = ("path", "=sha256")
