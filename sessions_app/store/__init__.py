"""The session store: the runtime's store protocols on the Django models (docs/runtime.md §2).

- `service`: `DjangoSessionService` (`SessionService` + `TurnStore` + `RunLock`).
- `rows`: rows <-> runtime values (`Event`, `Session`, `Turn`); the only translation.
- `columns`: the stored columns of events and turns, read from the models.
- `run_lock`: advisory lock on PostgreSQL, an OS file lock per session elsewhere (both die
  with their holder).
- `resume`: a session's facts as runtime values and its resume status (full recomputation).
- `resume_delta`: the resume status kept current on append, finalize and interrupt.
"""

from __future__ import annotations

from sessions_app.store.columns import (
    EVENT_COLUMNS,
    EVENT_INSERT_COLUMNS,
    EVENT_RUNTIME_COLUMNS,
    TURN_COLUMNS,
    json_row,
)
from sessions_app.store.resume import (
    ProtocolFacts,
    load_archived_events,
    load_facts,
    orphan_count,
    protocol_events,
    refresh_resume_status,
    resume_status,
)
from sessions_app.store.rows import (
    TurnRecord,
    UnreadableRowError,
    event_from_row,
    event_from_values,
    row_fields_from_event,
    session_from_row,
    turn_from_record,
    turn_from_row,
)
from sessions_app.store.run_lock import advisory_lock_key, postgres_conninfo
from sessions_app.store.service import DjangoSessionService

__all__ = [
    "EVENT_COLUMNS",
    "EVENT_INSERT_COLUMNS",
    "EVENT_RUNTIME_COLUMNS",
    "TURN_COLUMNS",
    "DjangoSessionService",
    "ProtocolFacts",
    "TurnRecord",
    "UnreadableRowError",
    "advisory_lock_key",
    "event_from_row",
    "event_from_values",
    "json_row",
    "load_archived_events",
    "load_facts",
    "orphan_count",
    "postgres_conninfo",
    "protocol_events",
    "refresh_resume_status",
    "resume_status",
    "row_fields_from_event",
    "session_from_row",
    "turn_from_record",
    "turn_from_row",
]
