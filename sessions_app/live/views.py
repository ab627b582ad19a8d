"""Starting and stopping turns from the session page (admins only).

Both are POST forms with CSRF protection; a plain form post redirects back to the session
page (post/redirect/get), an htmx post from the page gets the note to show beside the
form (text; the status code says whether it worked), and a request with ``Accept:
application/json`` gets JSON. The turn runs as an asyncio task of this server process
(`sessions_app.live.start_turn`); the page follows it over the websocket.
"""

from __future__ import annotations

from urllib.parse import quote

from asgiref.sync import async_to_sync, sync_to_async
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.html import escape
from django.views.decorators.http import require_POST

from agentops.runtime.errors import NothingToContinueError
from sessions_app import live
from sessions_app.access import get_session_for_user
from sessions_app.live import runs
from sessions_app.models import Session
from sessions_app.roles import can_run_turns

MAX_MESSAGE_CHARS = 20_000


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def _answer(
    request: HttpRequest, session_id: str, status: int, data: dict[str, object], note: str = ""
) -> HttpResponse:
    """JSON `data`, the note for an htmx post (`note`, or the error), or a redirect."""
    if _wants_json(request):
        return JsonResponse(data, status=status)
    if getattr(request, "htmx", False):
        return HttpResponse(escape(str(data.get("error", note))), status=status)
    if status >= 400:
        messages.error(request, str(data.get("error", "The request was refused.")))
    elif note:
        messages.info(request, note)
    return redirect(reverse("sessions:detail", args=[session_id]) + "#live")


def draft_key(session_id: str) -> str:
    """The key of a session's unsent message in the person's web session."""
    return f"composer-draft:{session_id}"


async def _keep_draft(request: HttpRequest, session_id: str, message: str) -> None:
    """Keep a refused message so the page that the redirect shows offers it again (the
    htmx path keeps it in the form: static/live.js resets the form only on success)."""
    if not _wants_json(request) and not getattr(request, "htmx", False):
        await request.session.aset(draft_key(session_id), message)


async def _admin_session(
    request: HttpRequest, session_id: str
) -> tuple[Session | None, HttpResponse | None]:
    """The session if the user may see it (else Http404) and run turns (else a 403)."""
    user = await request.auser()
    request.user = user
    session = await sync_to_async(get_session_for_user)(request, session_id)
    if not await sync_to_async(can_run_turns)(user):
        return None, HttpResponse("Only admins can start or stop turns.", status=403)
    return session, None


@require_POST
async def run_turn(request: HttpRequest, session_id: str) -> HttpResponse:
    """POST /sessions/<id>/run/ with `message`: start one turn of the configured agent
    (settings.AGENTOPS_AGENT). JSON answer: ``{"turn_id"}`` (202), or ``{"error"}`` (400
    empty or too long message, 409 when the run ended before a turn began)."""
    session, refused = await _admin_session(request, session_id)
    if refused is not None or session is None:
        return refused or HttpResponse(status=404)
    message = request.POST.get("message", "").strip()
    if not message or len(message) > MAX_MESSAGE_CHARS:
        return _answer(
            request, session.id, 400, {"error": "Write a message (at most 20,000 characters)."}
        )
    refusal = runs.run_refusal(session)
    if refusal:
        await _keep_draft(request, session.id, message)
        return _answer(request, session.id, 409, {"error": refusal})
    # A turn whose process died must not block the session (docs/concepts.md "Stuck turns").
    await live.recover_dead_turns(session.id)
    busy = await sync_to_async(live.active_turn_id)(session.id)
    if busy:
        # One turn at a time per session: a second one would wait behind the run lock.
        await _keep_draft(request, session.id, message)
        return _answer(
            request,
            session.id,
            409,
            {"error": f"Turn {busy} is still running: stop it first, or wait for it to end."},
        )
    handle = await live.start_turn(session.id, message)
    if not handle.turn_id:
        error = (
            handle.task.exception() if handle.task.done() and not handle.task.cancelled() else None
        )
        name = type(error).__name__ if error else "no turn"
        await _keep_draft(request, session.id, message)
        return _answer(request, session.id, 409, {"error": f"The turn could not start ({name})."})
    return _answer(request, session.id, 202, {"turn_id": handle.turn_id}, "Turn started.")


@require_POST
async def stop_turns(request: HttpRequest, session_id: str) -> HttpResponse:
    """POST /sessions/<id>/stop/ (optional `turn_id`): stop the running turn(s), here or
    in the server process that runs them (``turn.cancel``); they end interrupted/canceled.
    Turns that no live process runs (it died) are recorded interrupted/abandoned at once
    (`live.stop_turns`). The stop is attributed to the user ("<username> (page)",
    `Turn.stopped_by`). JSON answer: ``{"running": [turn ids], "cancelled_here": n,
    "abandoned": [turn ids]}``: 202, or 200 when nothing was running."""
    session, refused = await _admin_session(request, session_id)
    if refused is not None or session is None:
        return refused or HttpResponse(status=404)
    turn_id = request.POST.get("turn_id", "")
    by = f"{request.user.get_username()} (page)"
    outcome = await live.stop_turns(session.id, turn_id, by=by)
    data: dict[str, object] = {
        "running": outcome.running,
        "cancelled_here": outcome.cancelled_here,
        "abandoned": outcome.abandoned,
    }
    if not outcome.running:
        return _answer(request, session.id, 200, data, "Nothing is running.")
    if outcome.abandoned:
        note = "No process was running it: recorded as abandoned."
    else:
        note = "Stop requested."
    return _answer(request, session.id, 202, data, note)


async def continue_after_decision(session_id: str) -> str:
    """After a person decided on a call awaiting them in `session_id`: start the turn that
    continues the session (`runs.start_turn` with no message: `Runner.resume`, a task of
    this process like a page-started turn, so watchers see it live) when the dashboard's
    agent runs the session. Returns the sentence the page shows: what happens next, or why
    nothing does (an imported session: the decision is only recorded)."""
    session = await Session.objects.aget(pk=session_id)  # the refreshed resume status
    if not runs.run_by_dashboard(session):
        return (
            f"Recorded only: this session was imported ({session.get_source_format_display()}), "
            "so the dashboard's agent does not run it and nothing continues here. The next "
            "turn's context carries the decision."
        )
    if session.cannot_resume:
        return "The agent did not continue: other tool calls still have no result."
    await live.recover_dead_turns(session.id)
    busy = await sync_to_async(live.active_turn_id)(session.id)
    if busy:
        return f"The agent did not continue: turn {busy} is still running."
    handle = await live.start_turn(session.id, None)
    if handle.turn_id:
        return "The agent continues the turn with your decision."
    error = handle.task.exception() if handle.task.done() and not handle.task.cancelled() else None
    if isinstance(error, NothingToContinueError) and error.key == "not_tool":
        # E.g. an interrupted or failed turn: its context ends with the status notice.
        return (
            "The agent did not continue: its last turn did not end waiting for this "
            "decision. Send it a message to go on; the next turn's context carries it."
        )
    if isinstance(error, NothingToContinueError):
        return f"The agent did not continue: {error.problem}. Send it a message instead."
    return f"The agent did not continue ({type(error).__name__ if error else 'no turn'})."


def page_context(request: HttpRequest, session: Session) -> dict[str, object]:
    """What the session page needs for live updates: one query (the last event id), plus
    one for the session's dead running turns, which are recorded abandoned first
    (`live.recover_dead_turns`, docs/concepts.md "Stuck turns").

    ``{"ws_path": "/ws/sessions/<id>/", "last_event_id": int, "can_run_turns": bool,
    "refusal": why the agent may not run here ("" when it may, `runs.run_refusal`),
    "draft": a message the person sent that was refused, offered again}``.
    """
    if live.dead_turn_ids(session.id):
        async_to_sync(live.recover_dead_turns)(session.id)
    return {
        "ws_path": f"/ws/sessions/{quote(session.id, safe='')}/",
        "last_event_id": live.last_event_id(session.id),
        "can_run_turns": can_run_turns(request.user),
        "refusal": runs.run_refusal(session),
        "draft": request.session.pop(draft_key(session.id), ""),
    }
