"""The next-context page, GET /sessions/<id>/context/: what the next turn's agent would be
sent, and why each stored event is in it or not."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from sessions_app.access import get_session_for_user
from sessions_app.live.runs import run_by_dashboard
from sessions_app.models import Event
from sessions_app.pages import context_background, presenters
from sessions_app.pages.context_rows import TOKENIZER, compaction_facts
from sessions_app.store import UnreadableRowError


@require_safe
def session_context(request: HttpRequest, session_id: str) -> HttpResponse:
    """GET /sessions/<id>/context/?page=: what the next turn's agent would be sent.

    Runs the product projection (`sessions_app.projector`: the live history from the last
    compaction on, recorded tool outcomes closing their calls, then the runtime's default
    projection, docs/runtime.md §4) on the stored facts and shows every stored event as
    kept, dropped (running turn), cut (unsafe suffix after an unanswered call),
    compacted (summarised, not sent) or abandoned (a rewound branch, not sent), the
    status notices and recorded outcomes in place, orphan results marked, or the
    unknown-execution error (then no row says it would be sent), a token estimate per row
    and in total, and the rows new since the latest turn started. The events are read a
    page at a time and only the page of rows shown is built (`context_stream.stream_context`),
    so memory does not grow with the session. A stored row that is not a runtime value is
    shown raw instead. Raises Http404 for a session the user may not see.
    """
    session = get_session_for_user(request, session_id)
    page, per_page = request.GET.get("page"), settings.AGENTOPS_CONTEXT_ENTRIES_PER_PAGE
    try:
        computed = context_background.computed_or_started(session, page, per_page)
    except UnreadableRowError as unreadable:
        context = {"session": session, **presenters.unreadable(unreadable)}
        return render(request, "sessions/context.html", context)
    if isinstance(computed, context_background.BackgroundPass):
        pending = {"session": session, "job": computed}
        return render(request, "sessions/context_pending.html", pending)
    streamed, raw = computed
    explanation = streamed.explanation
    compaction = streamed.compaction
    error = explanation.error
    awaiting_user: frozenset[str] = frozenset()
    if error is not None:
        awaiting_user = _awaiting(session.id, error.event_id)
    awaiting = [call for call in error.tool_calls if call.id in awaiting_user] if error else []
    context = {
        "session": session,
        "explanation": explanation,
        "product": {
            "compaction": compaction,
            "compacted": streamed.compacted,
            "orphans": streamed.orphans,
            "awaiting_user": awaiting_user,
        },
        "page": streamed.page,
        "entries": list(streamed.page),
        "error": explanation.error,
        "awaiting": awaiting,
        "agent_continues": run_by_dashboard(session),
        "compaction": compaction_facts(raw),
        "tokenizer": TOKENIZER,
        "total_tokens": streamed.tokens,
        "latest_turn": streamed.latest_turn,
        "new_count": streamed.new_count,
    }
    return render(request, "sessions/context.html", context)


def _awaiting(session_id: str, event_id: int) -> frozenset[str]:
    """The call ids of assistant event `event_id` its source marks as awaiting a person."""
    ids = Event.objects.filter(session_id=session_id, pk=event_id).values_list(
        "pending_call_ids", flat=True
    )
    return frozenset(call for calls in ids for call in calls)
