"""The sessions list, GET /sessions/: every session, newest activity first, filtered by URL."""

from __future__ import annotations

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe
from django.views.decorators.vary import vary_on_headers

from sessions_app.access import require_viewer
from sessions_app.http import HtmxHttpRequest
from sessions_app.models import Session, SessionQuerySet, Turn
from sessions_app.pages import presenters


def filter_sessions(
    sessions: SessionQuerySet, *, status: str, app: str, query: str, health: str
) -> SessionQuerySet:
    """`sessions` narrowed by the list's filters; an empty or unknown value filters nothing.

    `status` is matched against the latest turn's status, `app` against the app name,
    `query` searched in ids, titles, apps, users and source paths; `health` is
    `cannot_resume` (the next run would be refused), `open_calls` (any unanswered call) or
    `orphans` (any tool result that answers no call).
    """
    if status in TURN_STATUSES:
        sessions = sessions.with_latest_turn_status(status)
    if app:
        sessions = sessions.filter(app_name=app)
    if query:
        sessions = sessions.search(query)
    if health == "cannot_resume":
        sessions = sessions.filter(cannot_resume=True)
    elif health == "open_calls":
        sessions = sessions.filter(protocol_issue_count__gt=0)
    elif health == "orphans":
        sessions = sessions.filter(orphan_result_count__gt=0)
    return sessions


#: The turn statuses a list may be filtered by, in the runtime's order.
TURN_STATUSES = [status.value for status in Turn.Status]


@require_safe
@vary_on_headers("HX-Request")
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    """GET /sessions/?status=&app=&health=&q=&page=: sessions, newest activity first.

    `status` filters on the latest turn's status, `app` on the app name, `health` on
    tool-protocol state (`cannot_resume`: the next run would be refused; `open_calls`: any
    unanswered call), `q` searches ids, titles, apps, users and source paths. Filters live
    in the URL (deep links work). An htmx request aimed at `#session-results` gets only
    the `results` partial. Raises PermissionDenied (403) for a user without a dashboard
    role.
    """
    require_viewer(request)
    status = request.GET.get("status", "")
    app = request.GET.get("app", "")
    query = request.GET.get("q", "").strip()
    health = request.GET.get("health", "")
    sessions = filter_sessions(
        Session.objects.with_summary(), status=status, app=app, query=query, health=health
    )
    page = Paginator(sessions, settings.AGENTOPS_SESSIONS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    context = {
        "page": page,
        "status": status,
        "app": app,
        "q": query,
        "health": health,
        "statuses": TURN_STATUSES,
        "apps": list(
            Session.objects.order_by("app_name").values_list("app_name", flat=True).distinct()
        ),
        "filter_query": presenters.query_without(request.GET, "page"),
    }
    template = "sessions/list.html"
    if request.htmx and request.htmx.target == "session-results":
        template += "#results"
    return render(request, template, context)
