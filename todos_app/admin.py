"""Todo lists in Django admin, edited through `todos_app.services` (one code path).

A list is edited with its items inline; saving never writes the rows directly: the kept
items (in the order of their "Position" values, ties by form order) replace the list via
`edits.replace_items`, with the version the form was built from, so a concurrent
change is refused (nothing saved, an error message shown) and each save is versioned and
audited (actor "person", action "admin"). Lists are created by agents or the dashboard,
and kept with their audit, so admin neither adds nor deletes them. The audit is
read-only.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from agentops.runtime.todos import TodoItem as RuntimeTodoItem
from agentops.runtime.todos import TodoToolError
from todos_app import edits, services
from todos_app.models import TodoChange, TodoItem, TodoList


class TodoItemForm(forms.ModelForm):  # type: ignore[type-arg]
    """An item row; `position` is a plain number here (the service renumbers 0..n-1)."""

    position = forms.IntegerField(min_value=0, required=False)

    class Meta:
        model = TodoItem
        fields = ("content", "status", "active_form")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.fields["position"].initial = self.instance.position

    def validate_unique(self) -> None:
        """Positions are renumbered by the service; no per-row uniqueness check."""


class TodoItemFormSet(BaseInlineFormSet):  # type: ignore[type-arg]
    def validate_unique(self) -> None:
        """Positions may repeat while reordering; the service renumbers them."""


class TodoItemInline(admin.TabularInline):  # type: ignore[type-arg]
    model = TodoItem
    form = TodoItemForm
    formset = TodoItemFormSet
    fields = ("position", "content", "status", "active_form")
    extra = 1


class TodoListForm(forms.ModelForm):  # type: ignore[type-arg]
    """The list header: only the version the edit started from (hidden)."""

    expected_version = forms.IntegerField(widget=forms.HiddenInput, min_value=0)

    class Meta:
        model = TodoList
        fields: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["expected_version"].initial = self.instance.version


@admin.register(TodoList)
class TodoListAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    form = TodoListForm
    inlines = [TodoItemInline]
    list_display = ("session", "version", "updated_at")
    search_fields = ("session__id", "session__title")
    readonly_fields = ("session", "version", "updated_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: TodoList | None = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: TodoList, form: Any, change: bool) -> None:
        """Nothing to save on the header; the items are saved in `save_related`."""

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """Replace the list with the kept inline rows through the service (versioned,
        audited); a version conflict or bad row is reported and nothing is saved."""
        rows: list[tuple[int, int, RuntimeTodoItem]] = []
        for formset in formsets:
            for order, item_form in enumerate(formset.forms):
                data = getattr(item_form, "cleaned_data", None)
                if not data or data.get("DELETE"):
                    continue  # an untouched extra row, or a row marked for deletion
                position = data.get("position")
                rows.append(
                    (
                        order if position is None else position,
                        order,
                        RuntimeTodoItem(
                            content=data.get("content", ""),
                            status=data.get("status") or TodoItem.Status.PENDING,
                            active_form=data.get("active_form", ""),
                        ),
                    )
                )
        items = [item for _position, _order, item in sorted(rows, key=lambda row: row[:2])]
        try:
            edits.replace_items(
                form.instance.session_id,
                items,
                user=request.user,
                expected_version=form.cleaned_data["expected_version"],
            )
        except services.TodoConflictError as conflict:
            self._refuse(request, f"Not saved: {conflict}. This is the current list.")
        except TodoToolError as error:
            self._refuse(request, f"Not saved: {error}")

    def construct_change_message(
        self, request: HttpRequest, form: Any, formsets: Any, add: bool = False
    ) -> list[dict[str, Any]]:
        """The admin log entry; the audit (`TodoChange`) has the details."""
        return [{"changed": {"fields": ["items"]}}]

    def _refuse(self, request: HttpRequest, message: str) -> None:
        self.message_user(request, message, messages.ERROR)
        request.todo_refused = True  # type: ignore[attr-defined]

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        """No admin log entry for a refused save."""
        if getattr(request, "todo_refused", False):
            return None
        return super().log_change(request, obj, message)

    def response_change(self, request: HttpRequest, obj: TodoList) -> HttpResponse:
        """Back to the (reloaded, current) form when the service refused the save."""
        if getattr(request, "todo_refused", False):
            return HttpResponseRedirect(request.path)
        return super().response_change(request, obj)


@admin.register(TodoChange)
class TodoChangeAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("todo_list", "version", "actor", "user", "action", "turn_id", "created_at")
    list_filter = ("actor", "action")
    search_fields = ("todo_list__session__id", "turn_id")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: TodoChange | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: TodoChange | None = None) -> bool:
        return False
