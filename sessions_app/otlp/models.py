"""The spans and log records the OTLP receiver kept (docs/otlp.md): `OtlpSpan`.

Imported by `sessions_app.models` so Django registers it with the app (migration
`0009_otlp_span`). A trace's turn is rebuilt from its kept spans whenever a batch brings
more of them, so spans that arrive in several batches, children before parents, land in
one turn. All timestamps are aware UTC datetimes.
"""

from __future__ import annotations

import re

from django.db import models

_OWN_SESSION_PREFIX = "otlp-"
_OWN_SESSION_RE = re.compile(re.escape(_OWN_SESSION_PREFIX) + "([0-9a-f]{32})")


def own_session_id(trace_id: str) -> str:
    """The id of the session a trace lands in while none of its spans names a
    conversation (`OtlpSpanQuerySet.moved_from` reads the trace id back out of it)."""
    return _OWN_SESSION_PREFIX + trace_id


class OtlpSpanQuerySet(models.QuerySet["OtlpSpan"]):
    """Queries of kept spans."""

    def moved_from(self, session_id: str) -> str:
        """The session the trace of `session_id` lands in now, when `session_id` is that
        trace's own session (``otlp-<trace id>``) and the trace moved into its
        conversation's session since (a later span named it); else "". One query."""
        own = _OWN_SESSION_RE.fullmatch(session_id)
        if own is None:
            return ""
        found = (
            self.filter(trace_id=own.group(1))
            .exclude(session_id__in=("", session_id))
            .values_list("session_id", flat=True)
            .first()
        )
        return found or ""


class OtlpSpan(models.Model):
    """One span, or one log record (`kind`), received over OTLP, stored once per
    (trace_id, span_id).

    A log record is kept in the trace it names, under `span_id` a digest of the record
    (so a re-sent record is kept once) and `parent_span_id` the span it names; a record
    without trace context in a trace id derived from its session and turn
    (`otlp.logs`).

    `attributes` are the span's attributes (resource attributes under ``resource.``)
    redacted like imports, without exception details or status descriptions: those are
    never stored. `session_id` / `turn_id` name where the span's trace landed (they move
    when a later span of the trace names its conversation). `status_code` is OTLP's
    (0 unset, 1 ok, 2 error).
    """

    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True, default="")
    name = models.CharField(max_length=255, blank=True, default="")
    session_id = models.CharField(max_length=255, blank=True, default="")
    turn_id = models.CharField(max_length=255, blank=True, default="")
    start_at = models.DateTimeField()
    end_at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(default=0)
    attributes = models.JSONField(default=dict, blank=True)
    received_at = models.DateTimeField()
    #: "span", "log" (a log record naming a trace) or "untraced log" (one without).
    kind = models.CharField(max_length=16, default="span")

    objects = OtlpSpanQuerySet.as_manager()

    class Meta:
        constraints = [
            # A batch re-sent by an exporter's retry: each span is stored once.
            models.UniqueConstraint(fields=["trace_id", "span_id"], name="otlp_span_unique"),
        ]
        # No other index: a batch reads its traces' spans by trace id (the unique
        # constraint's prefix; rebuilding a turn sorts them in Python), and every index
        # costs each of the many inserts (migration 0020 dropped (trace_id, start_at) and
        # (turn_id, received_at), which no query used).

    def __str__(self) -> str:
        return f"span {self.span_id} of trace {self.trace_id}"
