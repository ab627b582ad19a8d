"""Keeping received spans and rebuilding the turns they belong to.

`store_spans` runs in one transaction per request: a span already kept (e.g. from an
exporter's retry) is skipped; every trace that got new spans is planned from all its
spans (`landing.plan_trace`: its session and turn, moved when a later span names the
conversation; its events in time order; its outcome); a trace that cannot land (its
session belongs to another app, its turn id to a turn not received over OTLP) is
rejected alone, before anything is written; the others land together with a fixed
number of queries (`landing.land`: new spans kept, rows rewritten in place when an
earlier-starting span arrived late, new rows appended). The async `receive` broadcasts
what changed to the sessions' outboxes (`otlp.watched`), so watchers see it live.

A running turn is leased to its exporter (`OWNER_HOST`) until AGENTOPS_STUCK_AFTER_SECONDS
after its trace's last batch. When the lease lapses the turn is recorded
interrupted/abandoned: by the next batch of any trace (`abandon_silent_turns`, that turn
alone), and, like any turn whose owner is gone, when its session page loads, when a server
starts, and on *Stop* (`sessions_app.live.stuck`). Spans arriving again make it running.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction
from django.db.models import TextField
from django.db.models.functions import Cast
from django.utils import timezone

from agentops.runtime.session import TurnReason
from sessions_app import models
from sessions_app.api.models import ApiKey
from sessions_app.ids import session_id_problem, turn_id_problem
from sessions_app.ingest.normalise import storable
from sessions_app.ingest.reading import loads
from sessions_app.ingest.redaction import redact_values
from sessions_app.live import LiveSessionService
from sessions_app.live.broadcast import post_all
from sessions_app.live.payloads import RESYNC
from sessions_app.otlp import codex_events, vercel_ai
from sessions_app.otlp.agent_traces import agent_trace
from sessions_app.otlp.autogen import bookkeeping_only, without_runtime_message
from sessions_app.otlp.claude_code_spans import without_error
from sessions_app.otlp.decode import SPAN_FIELDS, SpanRecord
from sessions_app.otlp.history import kept_inputs
from sessions_app.otlp.landing import (
    NOTE_PREFIX,
    OWNER_HOST,
    Plan,
    existing_rows,
    keep_unlanded,
    land,
    plan_trace,
    refusal,
)
from sessions_app.otlp.langfuse import ERROR_KEYS as LANGFUSE_ERROR_KEYS
from sessions_app.otlp.langfuse import langfuse_attributes
from sessions_app.otlp.langsmith import langsmith_attributes
from sessions_app.otlp.logs import untraced_trace
from sessions_app.otlp.mapping import Place
from sessions_app.otlp.messages import has_key_prefix
from sessions_app.otlp.models import OtlpSpan, own_session_id
from sessions_app.otlp.openinference import without_error_details
from sessions_app.otlp.openllmetry import openllmetry_attributes
from sessions_app.otlp.semantic_kernel import semantic_kernel_attributes
from sessions_app.otlp.strands import strands_attributes
from sessions_app.otlp.tool_results import failed_tool_kept, without_failed_results
from sessions_app.otlp.watched import messages

__all__ = ["Received", "abandon_silent_turns", "receive", "silent_turns", "store_spans"]

#: Attribute names never kept: exception details and status descriptions (Langfuse's too).
_NEVER_KEPT = ("exception.", "otel.status_description", "error.message", *LANGFUSE_ERROR_KEYS)


@dataclass(slots=True)
class Received:
    """What a request did: spans accepted (new or already kept) and rejected, the first
    rejection's reason, the new spans of traces that are no agent's, and what to
    broadcast (new event ids, changed turn ids, the ids of the turns it created, the new
    events' payloads and the changed turns', and the sessions traces left:
    `landing.Landed`)."""

    accepted: int = 0
    rejected: int = 0
    reason: str = ""
    new_events: list[int] = field(default_factory=list)
    turns: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    turn_payloads: dict[str, dict[str, Any]] = field(default_factory=dict)
    left: list[str] = field(default_factory=list)
    #: Spans kept of traces holding no agent's span (`agent_traces`): shown nowhere yet.
    not_agent: int = 0

    def refuse(self, count: int, reason: str) -> None:
        """Count `count` spans as rejected for `reason` (the first reason is kept)."""
        self.rejected += count
        self.reason = self.reason or reason


def keep_attributes(records: Sequence[SpanRecord]) -> list[dict[str, Any]]:
    """Of each of `records`, the attributes that may be kept, redacted like imports: with
    one prefilter pass over all of them (`redaction.redact_values`); without what may
    hold an error's message (`_NEVER_KEPT`, and each producer's own: `_PRODUCER_SHAPES`,
    which also make its shapes plain GenAI attributes); a model span's input without the
    earlier history the mapping never reads (`history.kept_inputs`); NUL, and a lone
    surrogate a producer's JSON text decoded to, as U+FFFD (`normalise.storable`)."""
    kept = [storable(kept_inputs(_keepable(_plain(r)))) for r in records]
    # Each is a new dict already (the filtered copy, or `redact_value`'s when it changed).
    return redact_values(kept)


#: Producers whose spans are made plain before they are kept, in order: each takes a span's
#: attributes (as the ones before left them) and its record (name, status), and returns
#: them as the mapping reads them (the same dict for a span that is not its producer's),
#: without what may hold an error's message.
_PRODUCER_SHAPES: tuple[Callable[[dict[str, Any], SpanRecord], dict[str, Any]], ...] = (
    lambda attributes, r: without_error_details(attributes, r.status_code),  # OpenInference
    lambda attributes, r: strands_attributes(attributes, r.status_code),  # Strands Agents
    lambda attributes, r: langfuse_attributes(attributes, r.status_code),  # the Langfuse SDK
    lambda attributes, r: langsmith_attributes(attributes, r.status_code),  # the LangSmith SDK
    lambda attributes, r: vercel_ai.kept(attributes),  # the Vercel AI SDK
    lambda attributes, r: openllmetry_attributes(attributes),  # OpenLLMetry (Traceloop)
    lambda attributes, r: semantic_kernel_attributes(attributes),  # Semantic Kernel
    lambda attributes, r: without_error(r.name, attributes),  # Claude Code's ``error``
    without_runtime_message,  # AutoGen's runtime spans' copy of every message
    lambda attributes, r: failed_tool_kept(attributes, r.status_code),  # any failed tool
)


def _plain(record: SpanRecord) -> dict[str, Any]:
    attributes = record.attributes
    for shape in _PRODUCER_SHAPES:
        attributes = shape(attributes, record)
    return attributes


def _keepable(attributes: dict[str, Any]) -> dict[str, Any]:
    """A copy of `attributes` without the names never kept: a key is tested one by one
    only when `has_key_prefix` says one may start so (most spans hold none)."""
    if not has_key_prefix(attributes, *_NEVER_KEPT):
        return dict(attributes)
    return {k: v for k, v in attributes.items() if not k.startswith(_NEVER_KEPT)}


def _short(value: str, limit: int) -> str:
    if len(value) <= limit:
        return value
    return value[: limit - 17] + "-" + hashlib.sha256(value.encode()).hexdigest()[:16]


def session_id_for(key: str, trace_id: str) -> str:
    """The session id for a session key ("" or only spaces = the trace's own session)."""
    key = key.strip()
    if not key:
        return own_session_id(trace_id)
    if session_id_problem(key) is None:
        return key
    return "otlp-" + hashlib.sha256(key.encode()).hexdigest()[:32]


def turn_id_for(session_id: str, key: str) -> str:
    """The turn id of a trace: ``<session id>/<turn key or trace id>``."""
    turn_id = _short(f"{session_id}/{key}", 255)
    return (
        turn_id
        if turn_id_problem(turn_id) is None
        else f"{session_id}/" + hashlib.sha256(key.encode()).hexdigest()[:32]
    )


def store_spans(records: Sequence[SpanRecord], key: ApiKey) -> Received:
    """Keep `records` and rebuild their traces' turns (one transaction; see module)."""
    done = Received()
    allowed: list[SpanRecord] = []
    for record in records:
        app = str(record.attributes.get("resource.service.name") or "otlp")
        if key.allows_app(app):
            allowed.append(record)
        else:
            done.refuse(1, f"key {key.prefix} may not use app {app[:100]!r}")
    now = timezone.now()
    note = f"{NOTE_PREFIX} ({key.label})"
    with transaction.atomic():
        # Codex records sent before their prompt's (a turn cut across exports) join it.
        allowed = codex_events.placed(allowed, _stored_turn_keys, untraced_trace)
        kept: dict[str, list[SpanRecord]] = defaultdict(list)
        previous: dict[str, set[tuple[str, str]]] = defaultdict(set)
        unlanded_before: set[str] = set()
        for *values, session_id, turn_id in _kept_spans({r.trace_id for r in allowed}):
            span = SpanRecord(*values)
            kept[span.trace_id].append(span)
            if turn_id:
                previous[span.trace_id].add((session_id, turn_id))
            else:  # kept while its trace landed nowhere (`keep_unlanded`)
                unlanded_before.add(span.trace_id)
        known = {(span.trace_id, span.span_id) for spans in kept.values() for span in spans}
        fresh: dict[str, dict[str, SpanRecord]] = defaultdict(dict)
        for record in allowed:
            if (record.trace_id, record.span_id) in known or record.span_id in fresh[
                record.trace_id
            ]:
                done.accepted += 1  # already kept (an exporter's retry) or twice here
            else:
                fresh[record.trace_id][record.span_id] = record
        new_records = [record for new in fresh.values() for record in new.values()]
        for record, kept_values in zip(new_records, keep_attributes(new_records), strict=True):
            record.attributes, record.name = kept_values, storable(record.name)
        for span in without_failed_results(fresh, kept):  # what a failed tool told the model
            OtlpSpan.objects.filter(trace_id=span.trace_id, span_id=span.span_id).update(
                attributes=span.attributes
            )
        # AutoGen's traces of agent creation and runtime messages alone land nowhere.
        idle = {t for t, new in fresh.items() if bookkeeping_only([*kept[t], *new.values()])}
        # So do traces holding no agent's span (an app's HTTP requests, a CLI's tracing).
        other = {
            t
            for t, new in fresh.items()
            if not (previous[t] or agent_trace([*kept[t], *new.values()])) and t not in idle
        }
        if other:
            done.not_agent = sum(len(fresh[t]) for t in other)
            idle |= other
        plans = [
            plan_trace(
                trace_id,
                [*kept[trace_id], *new.values()],
                list(new.values()),
                previous[trace_id],
                _ids,
                note,
            )
            for trace_id, new in fresh.items()
            if new and trace_id not in idle
        ]
        sessions, turns = existing_rows(plans)
        accepted: list[Plan] = []
        claimed: dict[str, str] = {}
        for plan in plans:
            reason = refusal(plan, key.allows_app, sessions, turns, claimed)
            if reason:
                done.refuse(len(plan.fresh), f"key {key.prefix}: {reason}")
            else:
                accepted.append(plan)
                done.accepted += len(plan.fresh)
        landed = land(accepted, sessions, turns, now)
        unlanded = [record for trace_id in idle for record in fresh[trace_id].values()]
        keep_unlanded(unlanded, now, [p for p in accepted if p.trace_id in unlanded_before])
        done.accepted += len(unlanded)
    done.new_events, done.turns, done.created = landed.new_events, landed.turns, landed.created
    done.events, done.turn_payloads, done.left = landed.events, landed.turn_payloads, landed.left
    return done


#: The kept span's attributes as their JSON text, decoded by `reading.loads` (orjson where
#: it reads as the standard library does) rather than by the field: a long trace's spans
#: are read again with every batch it sends.
_ATTRIBUTES_TEXT = Cast("attributes", TextField())


def _kept_spans(trace_ids: set[str]) -> Iterator[list[Any]]:
    """The kept spans of `trace_ids`: `SPAN_FIELDS` values, then session and turn id."""
    fields = [name if name != "attributes" else "attributes_text" for name in SPAN_FIELDS]
    rows = (
        OtlpSpan.objects.filter(trace_id__in=trace_ids)
        .annotate(attributes_text=_ATTRIBUTES_TEXT)
        .values_list(*fields, "session_id", "turn_id")
    )
    at = SPAN_FIELDS.index("attributes")
    for row in rows:
        values = list(row)
        values[at] = loads(values[at])
        yield values


def _stored_turn_keys(conversation: str, at: datetime) -> list[str]:
    """The keys of the stored turns of `conversation`'s session (its turn ids without the
    session's) that started at or before `at`, latest first (at most 20; one query)."""
    session_id = session_id_for(conversation, "")
    prefix = f"{session_id}/"
    ids = (
        models.Turn.objects.filter(session_id=session_id, started_at__lte=at)
        .order_by("-started_at")
        .values_list("id", flat=True)[:20]
    )
    return [turn_id.removeprefix(prefix) for turn_id in ids if turn_id.startswith(prefix)]


def _ids(where: Place, trace_id: str) -> tuple[str, str]:
    session_id = session_id_for(where.session_key, trace_id)
    return session_id, turn_id_for(session_id, where.turn_key or trace_id)


def silent_turns() -> dict[str, list[str]]:
    """Running OTLP turns whose trace sent nothing for AGENTOPS_STUCK_AFTER_SECONDS (their
    exporter's lease lapsed), by session id. One query."""
    found: dict[str, list[str]] = defaultdict(list)
    for session_id, turn_id in models.Turn.objects.filter(
        status=models.Turn.Status.RUNNING,
        owner_host=OWNER_HOST,
        lease_until__lt=timezone.now(),
    ).values_list("session_id", "id"):
        found[session_id].append(turn_id)
    return dict(found)


async def abandon_silent_turns(found: dict[str, list[str]] | None = None) -> list[str]:
    """Record the `silent_turns` (or those `found` already) interrupted/abandoned (an open
    tool call among their events becomes the session's protocol issue), broadcast to
    watchers; returns their ids. Only those turns: others of the same session that still
    receive spans keep running."""
    ended: list[str] = []
    live = LiveSessionService()
    if found is None:
        found = await sync_to_async(silent_turns)()
    for session_id, turn_ids in found.items():
        turns = await live.interrupt_running_turns(session_id, TurnReason.ABANDONED, only=turn_ids)
        ended += [turn.id for turn in turns]
    return ended


async def receive(records: Sequence[SpanRecord], key: ApiKey) -> Received:
    """`store_spans`, then broadcast to watchers, in order: the turns it created (a new
    turn reaches them before its events), the new events, then the other changed turns
    (their status and event count), and a resync to the sessions a trace left (their
    watchers resume from the database). The events' and turns' payloads come from the
    write itself (`watched`). Then end the silent turns
    (`abandon_silent_turns`) of any trace."""
    done, silent = await sync_to_async(_store_and_find_silent)(records, key)
    if done.turns or done.left:
        sent = messages(done.created, done.turns, done.events, done.turn_payloads)
        left = dict.fromkeys(done.left)
        await post_all([*sent, *((session_id, {"type": RESYNC}) for session_id in left)])
    if silent:
        await abandon_silent_turns(silent)
    return done


def _store_and_find_silent(
    records: Sequence[SpanRecord], key: ApiKey
) -> tuple[Received, dict[str, list[str]]]:
    """`store_spans`, then the `silent_turns` (one query), in one hop to the database
    thread."""
    return store_spans(records, key), silent_turns()
