"""The remote store client: the runtime's store protocols over the HTTP API.

`RemoteSessionService(base_url, api_key)` implements `SessionService`, `TurnStore` and
`RunLock` (docs/runtime.md §2) by calling the dashboard's ``/api/v1/`` (docs/interfaces.md),
so the runtime's `Runner` runs unchanged in any process::

    runner = Runner(agent, RemoteSessionService("http://127.0.0.1:8000", key))

Framework-free like the runtime: it imports no Django (httpx, pydantic, the runtime).

- `remote`: `RemoteSessionService`;
- `todos`: `RemoteTodoStore`, the todo tools' store on the dashboard's rows;
- `http`: the transport (retries, problems to the runtime's named errors);
- `errors`: `RemoteStoreError`, `StoreUnreachableError`, `LeaseLostError`.
"""

from __future__ import annotations

from agentops.client.errors import LeaseLostError, RemoteStoreError, StoreUnreachableError
from agentops.client.remote import RemoteSessionService
from agentops.client.todos import RemoteTodoStore

__all__ = [
    "LeaseLostError",
    "RemoteSessionService",
    "RemoteStoreError",
    "RemoteTodoStore",
    "StoreUnreachableError",
]
