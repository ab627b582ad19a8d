"""URLs under /turns/ (included from agentops/urls.py)."""

from __future__ import annotations

from django.urls import path

from sessions_app.triage.views import turn_queue

urlpatterns = [path("", turn_queue, name="turn_queue")]
