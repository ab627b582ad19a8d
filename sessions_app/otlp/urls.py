"""URLs of the OTLP receiver (included at the top level by agentops/urls.py): the OTLP
paths of traces and logs and the Langfuse-compatible ones, and of metrics (refused: 404
with the reason). Exempt from the sign-in redirect: the receiver answers 401 itself."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.urls import path

from sessions_app.otlp.views import receive_logs, receive_traces, refuse_metrics

app_name = "otlp"

urlpatterns = [
    path("v1/traces", login_not_required(receive_traces), name="traces"),
    path("api/public/otel/v1/traces", login_not_required(receive_traces), name="langfuse_traces"),
    path("v1/logs", login_not_required(receive_logs), name="logs"),
    path("api/public/otel/v1/logs", login_not_required(receive_logs), name="langfuse_logs"),
    path("v1/metrics", login_not_required(refuse_metrics), name="metrics"),
    path("api/public/otel/v1/metrics", login_not_required(refuse_metrics), name="langfuse_metrics"),
]
