"""Credential redaction: ONE pipeline for everything stored or shown, whatever the source.

Where it runs (docs/concepts.md, "Redaction"):

- every importer: `redact_parse_result` on each parsed file before anything is written
  (`sessions_app.ingest.files.parse_file`), titles redacted before they are cut
  (`normalise.first_line`, `builder.SessionBuilder.build`), file paths as stored
  (`writer.stored_path`, `ImportedFile.path`);
- the runtime's own events: `redact_event_fields` in the Django store's append path
  (`sessions_app.store.service`, setting ``AGENTOPS_REDACT_RUNTIME_EVENTS``, on by
  default), also the session state it creates and turn failure messages;
- todo items and their audit before/after: `redact_todo_items` in
  `todos_app.services.change_todos` (agents' tools, state deltas, people's edits);
- every export document, again on the way out (`sessions_app.export`).

What it replaces: a secret in text becomes ``[REDACTED:<kind>]`` (kind: a snake_case
name such as ``github_token``, ``password``, ``authorization``); inside an id (session
id, user id, app name, turn id) it becomes ``REDACTED-<kind>``, so the id stays stable
and URL-safe. A value is replaced whole, never partly; redacting is idempotent.

Modules: `prefilter` (the cheap test every rule is sound against), `rules` (key names
and the finders: detect-secrets' detectors, extra value shapes, keyword-anchored rules),
`core` (one string or JSON value), `records` (a parsed session, a runtime event, todos).
"""

from __future__ import annotations

from sessions_app.ingest.redaction.core import (
    redact_id,
    redact_path,
    redact_text,
    redact_value,
    redact_values,
    secret_spans,
)
from sessions_app.ingest.redaction.prefilter import might_hold_secret
from sessions_app.ingest.redaction.records import (
    redact_event_fields,
    redact_parse_result,
    redact_parsed_event,
    redact_parsed_session,
    redact_parsed_turn,
    redact_todo_items,
    session_turn_ids,
)
from sessions_app.ingest.redaction.rules import (
    ID_MARKER_PREFIX,
    MARKER_PREFIX,
    id_marker,
    key_kind,
    marker,
)

__all__ = [
    "ID_MARKER_PREFIX",
    "MARKER_PREFIX",
    "id_marker",
    "key_kind",
    "marker",
    "might_hold_secret",
    "redact_event_fields",
    "redact_id",
    "redact_parse_result",
    "redact_parsed_event",
    "redact_parsed_session",
    "redact_parsed_turn",
    "redact_path",
    "redact_text",
    "redact_todo_items",
    "redact_value",
    "redact_values",
    "secret_spans",
    "session_turn_ids",
]
