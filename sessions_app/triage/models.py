"""The triage queue's kept counts (`TriageTally`, `TurnToolUse`), kept by the database.

Imported by `sessions_app.models` so Django registers them with the app (migration
`0013_triage_tally`). Triggers on the turn, event and session tables keep both current on
every write, whatever path makes it (the ORM, the store's SQL appends, the importer's bulk
INSERTs, cascading deletes; on SQLite a bulk INSERT of events is counted by one pass at its
end, migration `0019_triage_batch`), so the `/turns/` page reads counts that do not grow with the
number of turns:

- `TurnToolUse`: for each turn (`session_id`, `turn_id`), each tool name its active events
  call (the name cut to `TOOL_LENGTH` characters) and how many active events call it.
- `TriageTally`: failed and interrupted turns counted by status, reason, failure code,
  failure stage, app, UTC day of `started_at` and `tool`: "" counts the turns themselves;
  a tool name counts those of them that called the tool. Rows whose count fell to 0 stay
  (readers skip them).

Running (stuck) and completed (blocking) turns are not tallied: whether they are in the
queue depends on the clock and on the session's resume status, and they are few.
"""

from __future__ import annotations

from django.db import models

TOOL_LENGTH = 200
"""The longest tool name the tally keeps (longer names are cut to it)."""


class TurnToolUse(models.Model):
    """How many active events of one turn call one tool (kept by triggers)."""

    session_id = models.CharField(max_length=255)
    turn_id = models.CharField(max_length=255)
    tool = models.CharField(max_length=TOOL_LENGTH)
    events = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session_id", "turn_id", "tool"], name="turn_tool_use_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.tool} x{self.events} in {self.session_id}/{self.turn_id}"


class TriageTally(models.Model):
    """Failed and interrupted turns of one key (kept by triggers; module docstring)."""

    status = models.CharField(max_length=16)
    reason = models.CharField(max_length=32)
    failure_code = models.CharField(max_length=128)
    failure_stage = models.CharField(max_length=16)
    app_name = models.CharField(max_length=255)
    day = models.DateField()
    tool = models.CharField(max_length=TOOL_LENGTH)
    n = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "status",
                    "reason",
                    "failure_code",
                    "failure_stage",
                    "app_name",
                    "day",
                    "tool",
                ],
                name="triage_tally_key",
            )
        ]
        indexes = [models.Index(fields=["tool", "day"], name="triage_tally_tool_day_idx")]

    def __str__(self) -> str:
        return f"{self.n} {self.status} turns on {self.day} ({self.app_name}, {self.tool or '*'})"
