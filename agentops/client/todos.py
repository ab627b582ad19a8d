"""`RemoteTodoStore`: the runtime's `TodoStore` (docs/runtime.md §7) over the HTTP API.

Reads GET ``/sessions/{id}/todos``; a change reads the list and its version, applies the
change and PUTs the new list with ``If-Match: "<version>"``; when another writer changed
the list in between (412), it reads again and re-applies, so concurrent updates are never
lost. On the server each write is versioned, audited as the API key, and broadcast.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar
from urllib.parse import quote

from agentops.client.errors import RemoteStoreError
from agentops.client.http import ApiTransport
from agentops.runtime import errors
from agentops.runtime.todos import TodoCallContext, TodoItem, coerce_todos, dump_todos

__all__ = ["RemoteTodoStore"]

T = TypeVar("T")

#: How many times a change is re-applied after concurrent writers won.
_MAX_TRIES = 20


class RemoteTodoStore:
    """`TodoStore` on the dashboard's todo rows, through the API transport `http`
    (e.g. ``RemoteTodoStore(remote_service.http)``)."""

    def __init__(self, http: ApiTransport) -> None:
        self.http = http

    async def _read(self, session_id: str) -> tuple[list[TodoItem], int]:
        status, answer, _ = await self.http.request(
            "GET", f"/sessions/{quote(session_id, safe='')}/todos"
        )
        if status == 404:
            raise errors.SessionNotFoundError(session_id)
        return coerce_todos(answer["items"]), int(answer["version"])

    async def read_todos(self, session_id: str) -> list[TodoItem]:
        """The session's list; unknown session -> SessionNotFoundError."""
        items, _version = await self._read(session_id)
        return items

    async def modify_todos(
        self,
        session_id: str,
        change: Callable[[list[TodoItem]], tuple[list[TodoItem], T]],
        *,
        context: TodoCallContext | None = None,
    ) -> T:
        """Apply ``change(current) -> (new_items, result)`` as one versioned write
        (compare-and-swap on the list's version, retried on a conflict); returns result."""
        path = f"/sessions/{quote(session_id, safe='')}/todos"
        for _attempt in range(_MAX_TRIES):
            items, version = await self._read(session_id)
            new, result = change(list(items))
            try:
                await self.http.request(
                    "PUT", path, json={"items": dump_todos(new)},
                    headers={"If-Match": f'"{version}"'},
                )  # fmt: skip
            except RemoteStoreError as refused:
                if refused.status == 412:
                    continue
                raise
            return result
        raise RemoteStoreError(412, {"detail": f"todo list of {session_id!r} kept changing"})
