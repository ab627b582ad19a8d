"""`RemoteSessionService`: the runtime's store protocols over the HTTP API (docs/runtime.md §2).

Each method is one request to ``/api/v1/`` (docs/interfaces.md); the server stores through
its broadcasting store, so the dashboard's watchers see a remote run live. Retrying is safe:
each appended event carries a client key (a retried batch is stored once), a repeated begin
or create answers what exists. `run_lock` is the session's run lease: acquired (waiting
while another runner holds it), renewed in the background while held, released on exit;
if this process dies, the lease expires and the server records the turn abandoned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from pydantic import TypeAdapter

from agentops.client.errors import LeaseLostError, RemoteStoreError
from agentops.client.http import ApiTransport
from agentops.runtime import errors
from agentops.runtime.model import Event
from agentops.runtime.session import (
    Session,
    Turn,
    TurnOutcome,
    TurnReason,
    TurnStatus,
    validate_outcome,
)

__all__ = ["RemoteSessionService"]

logger = logging.getLogger(__name__)

_EVENTS = TypeAdapter(list[Event])
_TURNS = TypeAdapter(list[Turn])


def _q(value: str) -> str:
    return quote(value, safe="")


class RemoteSessionService:
    """`SessionService` + `TurnStore` + `RunLock` over the agentops HTTP API.

    `base_url`: the dashboard (e.g. ``http://127.0.0.1:8000``); `api_key`: a read-write key
    (``manage.py api_key create NAME``). `lease_ttl`: seconds a run lease lives unless
    renewed (renewed every third of it); `lease_wait`: seconds one acquire request waits
    server-side before the client asks again. Raises the runtime's named errors, and
    `StoreUnreachableError` when the server cannot be reached.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        lease_ttl: float = 15.0,
        lease_wait: float = 5.0,
        holder: str = "",
        timeout: float = 30.0,
        retries: int = 3,
    ) -> None:
        self.http = ApiTransport(base_url, api_key, timeout=timeout, retries=retries)
        self.lease_ttl = lease_ttl
        self.lease_wait = lease_wait
        self.holder = holder
        #: Lease ids held by this service, by session id.
        self.leases: dict[str, str] = {}

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self.http.aclose()

    async def __aenter__(self) -> RemoteSessionService:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- sessions and events -------------------------------------------------------------

    async def create_session(
        self,
        app_name: str,
        user_id: str = "",
        *,
        session_id: str | None = None,
        state: dict[str, Any] | None = None,
    ) -> Session:
        """Create a session (id: a new UUID4 hex when None); an existing id -> ValueError."""
        body = {
            "app_name": app_name,
            "user_id": user_id,
            "session_id": session_id or uuid.uuid4().hex,
            "state": dict(state or {}),
        }
        status, answer, attempts = await self.http.request(
            "POST", "/sessions", json=body, ok=(200, 201)
        )
        if status == 404:  # another app's session (hidden from this key)
            raise ValueError(f"session {session_id!r} already exists")
        if status == 200 and attempts == 1:  # it existed before this call
            raise ValueError(f"session {session_id!r} already exists")
        return Session.model_validate(answer)

    async def get_session(self, session_id: str) -> Session | None:
        """The session, or None."""
        status, answer, _ = await self.http.request("GET", f"/sessions/{_q(session_id)}")
        return None if status == 404 else Session.model_validate(answer)

    async def list_events(self, session_id: str) -> list[Event]:
        """Active events in conversation order; unknown session -> SessionNotFoundError."""
        answer = await self._get_or_raise(f"/sessions/{_q(session_id)}/events", session_id)
        return _EVENTS.validate_python(answer["events"])

    async def append_event(self, event: Event) -> Event:
        """Store a complete event (a batch of one with a fresh client key, so a retry
        stores it once); returns the stored copy. Partial -> InvalidEventError."""
        if event.partial:
            raise errors.InvalidEventError(event.session_id, "partial events are never stored")
        item = event.model_dump(
            mode="json", include={"turn_id", "author", "content", "finish_reason", "usage",
                                  "state_delta", "pending_call_ids"},
        )  # fmt: skip
        item["client_key"] = uuid.uuid4().hex
        path = f"/sessions/{_q(event.session_id)}/events"
        status, answer, _ = await self.http.request("POST", path, json={"events": [item]})
        if status == 404:
            raise errors.SessionNotFoundError(event.session_id)
        at = datetime.fromisoformat(answer["created_at"][0]).astimezone(UTC)
        return event.model_copy(update={"id": answer["ids"][0], "created_at": at, "updated_at": at})

    async def publish_partial(self, event: Event) -> None:
        """Stream a partial event to the session's watchers (never stored)."""
        item = event.model_dump(mode="json", include={"turn_id", "author", "content"})
        path = f"/sessions/{_q(event.session_id)}/partials"
        await self.http.request("POST", path, json={"events": [item]}, ok=(202,))

    async def delete_event(self, session_id: str, event_id: int) -> None:
        """Soft-delete an event; no such active event -> EventNotFoundError."""
        path = f"/sessions/{_q(session_id)}/events/{event_id}"
        status, _, _ = await self.http.request("DELETE", path, ok=(204,))
        if status == 404:
            raise errors.EventNotFoundError(session_id, event_id)

    async def _get_or_raise(self, path: str, session_id: str) -> Any:
        status, answer, _ = await self.http.request("GET", path)
        if status == 404:
            raise errors.SessionNotFoundError(session_id)
        return answer

    # -- turns ---------------------------------------------------------------------------

    async def begin_turn(self, session_id: str, turn: Turn) -> Turn:
        """Record a new running turn (docs/runtime.md §2); covered by this service's lease
        on the session when it holds one."""
        if not turn.id:
            raise errors.InvalidTurnError(turn.id, "a turn needs an id")
        if turn.session_id != session_id:
            raise errors.InvalidTurnError(
                turn.id, f"turn belongs to session {turn.session_id!r}, not {session_id!r}"
            )
        if turn.status is not TurnStatus.RUNNING:
            raise errors.InvalidTurnError(turn.id, f"a new turn must be running, not {turn.status}")
        body = {
            "turn_id": turn.id,
            "started_at": turn.started_at.isoformat(),
            "lease_id": self.leases.get(session_id, ""),
        }
        path = f"/sessions/{_q(session_id)}/turns"
        status, answer, attempts = await self.http.request("POST", path, json=body, ok=(200, 201))
        if status == 404:
            raise errors.SessionNotFoundError(session_id)
        if status == 200 and attempts == 1:  # it existed before this call
            raise errors.InvalidTurnError(turn.id, "a turn with this id already exists")
        return Turn.model_validate(answer)

    async def finalize_turn(self, turn_id: str, outcome: TurnOutcome) -> Turn:
        """Move a running turn to `outcome` (checked first by `validate_outcome`). The
        failure message is sent as safe: the runtime's classifiers only produce safe
        messages (docs/runtime.md §6)."""
        validate_outcome(outcome)
        failure = outcome.failure
        body: dict[str, Any] = {"status": outcome.status.value, "reason": outcome.reason.value}
        if failure is not None:
            body["failure"] = {
                "code": failure.code, "stage": failure.stage, "message": failure.message,
                "message_safe": True,
            }  # fmt: skip
        path = f"/turns/{_q(turn_id)}/finalize"
        try:
            status, answer, _ = await self.http.request("POST", path, json=body)
        except errors.TurnStateConflictError:
            current = await self.get_turn(turn_id)
            if current is not None and current.outcome == outcome:  # our retried request
                return current
            raise
        if status == 404:
            raise errors.TurnNotFoundError(turn_id)
        return Turn.model_validate(answer)

    async def get_turn(self, turn_id: str) -> Turn | None:
        """The turn, or None."""
        status, answer, _ = await self.http.request("GET", f"/turns/{_q(turn_id)}")
        return None if status == 404 else Turn.model_validate(answer)

    async def list_turns(self, session_id: str) -> list[Turn]:
        """The session's turns by start, then id ([] for an unknown session)."""
        status, answer, _ = await self.http.request("GET", f"/sessions/{_q(session_id)}/turns")
        return [] if status == 404 else _TURNS.validate_python(answer["turns"])

    async def interrupt_running_turns(self, session_id: str, reason: TurnReason) -> list[Turn]:
        """Mark every running turn of the session interrupted with `reason`; return them."""
        path = f"/sessions/{_q(session_id)}/interrupt"
        status, answer, _ = await self.http.request("POST", path, json={"reason": reason.value})
        if status == 404:
            raise errors.SessionNotFoundError(session_id)
        return _TURNS.validate_python(answer["turns"])

    # -- run lock: the session's run lease -----------------------------------------------

    def run_lock(
        self, app_name: str, user_id: str, session_id: str
    ) -> AbstractAsyncContextManager[None]:
        """Hold the session's run lease (docs/interfaces.md): wait while another runner
        holds it, renew it in the background, release it on exit. Waiting is cancellable
        (the lease is then not held)."""
        return self._lease(session_id)

    @asynccontextmanager
    async def _lease(self, session_id: str) -> AsyncIterator[None]:
        lease_id = secrets.token_urlsafe(18)
        try:
            await self._acquire(session_id, lease_id)
        except BaseException:
            # A cancelled wait may have been granted server-side: give it back.
            await asyncio.shield(self._release(session_id, lease_id))
            raise
        self.leases[session_id] = lease_id
        renewer = asyncio.create_task(self._renew_forever(session_id, lease_id))
        try:
            yield
        finally:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            self.leases.pop(session_id, None)
            await asyncio.shield(self._release(session_id, lease_id))

    async def _acquire(self, session_id: str, lease_id: str) -> None:
        body = {
            "ttl_seconds": self.lease_ttl, "wait_seconds": self.lease_wait,
            "lease_id": lease_id, "holder": self.holder,
        }  # fmt: skip
        path = f"/sessions/{_q(session_id)}/lease"
        while True:
            try:
                status, _, _ = await self.http.request("POST", path, json=body, ok=(201,))
            except RemoteStoreError as refused:
                if refused.slug == "session-leased":
                    continue  # still held: ask again (each request waited lease_wait)
                raise
            if status == 404:
                raise errors.SessionNotFoundError(session_id)
            return

    async def _renew_forever(self, session_id: str, lease_id: str) -> None:
        path = f"/sessions/{_q(session_id)}/lease/{_q(lease_id)}"
        while True:
            await asyncio.sleep(self.lease_ttl / 3)
            try:
                await self.http.request("PUT", path, json={"ttl_seconds": self.lease_ttl})
            except RemoteStoreError as failed:
                if failed.slug == "lease-lost":
                    logger.error("%s", LeaseLostError(session_id, lease_id))
                    return
                logger.warning("renewing lease of %s failed: %s", session_id, failed)
            except Exception as failed:  # keep trying while the run goes on
                logger.warning("renewing lease of %s failed: %s", session_id, failed)

    async def _release(self, session_id: str, lease_id: str) -> None:
        path = f"/sessions/{_q(session_id)}/lease/{_q(lease_id)}"
        try:
            await self.http.request("DELETE", path, ok=(204,))
        except Exception as failed:  # the lease then expires on its own
            logger.warning("releasing lease of %s failed: %s", session_id, failed)
