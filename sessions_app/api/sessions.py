"""Operations on sessions and their events: /api/v1/sessions/...

Thin async views: access through `auth` (key, app scope, read-only), writes through
`ledger.ApiSessionService` (the broadcasting store), reads through the store and the
runtime. Errors are problem+json (`problems`).
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, StreamingHttpResponse
from ninja import Router, Status

from agentops.runtime.model import Event
from agentops.runtime.protocol import inspect_tool_protocol
from agentops.runtime.session import Session
from sessions_app import models
from sessions_app.api.auth import api_actor, require_app, require_write, session_for_key
from sessions_app.api.ledger import ApiSessionService, BatchItem
from sessions_app.api.problems import ApiProblem
from sessions_app.api.schemas import (
    AppendIn,
    AppendOut,
    ContextOut,
    EventsOut,
    IssueOut,
    OutcomeIn,
    OutcomeOut,
    PartialsIn,
    Problem,
    SessionIn,
)
from sessions_app.export.views import export_response
from sessions_app.outcomes import OutcomeRejectedError, record_tool_outcome
from sessions_app.projector import explain_product_projection, load_outcomes, product_history
from sessions_app.store import load_facts

__all__ = ["router"]

router = Router(tags=["sessions"])

#: Error answers every operation may give (problem+json).
ERRORS: dict[int, type[Problem]] = {
    401: Problem, 403: Problem, 404: Problem, 409: Problem, 413: Problem, 422: Problem,
}  # fmt: skip


@router.post("/sessions", response={200: Session, 201: Session, **ERRORS})
async def create_session(request: HttpRequest, body: SessionIn) -> Status[Session]:
    """Create a session, or answer the existing one with that id (same app and user)."""
    require_write(request)
    require_app(request, body.app_name)
    service = ApiSessionService(api_actor(request))
    if body.session_id:
        existing = await sync_to_async(
            models.Session.objects.filter(pk=body.session_id)
            .values_list("app_name", flat=True)
            .first
        )()
        if existing is not None:  # hide another app's session as the reads do
            await session_for_key(request, body.session_id)
    session, created = await service.session_or_create(
        body.app_name, body.user_id, body.session_id, body.state
    )
    return Status(201 if created else 200, session)


@router.get("/sessions/{session_id}", response={200: Session, **ERRORS})
async def get_session(request: HttpRequest, session_id: str) -> Session:
    """The session (state with its todo list under ``todos``)."""
    await session_for_key(request, session_id)
    session = await ApiSessionService(api_actor(request)).get_session(session_id)
    if session is None:  # pragma: no cover (deleted meanwhile)
        raise ApiProblem(404, "session-not-found", f"session {session_id!r} not found")
    return session


@router.get("/sessions/{session_id}/events", response={200: EventsOut, **ERRORS})
async def list_events(request: HttpRequest, session_id: str) -> dict[str, list[Event]]:
    """The active events in conversation order (docs/runtime.md §2)."""
    await session_for_key(request, session_id)
    return {"events": await ApiSessionService(api_actor(request)).list_events(session_id)}


@router.post("/sessions/{session_id}/events", response={200: AppendOut, **ERRORS})
async def append_events(request: HttpRequest, session_id: str, body: AppendIn) -> dict[str, Any]:
    """Store a batch of complete events in one transaction and broadcast them; answers
    the stored ids. Events whose client keys were stored before are not stored again."""
    require_write(request)
    await session_for_key(request, session_id)
    items = [
        BatchItem(
            item.client_key,
            Event(
                session_id=session_id,
                turn_id=item.turn_id,
                author=item.author,
                content=item.content,
                finish_reason=item.finish_reason,
                usage=item.usage,
                state_delta=item.state_delta,
                pending_call_ids=tuple(item.pending_call_ids),
            ),
            item.created_at,
        )
        for item in body.events
    ]
    stored = await ApiSessionService(api_actor(request)).append_batch(session_id, items)
    return {"ids": [id_ for id_, _ in stored], "created_at": [at for _, at in stored]}


@router.delete("/sessions/{session_id}/events/{event_id}", response={204: None, **ERRORS})
async def delete_event(request: HttpRequest, session_id: str, event_id: int) -> Status[None]:
    """Soft-delete an event (it leaves the active history; the row stays)."""
    require_write(request)
    await session_for_key(request, session_id)
    await ApiSessionService(api_actor(request)).delete_event(session_id, event_id)
    return Status(204, None)


@router.post("/sessions/{session_id}/partials", response={202: None, **ERRORS})
async def publish_partials(request: HttpRequest, session_id: str, body: PartialsIn) -> Status[None]:
    """Stream partial events to the session's watchers; never stored."""
    require_write(request)
    await session_for_key(request, session_id)
    service = ApiSessionService(api_actor(request))
    for item in body.events:
        await service.publish_partial(
            Event(
                session_id=session_id,
                turn_id=item.turn_id,
                author=item.author,
                content=item.content,
                partial=True,
            )
        )
    return Status(202, None)


def _context(session_id: str) -> dict[str, Any]:
    turns, events = load_facts(session_id)
    explanation = explain_product_projection(session_id, turns, events).explanation
    _compacted, history = product_history(events, load_outcomes(session_id))
    issues = [
        IssueOut(turn_id=issue.turn_id, event_id=issue.event_id, tool_calls=list(issue.tool_calls))
        for issue in inspect_tool_protocol(history)
    ]
    error = explanation.error
    return {
        "context": [] if error is not None else list(explanation.context),
        "issues": issues,
        "error": str(error) if error is not None else None,
    }


@router.get("/sessions/{session_id}/context", response={200: ContextOut, **ERRORS})
async def get_context(request: HttpRequest, session_id: str) -> dict[str, Any]:
    """The context the next turn's agent would get (the product projection, docs/runtime.md
    §4) and the tool-protocol issues of the stored history (§5)."""
    await session_for_key(request, session_id)
    return await sync_to_async(_context)(session_id)


@router.post("/sessions/{session_id}/tool-outcomes", response={201: OutcomeOut, **ERRORS})
async def record_outcome(
    request: HttpRequest, session_id: str, body: OutcomeIn
) -> Status[models.ToolOutcome]:
    """Record what happened to an unanswered tool call (`sessions_app.outcomes`), noted
    as recorded via the API key."""
    require_write(request)
    session = await session_for_key(request, session_id)
    try:
        record = await sync_to_async(record_tool_outcome)(
            session,
            event_id=body.event_id,
            call_id=body.call_id,
            outcome=body.outcome,
            result=body.result,
            reason=body.reason,
            user=None,
            via=api_actor(request),
        )
    except OutcomeRejectedError as refused:
        raise ApiProblem(422, "outcome-rejected", str(refused)) from None
    return Status(201, record)


@router.get("/sessions/{session_id}/export", response={200: dict[str, Any], **ERRORS})
async def export_session(request: HttpRequest, session_id: str) -> StreamingHttpResponse:
    """The session as an ``agentops.session-export/1`` document
    (docs/session-export.schema.json), streamed (`export.views.export_response`)."""
    session = await session_for_key(request, session_id)
    return export_response(request, session, attachment=False)
