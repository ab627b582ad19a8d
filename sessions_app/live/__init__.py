"""Live sessions: watching a session as its turns run, and running turns in this process.

The room, module by module:

- `payloads`: the values sent to a session's channel-layer group (events, partial events,
  turns, stop requests) and the catch-up a resuming watcher reads from the database;
- `broadcast`: `LiveSessionService`, the session store that broadcasts as it stores;
- `outbox`: the per-session outbox it posts to, drained by a task of its own (a turn never
  waits for the channel layer or its watchers);
- `fanout`: one subscription per server process to each watched session, serving all of
  its sockets from one message per event; `watcher`: what one watcher is sent;
- `render`: the HTML frames watchers receive, made from those values by the page's own
  partials, once per process;
- `consumer` / `routing`: the websocket watchers connect to (gap-free resume);
- `revocation`: closing sockets whose watcher lost the right to watch; `layers`: Channels'
  in-memory layer without its scan of every channel on each message;
- `runs`: running turns as tasks of this process (`run_turn`, `start_turn`), the stop
  protocol (`request_stop`) and the agent factory (`get_agent`);
- `stuck`: dead turns (their owner is gone: recorded abandoned at once), stuck turns
  (owner alive but silent), *Stop* (`stop_turns`) and the recovery when a server starts;
- `views`: starting and stopping turns from the session page; `demo_live`: the
  always-running demo session; `groups`: group names and `broadcast`.

Other code uses ``from sessions_app import live`` and the names below.
"""

from __future__ import annotations

from sessions_app.live.broadcast import LiveSessionService
from sessions_app.live.payloads import (
    event_payloads_after,
    last_event_id,
    turn_payload,
    turn_payloads,
)
from sessions_app.live.runs import (
    RunHandle,
    get_agent,
    get_todo_store,
    owned_turn_ids,
    request_stop,
    run_turn,
    running_turn_ids,
    start_turn,
)
from sessions_app.live.stuck import (
    StopOutcome,
    active_turn_id,
    dead_turn_ids,
    recover_dead_turns,
    recover_everywhere,
    recover_on_first_call,
    stop_turns,
    stuck_turn_ids,
)

__all__ = [
    "LiveSessionService",
    "RunHandle",
    "StopOutcome",
    "active_turn_id",
    "dead_turn_ids",
    "event_payloads_after",
    "get_agent",
    "get_todo_store",
    "last_event_id",
    "owned_turn_ids",
    "recover_dead_turns",
    "recover_everywhere",
    "recover_on_first_call",
    "request_stop",
    "run_turn",
    "running_turn_ids",
    "start_turn",
    "stop_turns",
    "stuck_turn_ids",
    "turn_payload",
    "turn_payloads",
]
