"""Operations on turns and run leases: /api/v1/sessions/{id}/turns, /api/v1/turns/{id},
/api/v1/sessions/{id}/interrupt and /api/v1/sessions/{id}/lease.

Outcomes are checked by the runtime's `validate_outcome` inside the store's
`finalize_turn` (docs/runtime.md §2); a failure message is stored only when the client
marks it safe (docs/runtime.md §6).
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest
from django.utils import timezone
from ninja import Router, Status

from agentops.runtime.session import Turn, TurnFailure, TurnOutcome
from sessions_app import models
from sessions_app.api import lease
from sessions_app.api.auth import api_actor, key_of, require_write, session_for_key
from sessions_app.api.ledger import ApiSessionService
from sessions_app.api.problems import ApiProblem
from sessions_app.api.schemas import (
    FinalizeIn,
    InterruptIn,
    LeaseIn,
    LeaseOut,
    RenewIn,
    TurnIn,
    TurnsOut,
)
from sessions_app.api.sessions import ERRORS

__all__ = ["router"]

router = Router(tags=["turns"])


@router.get("/sessions/{session_id}/turns", response={200: TurnsOut, **ERRORS})
async def list_turns(request: HttpRequest, session_id: str) -> dict[str, list[Turn]]:
    """The session's turns by start, then id."""
    await session_for_key(request, session_id)
    return {"turns": await ApiSessionService(api_actor(request)).list_turns(session_id)}


@router.post("/sessions/{session_id}/turns", response={200: Turn, 201: Turn, **ERRORS})
async def begin_turn(request: HttpRequest, session_id: str, body: TurnIn) -> Status[Turn]:
    """Begin a running turn (docs/runtime.md §2), noted as begun via the caller's key: 201.
    A repeat of the same begin (same id, session and start; still running) answers the
    turn with 200, so a client can tell its own retry from a duplicate id. While a run
    lease is held on the session, `lease_id` must be it (409 otherwise)."""
    require_write(request)
    await session_for_key(request, session_id)
    started = body.started_at or timezone.now()
    turn = Turn(id=body.turn_id, session_id=session_id, started_at=started)
    service = ApiSessionService(api_actor(request))
    begun, created = await service.begin_attributed_turn(session_id, turn, body.lease_id)
    return Status(201 if created else 200, begun)


async def _turn_session(request: HttpRequest, turn_id: str) -> str:
    """The session id of turn `turn_id` when the caller may see it; 404 otherwise."""
    session_id = await sync_to_async(
        models.Turn.objects.filter(pk=turn_id).values_list("session_id", flat=True).first
    )()
    if session_id is None:
        raise ApiProblem(
            404, "turn-not-found", f"turn {turn_id[:200]!r} not found", turn_id=turn_id
        )
    try:
        await session_for_key(request, session_id)
    except ApiProblem:
        raise ApiProblem(
            404, "turn-not-found", f"turn {turn_id[:200]!r} not found", turn_id=turn_id
        ) from None
    return session_id


@router.get("/turns/{turn_id}", response={200: Turn, **ERRORS})
async def get_turn(request: HttpRequest, turn_id: str) -> Turn:
    """The turn."""
    await _turn_session(request, turn_id)
    turn = await ApiSessionService(api_actor(request)).get_turn(turn_id)
    if turn is None:  # pragma: no cover (deleted meanwhile)
        raise ApiProblem(404, "turn-not-found", f"turn {turn_id!r} not found", turn_id=turn_id)
    return turn


@router.post("/turns/{turn_id}/finalize", response={200: Turn, **ERRORS})
async def finalize_turn(request: HttpRequest, turn_id: str, body: FinalizeIn) -> Turn:
    """Move the running turn to a terminal outcome (docs/runtime.md §2): 422 for an
    outcome `validate_outcome` refuses, 409 (with `turn_status`) when already terminal."""
    require_write(request)
    await _turn_session(request, turn_id)
    failure = None
    if body.failure is not None:
        message = body.failure.message if body.failure.message_safe else ""
        failure = TurnFailure(code=body.failure.code, stage=body.failure.stage, message=message)
    outcome = TurnOutcome(status=body.status, reason=body.reason, failure=failure)
    service = ApiSessionService(api_actor(request))
    service.finish_time = body.finished_at
    return await service.finalize_turn(turn_id, outcome)


@router.post("/sessions/{session_id}/interrupt", response={200: TurnsOut, **ERRORS})
async def interrupt_turns(
    request: HttpRequest, session_id: str, body: InterruptIn
) -> dict[str, list[Turn]]:
    """Record every running turn of the session interrupted with `reason`; answers them."""
    require_write(request)
    await session_for_key(request, session_id)
    service = ApiSessionService(api_actor(request))
    return {"turns": await service.interrupt_running_turns(session_id, body.reason)}


def _lease_out(grant: lease.Grant) -> dict[str, Any]:
    return {
        "lease_id": grant.lease_id,
        "expires_at": grant.expires_at,
        "ttl_seconds": grant.ttl_seconds,
    }


@router.post("/sessions/{session_id}/lease", response={201: LeaseOut, **ERRORS})
async def acquire_lease(
    request: HttpRequest, session_id: str, body: LeaseIn
) -> Status[dict[str, Any]]:
    """Acquire the session's run lease (waiting up to `wait_seconds`); 409 names the
    holder and the expiry when it stays held."""
    key = require_write(request)
    await session_for_key(request, session_id)
    holder = key.label + (f" ({body.holder})" if body.holder else "")
    grant = await lease.acquire_lease(
        session_id,
        ttl=body.ttl_seconds,
        wait=body.wait_seconds,
        holder=holder,
        key=key_of(request),
        lease_id=body.lease_id,
    )
    return Status(201, _lease_out(grant))


@router.put("/sessions/{session_id}/lease/{lease_id}", response={200: LeaseOut, **ERRORS})
async def renew_lease(
    request: HttpRequest, session_id: str, lease_id: str, body: RenewIn
) -> dict[str, Any]:
    """Renew the lease for `ttl_seconds` from now; 409 "lease-lost" once it expired."""
    require_write(request)
    await session_for_key(request, session_id)
    return _lease_out(await lease.renew_lease(session_id, lease_id, body.ttl_seconds))


@router.delete("/sessions/{session_id}/lease/{lease_id}", response={204: None, **ERRORS})
async def release_lease(request: HttpRequest, session_id: str, lease_id: str) -> Status[None]:
    """Release the lease (no effect when it is not held)."""
    require_write(request)
    await session_for_key(request, session_id)
    await lease.release_lease(session_id, lease_id)
    return Status(204, None)
