"""Recording what happened to a tool call that has no stored result (one code path).

`record_tool_outcome` checks the call is really unanswered in the stored history (the
runtime's inspector, docs/runtime.md §5), stores one attributed `ToolOutcome` (who, when, why) and
refreshes the session's resume status, all in one transaction. Stored events are never
changed; the product projector (`sessions_app.projector`) uses the record.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from agentops.runtime.protocol import inspect_tool_protocol
from sessions_app.ingest.redaction import redact_text, redact_value
from sessions_app.models import Event, Session, ToolOutcome
from sessions_app.store import UnreadableRowError, load_facts, refresh_resume_status

logger = logging.getLogger(__name__)


class OutcomeRejectedError(ValueError):
    """The outcome cannot be recorded; `str(error)` is a specific message for the user."""


#: Outcomes that are a person's decision on a call awaiting them (`Event.pending_call_ids`).
DECISIONS = frozenset({ToolOutcome.Outcome.APPROVED, ToolOutcome.Outcome.REJECTED})

#: How deeply a recorded result may nest (lists and objects); deeper ones are refused.
MAX_RESULT_DEPTH = 32
#: Characters of a recorded result (its text, as typed).
MAX_RESULT_CHARS = 100_000


def _json_problem(value: Any) -> str | None:
    """Why parsed JSON `value` cannot be stored (too deep, or a NUL in a string, which
    PostgreSQL's jsonb refuses), or None. Walks iteratively: depth is what it checks."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_RESULT_DEPTH:
                return f"the result nests deeper than {MAX_RESULT_DEPTH} levels"
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
        elif isinstance(item, str) and "\x00" in item:
            return "the result contains a NUL character"
    return None


def parse_result(text: str) -> Any:
    """The recorded result: `text` parsed as JSON when it is valid JSON, else the text.

    Raises OutcomeRejectedError when the text is longer than MAX_RESULT_CHARS, or its JSON
    nests deeper than MAX_RESULT_DEPTH or holds a NUL character (``\\u0000``)."""
    if len(text) > MAX_RESULT_CHARS:
        raise OutcomeRejectedError(f"the result is longer than {MAX_RESULT_CHARS:,} characters")
    try:
        value = json.loads(text)
    except RecursionError:
        raise OutcomeRejectedError(
            f"the result nests deeper than {MAX_RESULT_DEPTH} levels"
        ) from None
    except ValueError:
        value = text
    problem = _json_problem(value)
    if problem:
        raise OutcomeRejectedError(problem)
    return value


def record_tool_outcome(
    session: Session,
    *,
    event_id: int,
    call_id: str,
    outcome: str,
    result: Any,
    reason: str,
    user: User | None,
    via: str = "",
) -> ToolOutcome:
    """Record `outcome` ("did_not_run", "ran" with `result`, or a person's decision
    "approved" / "rejected" on a call awaiting them) of call `call_id` of assistant event
    `event_id`, attributed to `user` (a person) or to `via` (e.g. "api key NAME", when
    recorded through the HTTP API), now (UTC).

    Raises OutcomeRejectedError when the reason is empty (a decision may come without one),
    the outcome unknown, "ran" comes without a result, the call is not an unanswered call
    of that event, a decision is given for a call that does not await a person, or an
    outcome for it already exists.
    """
    if outcome not in ToolOutcome.Outcome.values:
        raise OutcomeRejectedError(f"unknown outcome {outcome!r}")
    decision = outcome in DECISIONS
    if not reason.strip() and not decision:
        raise OutcomeRejectedError("say why: a reason is required")
    if len(reason) > MAX_RESULT_CHARS:
        raise OutcomeRejectedError(f"the reason is longer than {MAX_RESULT_CHARS:,} characters")
    if outcome == ToolOutcome.Outcome.RAN and result in ("", None):
        raise OutcomeRejectedError('"ran" needs the result the tool returned')
    with transaction.atomic():
        try:
            _turns, events = load_facts(session.id)
        except UnreadableRowError as error:
            raise OutcomeRejectedError(str(error)) from None
        unanswered = {
            call.id: call
            for issue in inspect_tool_protocol(events)
            if issue.event_id == event_id
            for call in issue.tool_calls
        }
        if call_id not in unanswered:
            raise OutcomeRejectedError(
                f"call {call_id!r} of event {event_id} is not an unanswered tool call"
            )
        if decision:
            pending = Event.objects.filter(pk=event_id).values_list("pending_call_ids", flat=True)
            if call_id not in (pending.first() or []):
                raise OutcomeRejectedError(
                    f"call {call_id!r} does not await a person: record what happened instead"
                )
        try:
            with transaction.atomic():
                record = ToolOutcome.objects.create(
                    session=session,
                    event_id=event_id,
                    call_id=call_id,
                    tool_name=unanswered[call_id].name,
                    outcome=outcome,
                    # A person's words are redacted like everything else stored.
                    result=redact_value(result) if outcome == ToolOutcome.Outcome.RAN else None,
                    reason=redact_text(reason.strip()),
                    recorded_by=user,
                    recorded_via=via[:150],
                    recorded_at=timezone.now(),
                )
        except IntegrityError:
            raise OutcomeRejectedError(
                f"an outcome for call {call_id!r} was already recorded"
            ) from None
        refresh_resume_status(session.id)
        transaction.on_commit(lambda: _tell_watchers(session.id, event_id, call_id))
    return record


def _tell_watchers(session_id: str, event_id: int, call_id: str) -> None:
    """Send the session's watchers the call with its outcome (``live.outcome``), so their
    page stops saying it awaits the user; a failure is only logged (the outcome is kept)."""
    from sessions_app.live.groups import broadcast_committed
    from sessions_app.live.payloads import OUTCOME, outcome_payload

    try:
        payload = outcome_payload(session_id, event_id, call_id)
    except Exception:  # reading it back must not fail a committed outcome either
        logger.warning("reading outcome of %s for watchers failed", session_id, exc_info=True)
        return
    if payload is not None:
        broadcast_committed(session_id, {"type": OUTCOME, "outcome": payload})
