"""The todo list a session's agent keeps (docs/runtime.md §7).

These rows are the one source of truth for a session's list; the session-state key
`todos` is served from them (never stored twice). `TodoList.version` grows by one with
every change, so an edit based on an older version can be detected and refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from django.conf import settings
from django.db import models


class TodoList(models.Model):
    """A session's todo list header: its version and when it last changed (UTC)."""

    session = models.OneToOneField(
        "sessions_app.Session", on_delete=models.CASCADE, related_name="todo_list"
    )
    version = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"todos of {self.session_id} (v{self.version})"

    def as_state(self) -> list[dict[str, Any]]:
        """The list as the state value `todos`: [{content, status, active_form?}, ...]."""
        return [item.as_state() for item in self.items.all()]


class ItemValues(Protocol):
    """What an item row is made from: a runtime `TodoItem` or an imported `ParsedTodo`."""

    @property
    def content(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def active_form(self) -> str: ...


class TodoItemQuerySet(models.QuerySet["TodoItem"]):
    def add_items(self, todo_list: TodoList, items: Sequence[ItemValues], start: int = 0) -> None:
        """Insert `items` as the rows of `todo_list` from position
        `start` on, in batches."""
        self.bulk_create(
            [
                self.model(
                    todo_list=todo_list,
                    position=start + offset,
                    content=item.content,
                    status=item.status,
                    active_form=item.active_form,
                )
                for offset, item in enumerate(items)
            ],
            batch_size=1000,  # rows per INSERT: a long imported list
        )


class TodoItem(models.Model):
    """One item: content, status (pending / in_progress / completed or any other string)
    and the active form shown while it is in progress."""

    class Status(models.TextChoices):
        PENDING = "pending"
        IN_PROGRESS = "in_progress"
        COMPLETED = "completed"

    todo_list = models.ForeignKey(TodoList, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    content = models.TextField()
    status = models.CharField(max_length=64, default=Status.PENDING)
    active_form = models.TextField(blank=True, default="")

    objects = TodoItemQuerySet.as_manager()

    class Meta:
        ordering = ["todo_list", "position"]
        constraints = [
            # One item per slot; the list is read in position order.
            models.UniqueConstraint(
                fields=["todo_list", "position"], name="todo_item_unique_position"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.position}: {self.content} [{self.status}]"

    def as_state(self) -> dict[str, Any]:
        """{content, status, active_form?} with active_form omitted when empty
        (docs/runtime.md §7)."""
        item: dict[str, Any] = {"content": self.content, "status": self.status}
        if self.active_form:
            item["active_form"] = self.active_form
        return item


class TodoChange(models.Model):
    """One audited change of a todo list: who, when, what before and after.

    Written in the same transaction as the change it records (`todos_app.services`), so
    the audit and the rows never disagree. `version` is the list's version after the
    change. Agent changes carry the `turn_id` and `event_id` of the tool call that made
    them (both may be empty when the caller did not know them); person changes carry the
    `user` (nullable: the account may be deleted later). `before` and `after` are the
    whole list as state values ([{content, status, active_form?}, ...]). `created_at`
    is UTC.
    """

    class Actor(models.TextChoices):
        AGENT = "agent"
        PERSON = "person"
        IMPORT = "import"
        API = "api"

    todo_list = models.ForeignKey(TodoList, on_delete=models.CASCADE, related_name="changes")
    version = models.PositiveIntegerField()
    actor = models.CharField(max_length=16, choices=Actor.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="todo_changes",
    )
    turn_id = models.CharField(max_length=255, blank=True, default="")
    event_id = models.BigIntegerField(null=True, blank=True)
    action = models.CharField(max_length=32)
    # An API caller's name ("api key NAME"); empty for the other actors.
    via = models.CharField(max_length=150, blank=True, default="")
    before = models.JSONField(default=list)
    after = models.JSONField(default=list)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["todo_list", "-version", "-id"]
        indexes = [models.Index(fields=["todo_list", "version"], name="todo_change_list_version")]

    def __str__(self) -> str:
        return f"{self.todo_list_id} v{self.version} {self.actor} {self.action}"
