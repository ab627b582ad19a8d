"""Failure classification: exception + stage -> safe `TurnFailure` (docs/runtime.md §6).

A classifier must never copy arbitrary exception text: exception messages may contain
user data, secrets or instructions to a model. Only an exception that *provides* a
failure (has a ``turn_failure()`` method, see `TurnFailureProvider`) contributes a
message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Protocol, runtime_checkable

from agentops.runtime.session import FailureStage, TurnFailure

__all__ = [
    "GENERIC_FAILURE_CODES",
    "FailureClassifier",
    "TurnFailureProvider",
    "default_failure_classifier",
    "generic_failure",
    "iter_exception_chain",
]

logger = logging.getLogger(__name__)

#: Code of the generic failure per stage; `execution_error` for any other stage.
GENERIC_FAILURE_CODES: dict[str, str] = {
    FailureStage.AGENT: "agent_error",
    FailureStage.PROVIDER: "provider_error",
    FailureStage.TOOL: "tool_error",
    FailureStage.PERSISTENCE: "persistence_error",
    FailureStage.CONSUMER: "consumer_error",
}

#: ``classifier(exception, stage) -> TurnFailure | None`` (None: failed, no failure).
FailureClassifier = Callable[[BaseException, FailureStage], TurnFailure | None]


@runtime_checkable
class TurnFailureProvider(Protocol):
    """An exception that knows its own safe failure (code, message, stage)."""

    def turn_failure(self) -> TurnFailure | None:
        """The failure to record; its message must be safe to store and show."""
        ...


def iter_exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, then depth-first its group members, `__cause__` and `__context__`; no repeats."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        following: list[BaseException] = []
        if isinstance(current, BaseExceptionGroup):
            following.extend(current.exceptions)
        if current.__cause__ is not None:
            following.append(current.__cause__)
        if current.__context__ is not None:
            following.append(current.__context__)
        stack.extend(reversed(following))


def generic_failure(stage: str) -> TurnFailure:
    """The generic failure of `stage`: code by stage, empty message (docs/runtime.md §6)."""
    return TurnFailure(
        code=GENERIC_FAILURE_CODES.get(stage, "execution_error"), message="", stage=stage
    )


def default_failure_classifier(exc: BaseException, stage: FailureStage) -> TurnFailure:
    """The default classifier (docs/runtime.md §6).

    The first exception in the chain of `exc` (see `iter_exception_chain`) whose
    ``turn_failure()`` returns a failure with a non-empty code wins, message included; an
    empty stage is filled with `stage`. Otherwise a generic failure with an empty
    message. A provider whose ``turn_failure()`` raises is skipped.
    """
    for current in iter_exception_chain(exc):
        method = getattr(current, "turn_failure", None)
        if not callable(method):
            continue
        try:
            failure = method()
        except Exception:
            logger.warning("turn_failure() of %s raised; ignored", type(current).__name__)
            continue
        if isinstance(failure, TurnFailure) and failure.code:
            if not failure.stage:
                failure = failure.model_copy(update={"stage": str(stage)})
            return failure
    return generic_failure(str(stage))
