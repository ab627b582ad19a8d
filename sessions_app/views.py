from __future__ import annotations

from django.http import HttpRequest, HttpResponse


def session_list(request: HttpRequest) -> HttpResponse:
    return HttpResponse("todo")


session_detail = session_turns = turn_events = event_raw = session_list
