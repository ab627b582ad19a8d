"""Signals through which other apps keep the parts of a session this app does not own.

This app imports no other app of the project: the dependency runs one way. An app that
keeps rows per session (todos_app: the session's todo list, docs/runtime.md §7) connects
receivers to these signals in its `AppConfig.ready()`. Every signal is sent with
``sender=models.Session`` and, when the operation writes, inside that operation's
transaction: a receiver's writes land with it or not at all, and a receiver's exception
propagates to the caller and rolls the whole operation back (one transaction per
operation). Signals that ask for a value use the receivers' return values (`Signal.send`
returns ``[(receiver, value), ...]``); with no receiver connected the answer is "none".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.dispatch import Signal

__all__ = [
    "first_answer",
    "merged_answers",
    "parsed_session_written",
    "session_summary_requested",
    "session_todos_exported",
    "session_todos_requested",
    "session_todos_set",
]

session_todos_requested = Signal()
"""Sent when a session is read for the runtime (`DjangoSessionService.get_session`).

Keyword argument: ``session_id`` (str). A receiver returns the session's todo list as the
state value ``todos`` (``dump_todos`` form: ``[{content, status, active_form?}, ...]``),
or None when the session has none. The first list returned is served as
``state["todos"]``; the stored state never holds that key.
"""

session_todos_set = Signal()
"""Sent when a stored event's state delta sets ``todos`` (`DjangoSessionService.append_event`),
inside its transaction, after the event row is inserted.

Keyword arguments: ``session_id`` (str), ``items`` (the runtime `TodoItem`s, coerced per
docs/runtime.md §7), ``turn_id`` (str) and ``event_id`` (int: the stored event's id). A receiver
replaces the session's list with `items`. The key is not merged into `Session.state`.

Also sent by `DjangoSessionService.create_session` when the initial state holds ``todos``,
inside its transaction, with ``turn_id=""``, ``event_id=None`` and
``action="create_session"`` (absent otherwise: the change is a state delta).
"""

parsed_session_written = Signal()
"""Sent by the import writer (`write_parsed_session`) inside the import's transaction,
after the session, turns and events are inserted and before tool outcomes are.

Keyword arguments: ``session`` (the new `Session` row), ``parsed`` (the
`ParsedSession`: its ``todos``, ``todo_version``, ``todo_updated_at`` and ``todo_changes``
are for the receivers), ``event_ids`` (dict: exported event id -> stored event id) and
``user_ids`` (dict: username -> user id). The two maps are filled only for an agentops
export that carries todo changes or tool outcomes, else empty.
"""

session_todos_exported = Signal()
"""Sent while a session's export document is built (`build_export`).

Keyword argument: ``session`` (the `Session` row). A receiver returns the document's
``todo_list`` part (``{version, updated_at, items, changes}``, JSON-ready) or None when
the session has no list.
"""

session_summary_requested = Signal()
"""Sent when the sessions list's summary is built (`SessionQuerySet.with_summary`).

No keyword arguments. A receiver returns a dict of extra annotations (name -> query
expression correlated on the session through ``OuterRef("pk")``), e.g. the todo
progress ``todo_total`` / ``todo_done``.
"""


def first_answer(responses: Iterable[tuple[Any, Any]]) -> Any:
    """The first value other than None that a receiver returned (`Signal.send`'s result),
    or None when no receiver answered."""
    for _receiver, value in responses:
        if value is not None:
            return value
    return None


def merged_answers(responses: Iterable[tuple[Any, Any]]) -> dict[str, Any]:
    """The dicts the receivers returned (`Signal.send`'s result) merged in receiver order
    (None answers skipped); {} when no receiver answered."""
    merged: dict[str, Any] = {}
    for _receiver, value in responses:
        if value is not None:
            merged.update(value)
    return merged
