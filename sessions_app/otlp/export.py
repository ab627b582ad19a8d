"""One OTLP export, whatever carried it (OTLP/HTTP: `views`; OTLP/gRPC: `grpc_server`):
the key's check, the key's rate, storing and broadcasting (`writer.receive`), and what the
answer says: how many records were rejected and why, or why the export was refused."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeGuard

from django.db import OperationalError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)

from sessions_app.api.models import ApiKey
from sessions_app.otlp.decode import SpanRecord
from sessions_app.otlp.limits import take
from sessions_app.otlp.writer import receive

__all__ = ["Outcome", "accept", "key_refusal", "logs_answer", "may_write", "traces_answer"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What became of an export: `status` 200 (stored; `rejected` records refused,
    `message` the partial success's reason or warning), 429 (over the key's rate) or 503
    (the database is busy), both with `message` and `retry_after` seconds."""

    status: int
    message: str = ""
    rejected: int = 0
    retry_after: float = 0


def may_write(key: ApiKey | None) -> TypeGuard[ApiKey]:
    """Whether `key` (None: no key or an unknown one) may send exports."""
    return key is not None and not key.read_only


def key_refusal(key: ApiKey | None, how: str) -> tuple[int, str]:
    """401 or 403 and the reason for a `key` that may not write (`how`: how to send a key
    on this transport)."""
    if key is None:
        return 401, f"send a valid, unrevoked API key as {how}"
    return 403, key.read_only_refusal


async def accept(records: Sequence[SpanRecord], bad: int, key: ApiKey, noun: str) -> Outcome:
    """Store `records` (and count the `bad` ones the decoder could not use) for `key`;
    `noun`: "spans" or "log records"."""
    wait = take(key.pk, len(records))
    if wait:
        return Outcome(429, f"key {key.prefix} is over its rate of {noun}", retry_after=wait)
    try:
        done = await receive(records, key)
    except OperationalError:
        logger.warning("OTLP batch not stored: the database is busy", exc_info=True)
        return Outcome(503, "the database is busy; retry", retry_after=1)
    rejected = done.rejected + bad
    if rejected:
        wrong_ids = f"{bad} {noun} have trace or span ids of the wrong length or all zero"
        reason = done.reason or wrong_ids
        return Outcome(200, reason, rejected)
    return Outcome(200, _not_agent_warning(done.not_agent, noun))


def _not_agent_warning(count: int, noun: str) -> str:
    """The answer's warning for `count` records of traces with no agent's span in them."""
    if not count:
        return ""
    return (
        f"{count} {noun} belong to traces with no GenAI or agent span: kept, shown in no "
        "session until their trace sends one"
    )


def traces_answer(rejected: int, reason: str) -> ExportTraceServiceResponse:
    """The trace export's answer: `rejected` spans refused for `reason`."""
    answer = ExportTraceServiceResponse()
    if rejected or reason:  # a reason alone: a warning, all were accepted (OTLP)
        answer.partial_success.rejected_spans = rejected
        answer.partial_success.error_message = reason
    return answer


def logs_answer(rejected: int, reason: str) -> ExportLogsServiceResponse:
    """The log export's answer: `rejected` log records refused for `reason`."""
    answer = ExportLogsServiceResponse()
    if rejected or reason:  # a reason alone: a warning, all were accepted (OTLP)
        answer.partial_success.rejected_log_records = rejected
        answer.partial_success.error_message = reason
    return answer
