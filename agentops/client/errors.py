"""Errors of the remote store client, named like the runtime's (docs/runtime.md errors).

Answers the server gives for the runtime's own errors are raised as those errors
(`SessionNotFoundError`, `TurnStateConflictError`, ...); these are the client's own.
Messages hold ids, statuses and the server's one-line detail, never the API key.
"""

from __future__ import annotations

from typing import Any

from agentops.runtime.errors import AgentOpsRuntimeError

__all__ = ["LeaseLostError", "RemoteStoreError", "StoreUnreachableError"]


class RemoteStoreError(AgentOpsRuntimeError):
    """The server answered a request with an error the runtime has no name for.

    `status`: the HTTP status; `problem`: the problem+json body (type, title, detail, ...).
    """

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        self.status = status
        self.problem = problem
        detail = str(problem.get("detail") or problem.get("title") or "no detail")[:300]
        super().__init__(f"the agentops server answered {status}: {detail}")

    @property
    def slug(self) -> str:
        """The problem's name (the part after ``urn:agentops:problem:``)."""
        return str(self.problem.get("type", "")).rpartition(":")[2]


class StoreUnreachableError(AgentOpsRuntimeError, ConnectionError):
    """The server at `base_url` could not be reached (after the retries)."""

    def __init__(self, base_url: str, cause: str) -> None:
        self.base_url = base_url
        super().__init__(f"agentops server {base_url} is unreachable: {cause}")


class LeaseLostError(AgentOpsRuntimeError):
    """The run lease `lease_id` of session `session_id` expired before it was renewed."""

    def __init__(self, session_id: str, lease_id: str) -> None:
        self.session_id = session_id
        self.lease_id = lease_id
        super().__init__(f"run lease {lease_id!r} of session {session_id!r} was lost")
