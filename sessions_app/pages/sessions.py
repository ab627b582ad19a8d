"""The sessions list, GET /sessions/: every session, newest activity first, filtered by URL."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_safe
from django.views.decorators.vary import vary_on_headers

from sessions_app.access import require_viewer
from sessions_app.http import HtmxHttpRequest
from sessions_app.models import Session
from sessions_app.pages import presenters
from sessions_app.search import ListFilters, SortError, TokenTotals
from sessions_app.search.listing import SORTS, TURN_STATUSES


@require_safe
@vary_on_headers("HX-Request")
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    """GET /sessions/?status=&app=&health=&q=&tool=&model=&from=&to=&sort=&page=.

    Filters and sort are `sessions_app.search.ListFilters` (documented in
    docs/interfaces.md); `q` also searches the events' text, tool names, arguments and
    results. Each row shows token totals and, when the model has a price, their cost.
    Filters live in the URL (deep links work). A malformed day or unknown sort gets a
    one-line 400. An htmx request aimed at `#session-results` gets only the `results`
    partial. Raises PermissionDenied (403) for a user without a dashboard role.
    """
    require_viewer(request)
    try:
        filters = ListFilters.from_query(request.GET)
    except SortError as exc:
        return HttpResponseBadRequest(f"{exc}\n", content_type="text/plain; charset=utf-8")
    sessions = filters.apply(Session.objects.with_summary())
    page = Paginator(sessions, settings.AGENTOPS_SESSIONS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    rows = [(session, TokenTotals.of(session, session.model)) for session in page]
    choices = Session.objects.order_by().values_list("app_name", "model").distinct()
    pairs = list(choices)
    context: dict[str, Any] = {
        "page": page,
        "rows": rows,
        "filters": filters,
        "status": filters.status,
        "app": filters.app,
        "q": filters.query,
        "health": filters.health,
        "statuses": TURN_STATUSES,
        "apps": sorted({app for app, _ in pairs}),
        "models": sorted({model for _, model in pairs if model}),
        "sorts": {name: filters.sort_link(name) for name in SORTS},
        "sort_query": presenters.query_without(request.GET, "page", "sort"),
        "filter_query": presenters.query_without(request.GET, "page"),
    }
    template = "sessions/list.html"
    if request.htmx and request.htmx.target == "session-results":
        template += "#results"
    return render(request, template, context)
