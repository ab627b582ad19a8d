"""The client's HTTP layer: one `httpx.AsyncClient`, retries, problems to named errors."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from agentops.client.errors import RemoteStoreError, StoreUnreachableError
from agentops.runtime import errors

__all__ = ["ApiTransport", "raise_for_problem"]

#: Requests are retried on these (every request of the client is safe to retry: event
#: batches carry client keys, begins and creates are idempotent, finalize checks).
_RETRY_STATUSES = frozenset({502, 503, 504})


def raise_for_problem(status: int, problem: dict[str, Any]) -> None:
    """Raise the runtime's named error for a problem the server answered, else a
    `RemoteStoreError`."""
    slug = str(problem.get("type", "")).rpartition(":")[2]
    if slug == "session-not-found":
        raise errors.SessionNotFoundError(str(problem.get("session_id", "")))
    if slug == "turn-not-found":
        raise errors.TurnNotFoundError(str(problem.get("turn_id", "")))
    if slug == "turn-state-conflict":
        raise errors.TurnStateConflictError(
            str(problem.get("turn_id", "")), str(problem.get("turn_status", ""))
        )
    if slug == "invalid-turn":
        raise errors.InvalidTurnError(str(problem.get("turn_id", "")), str(problem.get("problem")))
    if slug == "invalid-outcome":
        raise errors.InvalidOutcomeError(
            str(problem.get("turn_status", "")),
            str(problem.get("reason", "")),
            str(problem.get("detail", "")),
        )
    raise RemoteStoreError(status, problem)


class ApiTransport:
    """Requests to ``<base_url>/api/v1`` with the bearer key.

    Connection failures are retried by httpx's transport (`retries`); a read error or a
    502/503/504 answer is retried here, `retries` times with a short growing pause. When
    the server stays unreachable: `StoreUnreachableError`.
    """

    def __init__(
        self, base_url: str, api_key: str, *, timeout: float = 30.0, retries: int = 3
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self._client = httpx.AsyncClient(
            base_url=f"{self.base_url}/api/v1",
            headers={"Authorization": f"Bearer {api_key}", "Accept": "application/json"},
            timeout=timeout,
            transport=httpx.AsyncHTTPTransport(retries=retries),
        )

    async def aclose(self) -> None:
        """Close the connections."""
        await self._client.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        ok: tuple[int, ...] = (200,),
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any, int]:
        """(status, decoded body or None, attempts made) of a request whose status is in
        `ok` or 404; another error answer raises (`raise_for_problem`)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._client.request(method, path, json=json, headers=headers)
            except (httpx.TransportError, httpx.TimeoutException) as failed:
                if attempt > self.retries:
                    raise StoreUnreachableError(self.base_url, type(failed).__name__) from None
                await asyncio.sleep(0.2 * attempt)
                continue
            if response.status_code in _RETRY_STATUSES and attempt <= self.retries:
                await asyncio.sleep(0.2 * attempt)
                continue
            body = response.json() if response.content else None
            if response.status_code in ok or response.status_code == 404:
                return response.status_code, body, attempt
            raise_for_problem(response.status_code, body if isinstance(body, dict) else {})
