"""Pages of the sessions app: list, session timeline, lazily loaded turn events, raw JSON.

Views are thin: queries live on the model querysets, access checks in `access.py`,
presentation helpers in `presenters.py`. An htmx request gets the page's partial
(`template.html#fragment`), a normal request the whole page.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.middleware import HtmxDetails

from agentops.runtime.protocol import inspect_tool_protocol
from sessions_app.access import get_session_for_user, require_viewer
from sessions_app.live import views as live_views
from sessions_app.models import Event, Session, ToolOutcome, Turn
from sessions_app.outcomes import OutcomeRejectedError, parse_result, record_tool_outcome
from sessions_app.pages import presenters
from sessions_app.pages.rendering import pretty_json
from sessions_app.projector import explain_product_projection, load_outcomes
from sessions_app.roles import can_record_outcomes
from sessions_app.store import load_facts


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


@require_GET
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    """GET /sessions/?status=&app=&q=&page=: sessions, newest activity first.

    `status` filters on the latest turn's status, `app` on the app name, `health` on
    tool-protocol state (`cannot_resume`: the next run would be refused; `open_calls`: any
    unanswered call), `q` searches ids, titles, apps, users and source paths. Filters live
    in the URL (deep links work).
    """
    require_viewer(request)
    status = request.GET.get("status", "")
    app = request.GET.get("app", "")
    query = request.GET.get("q", "").strip()
    health = request.GET.get("health", "")

    sessions = Session.objects.with_summary()
    if status in [s.value for s in Turn.Status]:
        sessions = sessions.with_latest_turn_status(status)
    if app:
        sessions = sessions.filter(app_name=app)
    if query:
        sessions = sessions.search(query)
    if health == "cannot_resume":
        sessions = sessions.filter(cannot_resume=True)
    elif health == "open_calls":
        sessions = sessions.filter(protocol_issue_count__gt=0)
    page = Paginator(sessions, settings.AGENTOPS_SESSIONS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    context = {
        "page": page,
        "status": status,
        "app": app,
        "q": query,
        "health": health,
        "statuses": [s.value for s in Turn.Status],
        "apps": list(
            Session.objects.order_by("app_name").values_list("app_name", flat=True).distinct()
        ),
        "filter_query": presenters.query_without(request.GET, "page"),
    }
    template = "sessions/list.html"
    if request.htmx and request.htmx.target == "session-results":
        template += "#results"
    return render(request, template, context)


def _turns_with_event_counts(session: Session):  # type: ignore[no-untyped-def]
    event_count = (
        Event.objects.active()
        .filter(session=session, turn_id=OuterRef("id"))
        .order_by()
        .values("turn_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    return session.turns.annotate(
        event_count=Subquery(event_count, output_field=IntegerField())
    ).order_by("started_at", "id")


@require_GET
def session_detail(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """GET /sessions/<id>/?page=: header, todo list and one page of the turn timeline.

    The timeline shows the newest page of turns by default; each turn's events load lazily
    (htmx, on reveal) from `turn_events`, so the page costs the same number of queries for
    a session of 10 or 10,000 events.
    """
    session = get_session_for_user(request, session_id)
    paginator = Paginator(_turns_with_event_counts(session), settings.AGENTOPS_TURNS_PER_PAGE)
    page = paginator.get_page(request.GET.get("page") or paginator.num_pages)
    todo_list = getattr(session, "todo_list", None)
    todos = list(todo_list.items.all()) if todo_list is not None else []
    has_legacy = (
        Event.objects.active()
        .filter(session=session)
        .exclude(turn_id__in=session.turns.values("id"))
        .exists()
    )
    context = {
        "session": session,
        "page": page,
        "todos": todos,
        "todo_done": sum(1 for item in todos if item.status == "completed"),
        "has_legacy": has_legacy,
        "state_json": pretty_json(session.state),
        "live": live_views.page_context(request, session),
    }
    template = "sessions/detail.html"
    if request.htmx and request.htmx.target == "timeline":
        template += "#timeline"
    return render(request, template, context)


@require_GET
def session_turns(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """GET /sessions/<id>/turns/?page=: the timeline partial (same data as the page)."""
    return session_detail(request, session_id)


@require_GET
def turn_events(request: HtmxHttpRequest, session_id: str, turn_id: str) -> HttpResponse:
    """GET /sessions/<id>/turns/<turn_id>/events/?after=<event id>: one chunk of a turn's
    events in conversation form, at most AGENTOPS_EVENTS_PER_TURN_PAGE, keyset-paginated.

    `turn_id` "legacy" lists the active events that belong to no turn record (SPEC.md 2).
    An htmx request gets the `events` fragment; a plain request a page for that turn.
    """
    session = get_session_for_user(request, session_id)
    events = Event.objects.active().filter(session=session)
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
    context = {
        "session": session,
        "turn": turn,
        "turn_key": turn_id,
        "items": presenters.conversation(chunk),
        "next_after": chunk[-1].id if more and chunk else None,
    }
    template = "sessions/turn_events.html"
    if request.htmx:
        template += "#events"
    return render(request, template, context)


@require_GET
def event_raw(request: HtmxHttpRequest, session_id: str, event_id: int) -> HttpResponse:
    """GET /sessions/<id>/events/<event_id>/raw/: the stored event and its source record.

    htmx gets a `<pre>` fragment; a plain request gets the JSON document itself.
    """
    session = get_session_for_user(request, session_id)
    event = get_object_or_404(Event, session=session, pk=event_id)
    document = {"event": event.as_dict(), "source": event.raw}
    if request.htmx:
        return render(
            request,
            "sessions/turn_events.html#raw",
            {"raw_json": json.dumps(document, indent=2, ensure_ascii=False)},
        )
    return JsonResponse(document, json_dumps_params={"indent": 2, "ensure_ascii": False})


@require_GET
def session_context(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """GET /sessions/<id>/context/: what the next turn's agent would be sent.

    Runs the product projection (the runtime's default projection, SPEC.md 4, with recorded
    tool outcomes closing their calls) on the stored facts and shows every stored event as
    kept, dropped (running turn) or cut (unsafe suffix after an unanswered call), the
    status notices and recorded outcomes in place, or the unknown-execution error.
    """
    session = get_session_for_user(request, session_id)
    turns, events = load_facts(session.id)
    explanation = explain_product_projection(session.id, turns, events)
    # Only one page of entries is rendered; by default the last one, which ends where the
    # new user message would follow.
    paginator = Paginator(explanation.entries, settings.AGENTOPS_EVENTS_PER_TURN_PAGE)
    page = paginator.get_page(request.GET.get("page") or paginator.num_pages)
    context = {
        "session": session,
        "explanation": explanation,
        "page": page,
        "entries": [presenters.projection_entry(entry) for entry in page],
        "error": explanation.error,
    }
    return render(request, "sessions/context.html", context)


@require_GET
def session_protocol(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """GET /sessions/<id>/protocol/: every tool-protocol issue of the active history.

    Each issue is an assistant event whose calls have no result (SPEC.md 5), with its turn's
    status; calls the source marked as awaiting approval are labelled pending.
    """
    session = get_session_for_user(request, session_id)
    turns, events = load_facts(session.id)
    issues = inspect_tool_protocol(events)
    turn_by_id = {turn.id: turn for turn in turns}
    pending = dict(
        Event.objects.filter(pk__in=[issue.event_id for issue in issues]).values_list(
            "id", "pending_call_ids"
        )
    )
    outcomes = load_outcomes(session.id)
    context = {
        "session": session,
        "issues": [
            presenters.protocol_issue(
                issue, turn_by_id.get(issue.turn_id), pending.get(issue.event_id), outcomes
            )
            for issue in issues
        ],
        "can_record": can_record_outcomes(request.user),
        "outcome_choices": ToolOutcome.Outcome.choices,
    }
    return render(request, "sessions/protocol.html", context)


@require_POST
def tool_outcome_create(request: HtmxHttpRequest, session_id: str) -> HttpResponse:
    """POST /sessions/<id>/protocol/outcomes/: record the outcome of an unanswered call.

    Form fields: event_id, call_id, outcome (did_not_run | ran), result (JSON or text, for
    "ran"), reason. Admins only (403 otherwise); a rejected outcome shows its reason as an
    error message. Redirects back to the protocol page (post/redirect/get).
    """
    session = get_session_for_user(request, session_id)
    if not can_record_outcomes(request.user):
        raise PermissionDenied("Only admins may record tool outcomes.")
    event_id = request.POST.get("event_id", "")
    try:
        record_tool_outcome(
            session,
            event_id=int(event_id) if event_id.isdigit() else -1,
            call_id=request.POST.get("call_id", ""),
            outcome=request.POST.get("outcome", ""),
            result=parse_result(request.POST.get("result", "")),
            reason=request.POST.get("reason", ""),
            user=request.user,  # type: ignore[arg-type]
        )
    except OutcomeRejectedError as error:
        messages.error(request, f"Not recorded: {error}.")
    else:
        messages.success(request, "Outcome recorded. The next turn's context includes it.")
    return redirect("sessions:protocol", session_id=session.id)
