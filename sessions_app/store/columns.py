"""The stored columns of events and turns, read once from the models.

The models' field declarations are the one definition of what an event or a turn
stores; these lists are read from them (`Model._meta`, declaration order) for the code
that names columns: the service's queries (`EVENT_RUNTIME_COLUMNS`), the import writer's
INSERT (`EVENT_INSERT_COLUMNS`, `TURN_COLUMNS`) and the export (`json_row`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import models as django_models

from sessions_app import models

__all__ = [
    "EVENT_COLUMNS",
    "EVENT_DERIVED_COLUMNS",
    "EVENT_INSERT_COLUMNS",
    "EVENT_PRODUCT_COLUMNS",
    "EVENT_RUNTIME_COLUMNS",
    "TURN_COLUMNS",
    "TURN_RUN_COLUMNS",
    "column_names",
    "json_row",
]


def column_names(model: type[django_models.Model]) -> tuple[str, ...]:
    """The attribute names of `model`'s stored columns, in declaration order (a foreign
    key by its column attribute, e.g. ``session_id``)."""
    return tuple(field.attname for field in model._meta.concrete_fields)


#: Event columns derived from the others as events are written, never imported nor
#: exported (`store.page_facts` keeps them: the tool-protocol inspector's verdicts).
EVENT_DERIVED_COLUMNS = models.EVENT_DERIVED_FIELDS

#: Every stored column of an event (`models.Event`) but the derived ones.
EVENT_COLUMNS = tuple(c for c in column_names(models.Event) if c not in EVENT_DERIVED_COLUMNS)

#: Event columns the runtime's `Event` has no field for: the importer's bookkeeping
#: (source id, raw source records) and soft deletion / archiving.
EVENT_PRODUCT_COLUMNS = ("source_id", "raw", "deleted_at", "archived_at")

#: The event columns a runtime `Event` is built from (`rows.event_from_values`).
EVENT_RUNTIME_COLUMNS = tuple(c for c in EVENT_COLUMNS if c not in EVENT_PRODUCT_COLUMNS)

#: The event columns an INSERT names: all but the id, which the database assigns in
#: insertion order (so id order is conversation order, docs/runtime.md §1).
EVENT_INSERT_COLUMNS = tuple(c for c in EVENT_COLUMNS if c != "id")

#: Turn columns of a live run's bookkeeping (its owner's lease, who stopped it): written
#: by the store while a turn runs, never imported nor exported (database defaults).
TURN_RUN_COLUMNS = ("owner_host", "owner_pid", "lease_until", "stopped_by")

#: The stored columns of a turn's record (`models.Turn`), as imported and exported.
TURN_COLUMNS = tuple(c for c in column_names(models.Turn) if c not in TURN_RUN_COLUMNS)


def json_row(row: django_models.Model, columns: tuple[str, ...]) -> dict[str, Any]:
    """`{column: value}` of `row` for `columns` (in that order), JSON-ready: datetimes as
    ISO 8601 strings (UTC as stored), None and JSON column values as they are."""
    values: dict[str, Any] = {}
    for name in columns:
        value = getattr(row, name)
        values[name] = value.isoformat() if isinstance(value, datetime) else value
    return values
