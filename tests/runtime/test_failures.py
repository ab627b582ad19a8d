"""Default failure classifier (docs/runtime.md §6)."""

from __future__ import annotations

import pytest

from agentops.runtime import FailureStage, TurnFailure, default_failure_classifier

SECRET = "password=hunter2"


class Safe(Exception):
    def __init__(self, failure: TurnFailure | None) -> None:
        super().__init__(SECRET)
        self.failure = failure

    def turn_failure(self) -> TurnFailure | None:
        return self.failure


class Broken(Exception):
    def turn_failure(self) -> TurnFailure:
        raise RuntimeError("bug")


@pytest.mark.parametrize(
    ("stage", "code"),
    [
        (FailureStage.AGENT, "agent_error"),
        (FailureStage.PROVIDER, "provider_error"),
        (FailureStage.TOOL, "tool_error"),
        (FailureStage.PERSISTENCE, "persistence_error"),
        (FailureStage.CONSUMER, "consumer_error"),
    ],
)
def test_generic_failure_by_stage_never_copies_exception_text(
    stage: FailureStage, code: str
) -> None:
    failure = default_failure_classifier(ValueError(SECRET), stage)
    assert failure == TurnFailure(code=code, message="", stage=stage)


def test_unknown_stage_gets_execution_error() -> None:
    failure = default_failure_classifier(ValueError(SECRET), "elsewhere")  # type: ignore[arg-type]
    assert failure.code == "execution_error" and failure.message == ""


def test_provider_failure_used_with_its_message_and_empty_stage_filled() -> None:
    exc = Safe(TurnFailure(code="quota.exceeded", message="Quota exceeded."))
    failure = default_failure_classifier(exc, FailureStage.PROVIDER)
    assert failure == TurnFailure(
        code="quota.exceeded", message="Quota exceeded.", stage="provider"
    )
    exc = Safe(TurnFailure(code="q", message="m", stage="tool"))
    assert default_failure_classifier(exc, FailureStage.AGENT).stage == "tool"


def test_provider_found_through_cause_context_and_groups() -> None:
    inner = Safe(TurnFailure(code="deep", message="safe"))
    try:
        try:
            raise inner
        except Safe as error:
            raise RuntimeError(SECRET) from error
    except RuntimeError as error:
        by_cause = error
    assert default_failure_classifier(by_cause, FailureStage.AGENT).code == "deep"

    try:
        try:
            raise inner
        except Safe:
            raise RuntimeError(SECRET) from None
    except RuntimeError as error:
        by_context = error
    assert default_failure_classifier(by_context, FailureStage.AGENT).code == "deep"

    group = ExceptionGroup("many", [ValueError(SECRET), ExceptionGroup("nested", [inner])])
    assert default_failure_classifier(group, FailureStage.AGENT).code == "deep"


def test_provider_without_code_or_raising_is_ignored() -> None:
    group = ExceptionGroup("g", [Safe(None), Safe(TurnFailure(code="")), Broken()])
    failure = default_failure_classifier(group, FailureStage.TOOL)
    assert failure == TurnFailure(code="tool_error", message="", stage="tool")


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("openai.RateLimitError", "openai.rate_limit_error"),
        ("<class 'openai.InternalServerError'>", "openai.internal_server_error"),
        ("RuntimeError", "runtime_error"),
        ("HTTPError", "http_error"),
        ("MALFORMED_FUNCTION_CALL", "malformed_function_call"),
        ("ValueError: password=hunter2", "value_error_password_hunter2"),
        ("429", "429"),
        ("", "agent_error"),
        (None, "agent_error"),
        ("¿?", "agent_error"),
        ("E" * 300, "e" * 128),
    ],
)
def test_failure_code_of_gives_readable_codes_in_the_grammar(value: object, code: str) -> None:
    """Exception type names keep their words ("Runtime error", not "Runtimeerror")."""
    from agentops.runtime.session import failure_code_of, is_valid_failure_code

    assert failure_code_of(value) == code
    assert is_valid_failure_code(failure_code_of(value))
