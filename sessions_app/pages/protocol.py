"""The tool-protocol page, GET /sessions/<id>/protocol/: every unanswered tool call and every
orphan result of the live history, and the admins' form that records what became of a
call."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from agentops.runtime.protocol import ToolProtocolIssue
from sessions_app.access import get_session_for_user
from sessions_app.live.runs import agent_may_run, run_by_dashboard
from sessions_app.live.views import continue_after_decision
from sessions_app.models import Session, ToolOutcome, Turn
from sessions_app.outcomes import (
    DECISIONS,
    OutcomeRejectedError,
    parse_result,
    record_tool_outcome,
)
from sessions_app.pages import presenters
from sessions_app.projector import load_outcomes
from sessions_app.roles import can_record_outcomes
from sessions_app.store import UnreadableRowError, turn_from_row
from sessions_app.store.page_facts import kept_protocol_pass

#: What a person records about a call that awaits no one.
MANUAL = frozenset({ToolOutcome.Outcome.DID_NOT_RUN, ToolOutcome.Outcome.RAN})


@require_safe
def session_protocol(request: HttpRequest, session_id: str) -> HttpResponse:
    """GET /sessions/<id>/protocol/: every tool-protocol issue of the live history (what the
    product projector sends: from the last compaction on).

    Each issue is an assistant event whose calls have no result (docs/runtime.md §5), with
    its turn's status; calls the source marks as waiting for a person are labelled
    *awaiting the user*. Orphan results (tool results that answer no call) are listed
    beside them. A flagged row that is not a runtime value is shown raw instead. Only the
    events the inspector flagged are read, from the verdicts kept as events are written
    (`store.page_facts.kept_protocol_pass`): the page costs the same for 100 events or
    100,000. Raises Http404 for a session the user may not see.
    """
    session = get_session_for_user(request, session_id)
    try:
        # Only the events the inspector flagged as they were written (`page_facts`).
        kept = kept_protocol_pass(session.id)
        issues = kept.issues
        turn_by_id = {
            row.id: turn_from_row(row)
            for row in Turn.objects.filter(session_id=session.id, pk__in=_turn_ids(issues))
        }
    except UnreadableRowError as error:
        context = {"session": session, **presenters.unreadable(error)}
        return render(request, "sessions/protocol.html", context)
    outcomes = load_outcomes(session.id) if issues else {}
    context = {
        "session": session,
        "issues": [
            presenters.protocol_issue(
                issue, turn_by_id.get(issue.turn_id), kept.pending.get(issue.event_id), outcomes
            )
            for issue in issues
        ],
        "orphans": [(orphan, presenters.runtime_event(event)) for orphan, event in kept.orphans],
        "compacted": kept.compacted,
        "can_record": can_record_outcomes(request.user),
        "agent_continues": run_by_dashboard(session),
        # Approve / reject are offered on calls awaiting a person, in their own form.
        "outcome_choices": [
            (value, label) for value, label in ToolOutcome.Outcome.choices if value in MANUAL
        ],
    }
    return render(request, "sessions/protocol.html", context)


def _turn_ids(issues: list[ToolProtocolIssue]) -> list[str]:
    return sorted({issue.turn_id for issue in issues if issue.turn_id})


@require_POST
async def tool_outcome_create(request: HttpRequest, session_id: str) -> HttpResponse:
    """POST /sessions/<id>/protocol/outcomes/: record the outcome of an unanswered call.

    Form fields: event_id, call_id, outcome (did_not_run | ran, or approved | rejected for
    a call awaiting a person), result (JSON or text, for "ran"), reason, return_to
    ("timeline": back to the call on the session page). Admins only (403 otherwise); a
    refused outcome shows its reason as an error message. A decision on a session the
    dashboard's agent runs then starts the turn that continues it, in this server process
    (`live.views.continue_after_decision`); on an imported session it is only recorded,
    and the message says so. Redirects back to the protocol page or the session page
    (post/redirect/get).
    """
    request.user = await request.auser()
    session = await sync_to_async(get_session_for_user)(request, session_id)
    if not await sync_to_async(can_record_outcomes)(request.user):
        raise PermissionDenied("Only admins may record tool outcomes.")
    event_id = request.POST.get("event_id", "")
    outcome = request.POST.get("outcome", "")
    try:
        await sync_to_async(_record)(request, session, event_id, outcome)
    except OutcomeRejectedError as error:
        messages.error(request, f"Not recorded: {error}.")
    else:
        if outcome in DECISIONS:
            what = "Approved." if outcome == ToolOutcome.Outcome.APPROVED else "Rejected."
            messages.success(request, f"{what} {await continue_after_decision(session.id)}")
        else:
            # The refreshed row: the recorded outcome may have let the session resume.
            fresh = await Session.objects.aget(pk=session.id)
            messages.success(request, outcome_message(fresh))
    if request.POST.get("return_to") == "timeline":
        anchor = f"#event-{event_id}" if event_id.isdigit() else ""
        return redirect(reverse("sessions:detail", args=[session.id]) + anchor)
    return redirect("sessions:protocol", session_id=session.id)


def _record(request: HttpRequest, session: Session, event_id: str, outcome: str) -> None:
    record_tool_outcome(
        session,
        event_id=int(event_id) if event_id.isdigit() else -1,
        call_id=request.POST.get("call_id", ""),
        outcome=outcome,
        result=parse_result(request.POST.get("result", "")),
        reason=request.POST.get("reason", ""),
        user=request.user,  # type: ignore[arg-type]
    )


def outcome_message(session: Session) -> str:
    """What the page says after what became of a call of `session` was recorded ("did not
    run" / "ran"; a decision says what happens next: `continue_after_decision`)."""
    follow = (
        " Send the agent the next message to continue the session."
        if agent_may_run(session)
        else ""
    )
    return f"Outcome recorded. The next turn's context carries it.{follow}"
