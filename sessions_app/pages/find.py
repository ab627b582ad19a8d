"""Find within one session, GET /sessions/<id>/find/?q=: the session's events that hold
every word of the query (the database's full-text engine, `search.matching_events`),
oldest first, a page at a time; each with its turn, an excerpt with the words marked
(`snippets`) and links to the turn on the timeline and to the event itself.

Costs the same number of queries however many events match: the count, one page of
events, and their turns (with each turn's place on the timeline).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from sessions_app.access import get_session_for_user
from sessions_app.http import HtmxHttpRequest
from sessions_app.models import Event, Turn
from sessions_app.pages.snippets import Snippet, snippet
from sessions_app.search import matching_events

PER_PAGE = 50
"""Events found per page."""
MAX_QUERY = 200
"""Characters of the query used; the rest is ignored."""


@dataclass(frozen=True)
class Found:
    """One event found: the event, its turn (None for an event without a turn record),
    the timeline page that shows that turn, and where the words are (`snippet`, None
    when the excerpt cannot be placed)."""

    event: Event
    turn: Turn | None
    timeline_page: int
    snippet: Snippet | None


@require_safe
def session_find(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """GET /sessions/<id>/find/?q=&page=: the events of the session matching `q`. An
    empty query shows the form only. Raises Http404 for a session the user may not see."""
    session = get_session_for_user(request, session_id)
    query = request.GET.get("q", "").strip()[:MAX_QUERY]
    found: list[Found] = []
    page = None
    if query:
        events = matching_events(Event.objects.filter(session=session), query)
        page = Paginator(events.defer("raw").order_by("id"), PER_PAGE).get_page(
            request.GET.get("page")
        )
        hits = list(page)
        turn_ids = {event.turn_id for event in hits if event.turn_id}
        turns = {
            turn.id: turn
            for turn in Turn.objects.filter(session=session, pk__in=turn_ids).with_timeline_index()
        }
        per_page = settings.AGENTOPS_TURNS_PER_PAGE
        for event in hits:
            turn = turns.get(event.turn_id)
            index = turn.timeline_index if turn is not None else 0  # type: ignore[attr-defined]
            found.append(Found(event, turn, index // per_page + 1, snippet(event, query)))
    context = {
        "session": session,
        "q": query,
        "page": page,
        "found": found,
        "pager_query": urlencode({"q": query}),
    }
    return render(request, "sessions/find.html", context)
