"""The triage queue page, GET /turns/ (a thin view over the other modules of the room)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_safe
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import push_url

from sessions_app.access import require_viewer
from sessions_app.http import HtmxHttpRequest
from sessions_app.triage.filters import Filters
from sessions_app.triage.reading import read_queue
from sessions_app.triage.rows import QueueRow

PER_PAGE = 50
"""Rows per page of the queue."""


@require_safe
@vary_on_headers("HX-Request")
def turn_queue(request: HtmxHttpRequest) -> HttpResponse:
    """GET /turns/?status=&code=&stage=&reason=&app=&tool=&page=: the triage queue, newest
    first.

    Shows facets with counts, a per-day chart of failed/interrupted turns and one page
    (PER_PAGE) of rows, each linking to its turn on the session page at the timeline page
    that holds it. Costs the same number of queries however many turns exist
    (`reading.read_queue`). An htmx
    request aimed at `#triage-results` gets only the `results` partial, with the canonical
    URL to push.
    Raises PermissionDenied (403) for a signed-in user without a dashboard role.
    """
    require_viewer(request)
    now = timezone.now()
    filters = Filters.from_query(request.GET)
    queue = read_queue(filters, now, page=request.GET.get("page"), per_page=PER_PAGE)
    queue_url = reverse("turn_queue")
    context = {
        "page": queue.page,
        "rows": [
            QueueRow.for_turn(turn, turns_per_page=settings.AGENTOPS_TURNS_PER_PAGE, now=now)
            for turn in queue.turns
        ],
        "filters": filters,
        "facets": queue.facets,
        "chart": queue.chart,
        "stuck_after_minutes": settings.AGENTOPS_STUCK_AFTER_SECONDS / 60,
        "filter_query": filters.query(),
        "queue_url": queue_url,
    }
    template = "turns/triage.html"
    if request.htmx and request.htmx.target == "triage-results":
        response = render(request, template + "#results", context)
        # The form sends every select, empty ones too; push the canonical URL instead.
        canonical = filters.query(queue.page.number)
        return push_url(response, f"{queue_url}?{canonical}" if canonical else queue_url)
    return render(request, template, context)
