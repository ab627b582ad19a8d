"""The peer's side of `bench append`: google-adk's `DatabaseSessionService.append_event`.

Standalone: run by the python of google-adk's own virtual environment, where this project
is not installed, so it imports nothing from it:
``python adk_append_peer.py DB_PATH EVENTS_JSON WAL``. DB_PATH: a SQLite file
(``sqlite+aiosqlite``); EVENTS_JSON: the same JSON list of runtime event dumps our side
appends, converted here to ADK events; WAL: ``1`` for our pragmas (WAL,
synchronous=NORMAL), ``0`` for the peer's defaults. It creates one session, prints
``{"ready": true}`` and answers the same commands on stdin as our side
(`append_child.commands`, one a line): N appends the next N events (cycling), one
`append_event` each, and prints ``{"events": N, "seconds": S}``; ``end`` prints
``{"stored": COUNT}`` and exits.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.adk.events import Event, EventActions
from google.adk.sessions import DatabaseSessionService
from google.genai import types


def to_adk(row: dict[str, Any]) -> Event:
    """The ADK event for one runtime event dump: text, tool calls and tool results as
    parts; user and tool messages as role ``user``, the rest as ``model``."""
    content = row["content"]
    parts: list[Any] = []
    if content.get("text"):
        parts.append(types.Part(text=content["text"]))
    for call in content.get("tool_calls") or ():
        parts.append(
            types.Part(
                function_call=types.FunctionCall(
                    id=call["id"], name=call["name"], args=call.get("arguments") or {}
                )
            )
        )
    response = content.get("tool_response")
    if response:
        parts.append(
            types.Part(
                function_response=types.FunctionResponse(
                    id=response["tool_call_id"],
                    name=response["name"],
                    response={"result": response.get("result")},
                )
            )
        )
    if content.get("tool_call_id") and not response:
        parts.append(
            types.Part(
                function_response=types.FunctionResponse(
                    id=content["tool_call_id"],
                    name="tool",
                    response={"result": content.get("text")},
                )
            )
        )
    role = "user" if content["role"] in ("user", "tool") else "model"
    return Event(
        invocation_id=row["turn_id"] or "inv",
        author=row.get("author") or role,
        content=types.Content(role=role, parts=parts),
        actions=EventActions(state_delta=dict(row.get("state_delta") or {})),
    )


def session_service(path: str, wal: bool) -> Any:
    """The peer's database session service on SQLite file `path`; with `wal`, every
    connection first sets journal_mode=WAL and synchronous=NORMAL."""
    url = f"sqlite+aiosqlite:///{path}"
    if not wal:
        return DatabaseSessionService(db_url=url)
    from sqlalchemy import event as sa_event
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)

    def pragmas(dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    sa_event.listen(engine.sync_engine, "connect", pragmas)
    return DatabaseSessionService(db_engine=engine)


def main(argv: Sequence[str] | None = None) -> None:
    """Serve the commands (see the module); argv: ``[DB_PATH, EVENTS_JSON, WAL]``."""
    path, source, wal = sys.argv[1:] if argv is None else argv
    rows = json.loads(Path(source).read_text(encoding="utf-8"))
    loop = asyncio.new_event_loop()
    service = session_service(path, wal == "1")
    session = loop.run_until_complete(service.create_session(app_name="bench", user_id="u"))
    events = [to_adk(row) for row in rows]
    position = 0
    stored = 0

    async def append(count: int) -> float:
        nonlocal position, stored
        batch = [events[(position + i) % len(events)] for i in range(count)]
        position += count
        # ADK events carry their own ids: a copy per append, made before the clock starts.
        batch = [event.model_copy(update={"id": Event.new_id()}) for event in batch]
        start = time.perf_counter()
        for event in batch:
            await service.append_event(session, event)
        stored += count
        return time.perf_counter() - start

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if line.strip() == "end":
            break
        count = int(line)
        seconds = loop.run_until_complete(append(count))
        print(json.dumps({"events": count, "seconds": seconds}), flush=True)
    print(json.dumps({"stored": stored}), flush=True)


if __name__ == "__main__":
    main()
