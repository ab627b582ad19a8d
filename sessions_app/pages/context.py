"""The next-context page, GET /sessions/<id>/context/: what the next turn's agent would be
sent, and why each stored event is in it or not."""

from __future__ import annotations

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from sessions_app.access import get_session_for_user
from sessions_app.pages import presenters
from sessions_app.pages.context_rows import TOKENIZER, compaction_facts, context_rows
from sessions_app.projector import explain_product_projection
from sessions_app.store import UnreadableRowError, load_archived_events, load_facts


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
    and in total, and the rows new since the latest turn started. A stored row that is not
    a runtime value is shown raw instead. Raises Http404 for a session the user may not see.
    """
    session = get_session_for_user(request, session_id)
    try:
        turns, events = load_facts(session.id)
    except UnreadableRowError as error:
        context = {"session": session, **presenters.unreadable(error)}
        return render(request, "sessions/context.html", context)
    product = explain_product_projection(session.id, turns, events)
    explanation = product.explanation
    latest = max(turns, key=lambda turn: (turn.started_at, turn.id), default=None)
    rows = context_rows(product, load_archived_events(session.id), latest.id if latest else "")
    # Only one page of rows is rendered; by default the last one, which ends where the
    # new user message would follow.
    paginator = Paginator(rows, settings.AGENTOPS_EVENTS_PER_TURN_PAGE)
    page = paginator.get_page(request.GET.get("page") or paginator.num_pages)
    awaiting = [
        call
        for issue in explanation.issues
        for call in issue.tool_calls
        if call.id in product.awaiting_user
    ]
    context = {
        "session": session,
        "explanation": explanation,
        "product": product,
        "page": page,
        "entries": list(page),
        "error": explanation.error,
        "awaiting": awaiting,
        "compaction": compaction_facts(product.compaction_raw),
        "tokenizer": TOKENIZER,
        "total_tokens": sum(row.tokens for row in rows if row.context_index is not None),
        "latest_turn": latest,
        "new_count": sum(1 for row in rows if row.new),
    }
    return render(request, "sessions/context.html", context)
