"""Top-level URLs: sign-in, the dashboard apps, the project's docs, the HTTP API, Django
admin. The API is built here because it joins two apps' routers (todos_app's todo
endpoints; sessions_app never imports todos_app)."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic.base import RedirectView

from agentops.accounts import sign_out
from sessions_app.api.urls import api_urls, build_api
from todos_app.api import router as todos_router

api = build_api([("", todos_router)])

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="sessions:list", permanent=False)),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", sign_out, name="logout"),
    path("sessions/", include("sessions_app.urls")),
    path("sessions/<str:session_id>/todos/", include("todos_app.urls")),
    path("turns/", include("sessions_app.triage.urls")),
    path("docs/", include("sessions_app.pages.docs")),
    path("api/v1/", api_urls(api)),
    path("admin/", admin.site.urls),
    path("", include("sessions_app.otlp.urls")),
]
