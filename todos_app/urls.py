"""URLs under /sessions/<session_id>/todos/ (included from agentops/urls.py)."""

from __future__ import annotations

from django.urls import path

from todos_app import views

app_name = "todos"

urlpatterns = [
    path("", views.todo_page, name="page"),
    path("panel/", views.todo_panel, name="panel"),
    path("add/", views.todo_add, name="add"),
    path("clear/", views.todo_clear, name="clear"),
    path("<int:index>/edit/", views.todo_edit, name="edit"),
    path("<int:index>/status/", views.todo_status, name="status"),
    path("<int:index>/move/", views.todo_move, name="move"),
    path("<int:index>/delete/", views.todo_delete, name="delete"),
]
