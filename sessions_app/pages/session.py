"""The session page, GET /sessions/<id>/: header, todo list and the turn timeline, with
each turn's events loaded lazily in chunks, and the raw JSON of one stored event.

Every page costs the same number of queries for a session of 10 or 10,000 events: the
timeline shows one page of turns (event counts as a subquery) and each turn's events
arrive later, one keyset-paginated chunk per request.
"""

from __future__ import annotations

import json
from typing import cast

from django.conf import settings
from django.core.paginator import Paginator
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_safe
from django.views.decorators.vary import vary_on_headers

from sessions_app.access import get_session_for_user
from sessions_app.http import HtmxHttpRequest
from sessions_app.live import views as live_views
from sessions_app.live.runs import run_by_dashboard
from sessions_app.models import Event, Session, Turn, TurnQuerySet
from sessions_app.otlp.models import OtlpSpan
from sessions_app.pages import presenters
from sessions_app.pages.rendering import pretty_json
from sessions_app.projector import load_outcomes
from sessions_app.roles import can_record_outcomes, can_view
from sessions_app.search.numbers import TokenTotals, session_token_totals, with_turn_tokens
from sessions_app.values import UNTIMED_FORMATS


def turns_with_event_counts(session: Session) -> QuerySet[Turn]:
    """The session's turns in timeline order (start time, then id), each annotated with
    `event_count` (int or None: its events that are not deleted), counted in a subquery."""
    # Archived events (an abandoned rewind branch) are shown, marked; deleted ones are not.
    event_count = (
        Event.objects.filter(deleted_at__isnull=True, session=session, turn_id=OuterRef("id"))
        .order_by()
        .values("turn_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    return session.turns.annotate(
        event_count=Subquery(event_count, output_field=IntegerField())
    ).order_by("started_at", "id")


@require_safe
@vary_on_headers("HX-Request")
def session_detail(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """GET /sessions/<id>/?page=: header, todo list and one page of the turn timeline.

    The timeline shows the newest page of turns by default; each turn's events load lazily
    (htmx, on reveal) from `turn_events`. An htmx request aimed at `#timeline` gets only
    the `timeline` partial. Raises Http404 for a session the user may not see. The
    session an OTLP trace had of its own until a later span named its conversation
    redirects to the session the trace moved into (a watcher of the running turn reloads
    into it).
    """
    try:
        session = get_session_for_user(request, session_id)
    except Http404:
        moved = OtlpSpan.objects.moved_from(session_id) if can_view(request.user) else ""
        if moved:
            return redirect("sessions:detail", moved)
        raise
    turns = with_turn_tokens(cast(TurnQuerySet, turns_with_event_counts(session)))
    paginator = Paginator(turns, settings.AGENTOPS_TURNS_PER_PAGE)
    page = paginator.get_page(request.GET.get("page") or paginator.num_pages)
    for turn in page:  # the page keeps this list: the template shows the same objects
        turn.tokens = TokenTotals.of(turn, session.model)  # type: ignore[attr-defined]
    todo_list = getattr(session, "todo_list", None)
    todos = list(todo_list.items.all()) if todo_list is not None else []
    context = {
        "session": session,
        "parent": Session.objects.filter(pk=session.parent_session_id).first()
        if session.parent_session_id
        else None,
        "subagents": list(
            Session.objects.filter(parent_session_id=session.id)
            .order_by("created_at", "id")
            .only("id", "title", "parent_call_id", "created_at")
        ),
        "page": page,
        "todos": todos,
        "todo_done": sum(1 for item in todos if item.status == "completed"),
        "has_legacy": session.has_legacy_events,
        "state_json": pretty_json(session.state),
        "live": live_views.page_context(request, session),
        "tokens": session_token_totals(session),
        "untimed": session.source_format in UNTIMED_FORMATS,
    }
    template = "sessions/detail.html"
    if request.htmx and request.htmx.target == "timeline":
        template += "#timeline"
    return render(request, template, context)


@require_safe
@vary_on_headers("HX-Request")
def session_turns(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """GET /sessions/<id>/turns/?page=: the timeline partial (same data as the page)."""
    return session_detail(request, session_id)


@require_safe
@vary_on_headers("HX-Request")
def turn_events(request: HtmxHttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    """GET /sessions/<id>/turns/<turn_id>/events/?after=<event id>: one chunk of a turn's
    events in conversation form, at most AGENTOPS_EVENTS_PER_TURN_PAGE, keyset-paginated;
    events before the session's last compaction are marked compacted, archived ones
    (an abandoned rewind branch) abandoned, a compaction shows its facts, a call's
    recorded outcome shows beside it and admins get Approve / Reject on calls awaiting a
    person.

    `turn_id` "legacy" lists the active events that belong to no turn record (docs/runtime.md §2).
    An htmx request gets the `events` fragment; a plain request a page for that turn.
    Raises Http404 for an unknown turn or a session the user may not see.
    """
    session = get_session_for_user(request, session_id)
    # Archived events (an abandoned rewind branch) are shown, marked "abandoned".
    events = Event.objects.filter(session=session, deleted_at__isnull=True)
    turn = None
    if turn_id == "legacy":
        events = events.exclude(turn_id__in=session.turns.values("id"))
    else:
        turn = get_object_or_404(Turn, session=session, pk=turn_id)
        events = events.filter(turn_id=turn_id)
    after = request.GET.get("after", "")
    if after.isdigit():
        events = events.filter(id__gt=int(after))
    limit = settings.AGENTOPS_EVENTS_PER_TURN_PAGE
    chunk = list(events.defer("raw").order_by("id")[: limit + 1])
    more = len(chunk) > limit
    chunk = chunk[:limit]
    compaction = presenters.last_compaction(session)
    # Outcomes a person recorded (or decisions on calls awaiting them) show beside the call.
    with_calls = [event.id for event in chunk if event.tool_calls]
    outcomes = load_outcomes(session.id, with_calls) if with_calls else {}
    context = {
        "session": session,
        "turn": turn,
        "turn_key": turn_id,
        "can_record": can_record_outcomes(request.user),
        "agent_continues": run_by_dashboard(session),
        "items": presenters.conversation(
            chunk, compaction, outcomes, timed=session.source_format not in UNTIMED_FORMATS
        ),
        "next_after": chunk[-1].id if more and chunk else None,
    }
    template = "sessions/turn_events.html"
    if request.htmx:
        template += "#events"
    return render(request, template, context)


@require_safe
@vary_on_headers("HX-Request")
def event_raw(request: HtmxHttpRequest, session_id: str, event_id: int) -> HttpResponse:
    """GET /sessions/<id>/events/<event_id>/raw/: the stored event and its source record.

    htmx gets a `<pre>` fragment; a plain request gets the JSON document itself. With
    `?value=result`: the event's whole tool result as the page shows it (images as
    placeholders; `presenters.result_display`), as a `<pre>` fragment or plain text. Raises
    Http404 for an unknown event or a session the user may not see.
    """
    session = get_session_for_user(request, session_id)
    event = get_object_or_404(Event, session=session, pk=event_id)
    if request.GET.get("value") == "result":
        # The whole tool result (images as placeholders): the page's "show all".
        display = presenters.result_display(event)
        if request.htmx:
            context = {"d": display, "result_id": event.id, "session": session}
            return render(request, "sessions/turn_events.html#full_result", context)
        return HttpResponse(display.text, content_type="text/plain; charset=utf-8")
    document = {"event": event.as_dict(), "source": event.raw}
    if request.htmx:
        return render(
            request,
            "sessions/turn_events.html#raw",
            {"raw_json": json.dumps(document, indent=2, ensure_ascii=False)},
        )
    return JsonResponse(document, json_dumps_params={"indent": 2, "ensure_ascii": False})
