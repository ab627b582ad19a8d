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

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from sessions_app.api.keys import create_key
from sessions_app.models import ApiKey, Event, ImportedFile, Session, ToolOutcome, Turn


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


class ApiKeyForm(forms.ModelForm):  # type: ignore[type-arg]
    """Name, scope and mode of a new key; the secret is made on save, never typed."""

    class Meta:
        model = ApiKey
        fields = ("name", "read_only", "app_names")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """API keys of the HTTP API: add one (its key is shown once, in a message), revoke
    (an action). The stored hash and the prefix are read-only; nothing else changes."""

    form = ApiKeyForm
    list_display = ("name", "prefix", "read_only", "app_names", "last_used_at", "revoked_at")
    readonly_fields = ("prefix", "secret_hash", "created_at", "created_by", "last_used_at",
                       "revoked_at")  # fmt: skip
    actions = ("revoke",)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None and super().has_change_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        """Make the key (`create_key`) and show its text once."""
        user = request.user if request.user.is_authenticated else None
        new = create_key(
            obj.name, read_only=obj.read_only, app_names=obj.app_names or [], created_by=user
        )
        obj.pk, obj.prefix = new.row.pk, new.row.prefix
        messages.warning(
            request, f"Key {new.row.name}: {new.key} (store it now; it is not shown again)"
        )

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        """Revoke the selected keys that are active."""
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        messages.success(request, f"Revoked {count} key(s).")
