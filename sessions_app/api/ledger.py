"""The API's writes: the broadcasting store plus what remote clients need.

`ApiSessionService` is `sessions_app.live.LiveSessionService` (every write reaches the
session's watchers at once) with three additions for callers in other processes:

- `append_batch`: a batch of events, each with a client key (idempotency key, unique per
  session), stored in one transaction; a key already stored answers its stored id, so a
  retried batch is stored once. Events are redacted like imports first
  (`sessions_app.ingest.redaction.redact_value`);
- `begin_attributed_turn`: a turn noted as begun through the API key (`Turn.status_note`
  reads "via api key NAME"), covered by the caller's run lease when it gives one;
- `session_or_create`: create-or-get, idempotent for a retried create.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Case, DateTimeField, Value, When
from django.utils import timezone

from agentops.runtime import errors
from agentops.runtime.model import Content, Event
from agentops.runtime.session import Session, Turn, TurnStatus
from sessions_app import models
from sessions_app.api import batch_sql
from sessions_app.api.models import EventClientKey, RunLease
from sessions_app.api.problems import ApiProblem
from sessions_app.ingest.redaction import redact_value
from sessions_app.ingest.writer import insert_rows
from sessions_app.live import LiveSessionService, outbox
from sessions_app.store import turn_from_row
from sessions_app.store.append_sql import stored_fields
from sessions_app.store.page_facts import note_tokens_added

__all__ = ["ApiSessionService", "BatchItem", "redact_event"]


@dataclass(frozen=True)
class BatchItem:
    """One event of a batch and its client key ("" = none: no retry protection), and when
    it happened when the client recorded it after the fact (None: when it is stored)."""

    client_key: str
    event: Event
    recorded_at: datetime | None = None


def redact_event(event: Event) -> Event:
    """`event` with credentials in its content and state delta redacted, as imports are."""
    content = event.content.model_dump(mode="json", exclude_defaults=True)
    redacted_content = redact_value(content)
    redacted_delta = redact_value(event.state_delta)
    if redacted_content is content and redacted_delta is event.state_delta:
        return event
    return event.model_copy(
        update={
            "content": Content.model_validate(redacted_content),
            "state_delta": redacted_delta,
        }
    )


class ApiSessionService(LiveSessionService):
    """`LiveSessionService` with the API's idempotent batches and attribution.

    `actor`: the label of the caller ("api key NAME"), written where people see it.
    """

    source_format = "api"

    def __init__(self, actor: str) -> None:
        super().__init__()
        self.actor = actor

    # -- sessions ------------------------------------------------------------------------

    async def session_or_create(
        self, app_name: str, user_id: str, session_id: str | None, state: dict[str, Any]
    ) -> tuple[Session, bool]:
        """The session `session_id` (created when missing; a new id when None) and whether
        it was created now. An existing session of another app or user -> 409."""
        if session_id:
            existing = await self.get_session(session_id)
            if existing is not None:
                self._same_key(existing, app_name, user_id)
                return existing, False
        try:
            return await self.create_session(
                app_name, user_id, session_id=session_id, state=state
            ), True
        except ValueError:  # created meanwhile (a retried or concurrent create)
            existing = await self.get_session(session_id or "")
            if existing is None:  # pragma: no cover
                raise
            self._same_key(existing, app_name, user_id)
            return existing, False

    @staticmethod
    def _same_key(session: Session, app_name: str, user_id: str) -> None:
        if (session.app_name, session.user_id) != (app_name, user_id):
            raise ApiProblem(
                409,
                "session-exists",
                f"session {session.id!r} exists with another app name or user id",
                session_id=session.id,
            )

    # -- events --------------------------------------------------------------------------

    async def append_batch(
        self, session_id: str, items: Sequence[BatchItem]
    ) -> list[tuple[int, datetime]]:
        """Store the events of `items` in order, in one transaction, and broadcast the new
        ones; returns the stored (id, created_at) of each item (an item whose client key
        was stored before answers that event's and is not stored again).

        Raises `SessionNotFoundError`, `InvalidEventError` (partial or foreign event) and
        ApiProblem 422 when a key repeats within the batch; nothing is stored then.
        """
        keys = [item.client_key for item in items if item.client_key]
        if len(keys) != len(set(keys)):
            raise ApiProblem(422, "duplicate-client-key", "a client key repeats in the batch")
        for item in items:
            if item.event.partial:
                raise errors.InvalidEventError(session_id, "partial events are never stored")
            if item.event.session_id != session_id:
                raise errors.InvalidEventError(
                    session_id, f"event belongs to session {item.event.session_id!r}"
                )
        # Redacted once: by the store itself when it redacts runtime events, else here.
        redacted = settings.AGENTOPS_REDACT_RUNTIME_EVENTS
        events = [
            item
            if redacted
            else BatchItem(item.client_key, redact_event(item.event), item.recorded_at)
            for item in items
        ]
        try:
            ids, new = await sync_to_async(self._store_batch)(session_id, events)
        except IntegrityError:  # a concurrent retry stored the same keys first
            ids, new = await sync_to_async(self._store_batch)(session_id, events)
        await self._announce_all(session_id, new)
        return ids

    async def _announce_all(self, session_id: str, stored: Sequence[Event]) -> None:
        """Post ``live.event`` for each of `stored`, then wait once for the layer: the
        outbox hands them over together (one ``live.batch``, `live.outbox`), not one
        round trip per event."""
        deferring, self.deferring = self.deferring, True
        try:
            for event in stored:
                await self.announce_event(event)
        finally:
            self.deferring = deferring
        if stored and not deferring:
            await outbox.flush(session_id)

    def _store_batch(
        self, session_id: str, items: Sequence[BatchItem]
    ) -> tuple[list[tuple[int, datetime]], list[Event]]:
        with transaction.atomic(), self.one_refresh_per_batch():
            if not batch_sql.session_exists(session_id):
                raise errors.SessionNotFoundError(session_id)
            keys = [item.client_key for item in items if item.client_key]
            known = _known(session_id, keys)
            stored: dict[int, Event] = {}
            plain: list[tuple[int, Event]] = []
            for index, item in enumerate(items):
                if item.client_key in known:
                    continue
                if _is_plain(item.event):
                    plain.append((index, item.event))
                    continue
                _insert_plain(session_id, plain, stored)
                plain = []
                stored[index] = self._append_event(item.event)
            _insert_plain(session_id, plain, stored)
            _keep_recorded_times(items, stored)
            # The writer's executemany path, as for the events (bulk_create compiled SQL
            # per batch and built a model instance per key).
            insert_rows(
                EventClientKey,
                ("session_id", "client_key", "event_id"),
                [(session_id, items[i].client_key, e.id) for i, e in stored.items()
                 if items[i].client_key],
            )  # fmt: skip
            ids: list[tuple[int, datetime]] = []
            for index, item in enumerate(items):
                event = stored.get(index)
                if event is None:
                    ids.append(known[item.client_key])
                else:
                    assert event.created_at is not None
                    ids.append((event.id, event.created_at))
        return ids, [stored[i] for i in sorted(stored)]

    async def publish_partial(self, event: Event) -> None:
        """Send a partial event to the session's watchers (never stored)."""
        last = await sync_to_async(self._last_stored_id)(event.session_id, event.turn_id)
        if event.turn_id:
            self._last_id[event.turn_id] = last
        await self.broadcast_partial(event)

    @staticmethod
    def _last_stored_id(session_id: str, turn_id: str) -> int:
        rows = models.Event.objects.filter(session_id=session_id, turn_id=turn_id)
        return rows.order_by("-id").values_list("id", flat=True).first() or 0

    # -- turns ---------------------------------------------------------------------------

    async def begin_attributed_turn(
        self, session_id: str, turn: Turn, lease_id: str
    ) -> tuple[Turn, bool]:
        """Begin `turn` (docs/runtime.md §2) noted "via <actor>"; a turn with the same id,
        session and start that is already running is answered as it is (a retried
        request). With a live lease on the session, `lease_id` must be that lease (else
        409) and the lease then covers this turn. Returns (the turn, begun now)."""
        if not turn.id or turn.status is not TurnStatus.RUNNING or turn.session_id != session_id:
            await self.begin_turn(session_id, turn)  # raises the store's own error
        begun, created = await sync_to_async(self._begin_attributed)(session_id, turn, lease_id)
        if created:
            await self.announce_turn(begun.id)
        return begun, created

    def _begin_attributed(self, session_id: str, turn: Turn, lease_id: str) -> tuple[Turn, bool]:
        with transaction.atomic():
            existing = models.Turn.objects.filter(pk=turn.id).first()
            if existing is not None:
                same = (
                    existing.session_id == session_id
                    and existing.started_at == turn.started_at
                    and existing.status == TurnStatus.RUNNING
                )
                if same:
                    return turn_from_row(existing), False
                raise errors.InvalidTurnError(turn.id, "a turn with this id already exists")
            lease = RunLease.objects.select_for_update().filter(session_id=session_id).first()
            if lease is not None and lease.expires_at > timezone.now():
                if lease.lease_id != lease_id:
                    raise ApiProblem(
                        409,
                        "session-leased",
                        f"session {session_id!r} is leased by {lease.holder} until "
                        f"{lease.expires_at.isoformat()}",
                        holder=lease.holder,
                        expires_at=lease.expires_at.isoformat(),
                    )
                lease.turn_id = turn.id
                lease.save(update_fields=["turn_id"])
            begun = self._begin_turn(session_id, turn)
            # The client runs the turn, not this server process: no owner is recorded (a
            # lease, when there is one, says whether the runner lives; else the stuck rule).
            models.Turn.objects.filter(pk=turn.id).update(
                status_note=f"via {self.actor}", owner_host="", owner_pid=None, lease_until=None
            )
        return begun, True


def _is_plain(event: Event) -> bool:
    """An event that changes neither the session state nor its resume status (no state
    delta, no tool call, not a tool result: `store.resume_delta.status_after_append`
    leaves the status as it is), so a run of them is stored with one bulk insert."""
    content = event.content
    return not event.state_delta and not content.tool_calls and content.role != "tool"


def _keep_recorded_times(items: Sequence[BatchItem], stored: dict[int, Event]) -> None:
    """Give the stored events of `items` that carry a recorded time that time (one UPDATE,
    in the batch's transaction); `stored` ({item index: stored event}) follows."""
    recorded = {i: items[i].recorded_at for i in stored if items[i].recorded_at is not None}
    if not recorded:
        return
    when = Case(
        *(When(pk=stored[i].id, then=Value(at)) for i, at in recorded.items()),
        output_field=DateTimeField(),
    )
    ids = [stored[i].id for i in recorded]
    models.Event.objects.filter(pk__in=ids).update(created_at=when, updated_at=when)
    for i, at in recorded.items():
        stored[i] = stored[i].model_copy(update={"created_at": at, "updated_at": at})


def _insert_plain(session_id: str, run: list[tuple[int, Event]], stored: dict[int, Event]) -> None:
    """Store a run of plain events (`_is_plain`) of one batch: one UPDATE of the session
    (locks its row on PostgreSQL, so ids grow in commit order) and one bulk INSERT, with
    the store's redaction; fills `stored` (batch index -> stored copy)."""
    if not run:
        return
    now = timezone.now()
    batch_sql.touch_session(session_id, now, [e.turn_id for _i, e in run])
    rows: list[tuple[Any, ...]] = []
    copies: list[Event] = []
    for _index, event in run:
        fields, event = stored_fields(event)
        rows.append((session_id, now, now, *(fields[name] for name in _PLAIN_FIELDS)))
        copies.append(event)
    # The writer's executemany path (`ingest.writer.insert_rows`): the ORM's bulk_create
    # spent most of a batch compiling SQL. The session row is locked (the UPDATE above),
    # so the new rows are this session's ids above its last one, in insertion order.
    before = batch_sql.last_event_id(session_id)
    insert_rows(models.Event, ("session_id", "created_at", "updated_at", *_PLAIN_FIELDS), rows)
    new_ids = batch_sql.event_ids_after(session_id, before)
    if any(event.usage is not None for _index, event in run):
        note_tokens_added(session_id, new_ids[0], new_ids[-1])
    for (index, _event), row_id, copy in zip(run, new_ids, copies, strict=True):
        stored[index] = copy.model_copy(update={"id": row_id, "created_at": now, "updated_at": now})


def _known(session_id: str, keys: list[str]) -> dict[str, tuple[int, datetime]]:
    """Client key -> (event id, stored time) for those of `keys` stored before (a retried
    batch: their times are read only then)."""
    ids = batch_sql.stored_keys(session_id, keys)
    if not ids:
        return {}
    times = dict(models.Event.objects.filter(pk__in=ids.values()).values_list("id", "created_at"))
    return {key: (event_id, times[event_id]) for key, event_id in ids.items()}


#: The columns `row_fields_from_event` fills, in a fixed order.
_PLAIN_FIELDS = (
    "turn_id", "author", "role", "text", "parts", "reasoning", "tool_calls", "tool_response",
    "tool_call_id", "finish_reason", "usage", "state_delta", "pending_call_ids",
)  # fmt: skip
