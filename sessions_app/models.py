"""Stored facts of agent sessions: Session, Turn, Event (docs/runtime.md §1-2).

All timestamps are timezone-aware UTC datetimes. Event ids are database-assigned integers
that grow with insertion time, so ordering by id is conversation order (docs/runtime.md §1).
Partial (streaming) events are never stored, so there is no `partial` column.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import models
from django.db.models import Count, F, Max, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce

from agentops.runtime import model as runtime_model
from agentops.runtime.session import FailureStage, TurnReason, TurnStatus
from sessions_app.signals import merged_answers, session_summary_requested
from sessions_app.values import choices_of, format_duration


class SessionQuerySet(models.QuerySet["Session"]):
    def with_summary(self) -> SessionQuerySet:
        """Annotate each session with what the sessions list shows.

        Adds `turn_count` (int), `latest_turn_status` (str or None: the status of the turn
        that started last) and what other apps add (`signals.session_summary_requested`:
        todos_app's `todo_total` and `todo_done`, ints). Every figure is a correlated
        subquery, so the list costs one query however many turns exist.
        """
        latest_turn = Turn.objects.filter(session=OuterRef("pk")).order_by("-started_at", "-id")
        turn_count = (
            Turn.objects.filter(session=OuterRef("pk"))
            .order_by()
            .values("session")
            .annotate(n=Count("id"))
            .values("n")
        )
        extra = merged_answers(session_summary_requested.send(sender=Session))
        return self.annotate(
            turn_count=Subquery(turn_count, output_field=models.IntegerField()),
            latest_turn_status=Subquery(latest_turn.values("status")[:1]),
            **extra,
        )

    def search(self, text: str) -> SessionQuerySet:
        """Sessions whose id, title, app, user or path contains `text`, or with an event
        matching it in full text (`sessions_app.search.text.search_sessions`)."""
        from sessions_app.search.text import search_sessions

        return search_sessions(self, text)

    def with_latest_turn_status(self, status: str) -> SessionQuerySet:
        """Sessions whose latest turn (by start time, then id) has `status`."""
        latest = Turn.objects.filter(session=OuterRef("pk")).order_by("-started_at", "-id")
        return self.annotate(_latest_status=Subquery(latest.values("status")[:1])).filter(
            _latest_status=status
        )


class Session(models.Model):
    """One conversation between a user and an agent application (docs/runtime.md §2).

    `state` is the session state object (JSON); state deltas of stored events are merged
    into it. `updated_at` is the last activity (latest event or turn change), UTC.
    """

    class SourceFormat(models.TextChoices):
        RUNTIME = "runtime", "agentops runtime"
        DEMO = "demo", "Demo data"
        CLAUDE_CODE = "claude_code", "Claude Code JSONL"
        CODEX_CLI = "codex_cli", "Codex CLI rollout"
        GOOGLE_ADK = "google_adk", "Google ADK session"
        OPENAI_CHAT = "openai_chat", "OpenAI chat messages"
        OPENAI_AGENTS = "openai_agents", "OpenAI Agents SDK run state"
        AGENTOPS_EXPORT = "agentops_export", "agentops export"
        ANTHROPIC_MESSAGES = "anthropic_messages", "Anthropic Messages"
        OPENAI_RESPONSES = "openai_responses", "OpenAI Responses items"
        ADK_DATABASE = "adk_database", "Google ADK session database"
        API = "api", "Recorded through the HTTP API"
        OTLP = "otlp", "OpenTelemetry (OTLP)"

    id = models.CharField(primary_key=True, max_length=255)
    app_name = models.CharField(max_length=255, db_index=True)
    user_id = models.CharField(max_length=255, blank=True, default="")
    title = models.CharField(max_length=500, blank=True, default="")
    state = models.JSONField(default=dict, blank=True)
    source_format = models.CharField(
        max_length=32, choices=SourceFormat.choices, default=SourceFormat.RUNTIME
    )
    source_path = models.CharField(max_length=1000, blank=True, default="")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # Kept by `store.refresh_resume_status` (imports, finished turns, outcomes) for lists.
    protocol_issue_count = models.PositiveIntegerField(default=0)
    cannot_resume = models.BooleanField(default=False)
    orphan_result_count = models.PositiveIntegerField(default=0)  # docs/runtime.md §5
    # A sub-agent's parent session and starting call: ids, not keys, so a sub-agent
    # imported before its parent links as soon as the parent is there.
    parent_session_id = models.CharField(max_length=255, blank=True, default="")
    parent_call_id = models.CharField(max_length=255, blank=True, default="")
    # The model the source names (the last one it used), "" when unknown; set by importers.
    model = models.CharField(max_length=255, blank=True, default="", db_default="")
    # Token totals of the active events (`search.numbers`), kept by `store.page_facts`.
    tokens_input = models.BigIntegerField(default=0, db_default=0)
    tokens_output = models.BigIntegerField(default=0, db_default=0)
    tokens_cached = models.BigIntegerField(default=0, db_default=0)
    # Some active event names no turn record of the session (kept the same way).
    has_legacy_events = models.BooleanField(default=False, db_default=False)
    # The context page's resumable pass state (`pages.context_window`); reset on recompute.
    context_checkpoint = models.JSONField(null=True, blank=True)

    objects = SessionQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at", "id"]
        indexes = [
            # Sessions list: newest activity first.
            models.Index(F("updated_at").desc(), "id", name="session_updated_idx"),
            # Sessions list filter "cannot resume".
            models.Index(
                F("updated_at").desc(),
                name="session_cannot_resume_idx",
                condition=Q(cannot_resume=True),
            ),
            # Session page: the sub-agents of a session.
            models.Index(
                "parent_session_id",
                "created_at",
                name="session_parent_idx",
                condition=~Q(parent_session_id=""),
            ),
            # Sessions list filter `?model=`.
            models.Index(
                fields=["model", "-updated_at"],
                name="session_model_idx",
                condition=~Q(model=""),
            ),
        ]
        permissions = [
            ("record_tool_outcome", "Can record the outcome of an unanswered tool call"),
        ]

    def __str__(self) -> str:
        return self.title or self.id


class TurnQuerySet(models.QuerySet["Turn"]):
    def with_last_event_at(self) -> TurnQuerySet:
        """Annotate `last_event_at` (aware UTC datetime): the newest `created_at` of the
        session's events carrying this turn's id, or `started_at` when there are none.

        A correlated subquery: evaluated only for the rows fetched (e.g. one page).
        """
        newest = (
            Event.objects.filter(session=OuterRef("session"), turn_id=OuterRef("pk"))
            .order_by()
            .values("turn_id")
            .annotate(newest=Max("created_at"))
            .values("newest")
        )
        return self.annotate(
            last_event_at=Coalesce(
                Subquery(newest, output_field=models.DateTimeField()), F("started_at")
            )
        )

    def with_timeline_index(self) -> TurnQuerySet:
        """Annotate `timeline_index` (int, 0-based): how many turns of the same session
        come before this one in the session page's (started_at, id) order.

        The session page shows turn `timeline_index // AGENTOPS_TURNS_PER_PAGE + 1`.
        A correlated COUNT over `turn_session_order_idx`, so a page of rows costs no
        extra query. (A window function would count only the rows left after filtering.)
        """
        before = (
            Turn.objects.filter(session=OuterRef("session"))
            .filter(
                Q(started_at__lt=OuterRef("started_at"))
                | Q(started_at=OuterRef("started_at"), id__lt=OuterRef("pk"))
            )
            .order_by()
            .values("session")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return self.annotate(
            timeline_index=Coalesce(Subquery(before, output_field=models.IntegerField()), Value(0))
        )


class Turn(models.Model):
    """One user turn of a session (docs/runtime.md §2): status, reason and a safe failure.

    `failure_code` is empty when the turn has no failure; then `failure_stage` and
    `failure_message` are empty too. `started_at`/`finished_at` are UTC; `finished_at` is
    None while running.
    """

    # The runtime's enums are the one definition of these values (docs/runtime.md §2).
    Status = TurnStatus
    Reason = TurnReason
    Stage = FailureStage

    id = models.CharField(primary_key=True, max_length=255)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns")
    status = models.CharField(
        max_length=16, choices=choices_of(TurnStatus), default=TurnStatus.RUNNING.value
    )
    reason = models.CharField(max_length=32, choices=choices_of(TurnReason), blank=True, default="")
    failure_code = models.CharField(max_length=128, blank=True, default="")
    failure_stage = models.CharField(
        max_length=16, choices=choices_of(FailureStage, empty=True), blank=True, default=""
    )
    failure_message = models.TextField(blank=True, default="")
    # Why the importer chose this outcome (e.g. "interrupt marker at line 17"); empty for runs.
    status_note = models.CharField(max_length=500, blank=True, default="")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    # Who runs a live turn (empty/None for imports): host and pid of its process, and the
    # lease it renews while it runs; a lapsed lease or a dead pid means the owner is gone.
    owner_host = models.CharField(max_length=255, blank=True, default="", db_default="")
    owner_pid = models.PositiveIntegerField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    # Who asked to stop it and from where, e.g. "admin (page)"; empty when nobody did.
    stopped_by = models.CharField(max_length=255, blank=True, default="", db_default="")

    objects = TurnQuerySet.as_manager()

    class Meta:
        ordering = ["started_at", "id"]
        indexes = [
            # Session page timeline and "latest turn" subqueries: turns of a session in order.
            models.Index(fields=["session", "started_at", "id"], name="turn_session_order_idx"),
            # Triage and status filters: turns by status, newest first.
            models.Index(fields=["status", "-started_at"], name="turn_status_started_idx"),
            models.Index(  # the triage queue's failed and interrupted turns, in its order
                fields=["-started_at", "-id"],
                condition=Q(status__in=["failed", "interrupted"]),
                name="turn_queue_order_idx",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=[status.value for status in TurnStatus]),
                name="turn_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"

    @property
    def duration_seconds(self) -> float | None:
        """Seconds from start to finish, or None while running."""
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    @property
    def duration_text(self) -> str:
        """`duration_seconds` as a short phrase (`format_duration`); "" while running."""
        seconds = self.duration_seconds
        return "" if seconds is None else format_duration(seconds)


class EventQuerySet(models.QuerySet["Event"]):
    def active(self) -> EventQuerySet:
        """Events that count for the conversation: neither soft-deleted nor archived."""
        return self.filter(deleted_at__isnull=True, archived_at__isnull=True)

    def flagged(self) -> EventQuerySet:
        """Events the tool-protocol inspector flags (`store.page_facts`)."""
        return self.filter(Q(unanswered_calls__isnull=False) | Q(orphan_result=True))


#: Event columns derived from the others as events are written (`store.page_facts`):
#: never imported, exported nor shown as the event's own facts.
EVENT_DERIVED_FIELDS = ("unanswered_calls", "orphan_result")


class Event(models.Model):
    """One stored, complete event of a session (docs/runtime.md §1).

    Shapes (JSON columns):
    - `parts`: list of ContentPart dicts {type, text, image_url, image_base64, mime_type,
      image_detail}; when non-empty they take precedence over `text`.
    - `tool_calls`: list of {id, name, arguments: object, thought_signature?: base64 str}.
    - `tool_response`: {tool_call_id, name, result} or {tool_call_id, name, error}, or None.
    - `usage`: {prompt_tokens, completion_tokens, total_tokens, details: object} or None.
    - `state_delta`: object merged into the session state when the event was stored.
    - `pending_call_ids`: ids of this event's tool calls that the source marks as awaiting
      approval or long-running (kept as pending, not as unanswered).
    - `raw`: the source record(s) the event was imported from, for "raw JSON" on demand.
    `turn_id` is "" for legacy events (no turn); it is not a foreign key because docs/runtime.md §2
    allows ids of turns that have no record.
    """

    # The runtime's enums are the one definition of these values (docs/runtime.md §1).
    Role = runtime_model.Role
    FinishReason = runtime_model.FinishReason

    id = models.BigAutoField(primary_key=True)
    session = models.ForeignKey(Session, models.CASCADE, related_name="events", db_index=False)
    turn_id = models.CharField(max_length=255, blank=True, default="")
    source_id = models.CharField(max_length=255, blank=True, default="")
    author = models.CharField(max_length=255, blank=True, default="")
    role = models.CharField(max_length=16, choices=choices_of(runtime_model.Role))
    text = models.TextField(blank=True, default="")
    parts = models.JSONField(default=list, blank=True)
    reasoning = models.TextField(blank=True, default="")
    tool_calls = models.JSONField(default=list, blank=True)
    tool_response = models.JSONField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=255, blank=True, default="")
    pending_call_ids = models.JSONField(default=list, blank=True)
    finish_reason = models.CharField(
        max_length=16, choices=choices_of(runtime_model.FinishReason), blank=True, default=""
    )
    usage = models.JSONField(null=True, blank=True)
    state_delta = models.JSONField(default=dict, blank=True)
    raw = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    deleted_at = models.DateTimeField(null=True, blank=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    # Derived, kept as events are written (`store.page_facts`): the inspector's verdict
    # (docs/runtime.md §5) on this event in the active history. Indexes of the tool calls
    # the tool run after it leaves unanswered (None: none), and whether it is an orphan.
    unanswered_calls = models.JSONField(null=True, blank=True)
    orphan_result = models.BooleanField(default=False, db_default=False)

    objects = EventQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        indexes = [
            # Session page and projection: a session's active events in id order.
            models.Index(
                fields=["session", "id"],
                name="event_session_active_idx",
                condition=Q(deleted_at__isnull=True, archived_at__isnull=True),
            ),
            # Session page: the events of one turn.
            models.Index(fields=["session", "turn_id", "id"], name="event_session_turn_idx"),
            # Where the live history starts: a session's compaction events
            # (`projector.COMPACTION_AUTHOR`, role user).
            models.Index(
                fields=["session", "id"],
                name="event_compaction_idx",
                condition=Q(author="compaction", role="user"),
            ),
            # Protocol page: the session's active events the inspector flags.
            models.Index(
                fields=["session", "id"],
                name="event_protocol_idx",
                condition=Q(deleted_at__isnull=True, archived_at__isnull=True)
                & (Q(unanswered_calls__isnull=False) | Q(orphan_result=True)),
            ),
        ]

    def __str__(self) -> str:
        return f"event {self.id} ({self.role})"

    @property
    def answered_call_id(self) -> str:
        """The call id a tool event answers (docs/runtime.md §1): tool_response's, else
        tool_call_id."""
        if isinstance(self.tool_response, dict) and self.tool_response.get("tool_call_id"):
            return str(self.tool_response["tool_call_id"])
        return self.tool_call_id

    def as_dict(self) -> dict[str, Any]:
        """The event as a JSON-ready dict of its stored fields but `raw` (the source
        record, shown beside it) and the derived ones, in declaration order; timestamps
        ISO 8601 UTC."""
        values: dict[str, Any] = {}
        for field in self._meta.concrete_fields:
            if field.attname != "raw" and field.attname not in EVENT_DERIVED_FIELDS:
                value = getattr(self, field.attname)
                values[field.attname] = value.isoformat() if isinstance(value, datetime) else value
        return values


class ImportedFile(models.Model):
    """A transcript file that landed, by content hash, so re-importing it is a no-op."""

    sha256 = models.CharField(max_length=64, unique=True)
    path = models.CharField(max_length=1000)
    source_format = models.CharField(max_length=32, choices=Session.SourceFormat.choices)
    session_ids = models.JSONField(default=list)
    imported_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.path


class ToolOutcome(models.Model):
    """What a person recorded about a tool call that has no stored result.

    Stored history is never rewritten: this record sits beside the assistant event, and
    the product's projector (`sessions_app.projector`) turns it into a synthetic tool result
    right after that event, so the tool-call group closes and the session can resume
    (docs/runtime.md §4: a custom projector; the runner still validates the tool protocol).
    `result` is the JSON value the tool returned (outcome "ran"); `recorded_at` is UTC.
    A call awaiting a person (`Event.pending_call_ids`) gets "approved" or "rejected": the
    decision, attributed and audited like any outcome, never a rewrite of history.
    """

    class Outcome(models.TextChoices):
        DID_NOT_RUN = "did_not_run", "Did not run"
        RAN = "ran", "Ran, with this result"
        # A person's decision on a call awaiting them (`Event.pending_call_ids`).
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="tool_outcomes")
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="tool_outcomes")
    call_id = models.CharField(max_length=255)
    tool_name = models.CharField(max_length=255, blank=True, default="")
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    result = models.JSONField(null=True, blank=True)
    reason = models.TextField()
    recorded_by = models.ForeignKey(
        "auth.User", on_delete=models.SET_NULL, null=True, related_name="+"
    )
    # Who recorded it when not a person: "api key NAME" (sessions_app.api).
    recorded_via = models.CharField(max_length=150, blank=True, default="")
    recorded_at = models.DateTimeField()

    class Meta:
        ordering = ["event_id", "id"]
        constraints = [
            # One outcome per call of an assistant event; a second one is a conflict.
            models.UniqueConstraint(fields=["event", "call_id"], name="tool_outcome_unique_call"),
        ]
        indexes = [
            models.Index(fields=["session", "event"], name="tool_outcome_session_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.call_id}: {self.outcome}"


# The HTTP API's rows (API keys, run leases, event client keys) live in its room.
from sessions_app.api.models import ApiKey as ApiKey  # noqa: E402
from sessions_app.api.models import EventClientKey as EventClientKey  # noqa: E402
from sessions_app.api.models import RunLease as RunLease  # noqa: E402
from sessions_app.otlp.models import OtlpSpan as OtlpSpan  # noqa: E402
from sessions_app.triage import models as triage_models  # noqa: E402, F401
