"""Download a session as one JSON document (`sessions_app.export`)."""

from __future__ import annotations

import json
import re

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from sessions_app.access import get_session_for_user
from sessions_app.export import build_export


def export_filename(session_id: str) -> str:
    """A safe download name: `<session id with [^A-Za-z0-9._-] as _>.agentops.json`."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", session_id)[:150] + ".agentops.json"


@require_safe
def session_export(request: HttpRequest, session_id: str) -> HttpResponse:
    """GET /sessions/<id>/export/: the `agentops.session-export/1` document as a download.

    404 for a missing session or a user without a dashboard role (`get_session_for_user`).
    """
    session = get_session_for_user(request, session_id)
    body = json.dumps(build_export(session), ensure_ascii=False, indent=1)
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{export_filename(session.id)}"'
    return response
