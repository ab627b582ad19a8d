"""Plain words for the runtime's machine words: one label and one line of explanation for
every turn status, turn reason, failure stage and known failure code, with the docs anchor
that explains it (docs/concepts.md). Pages show the label as text, the explanation as a
tooltip, and keep the raw word only as a secondary detail.

The keys are the runtime's own enums (`agentops.runtime.session`) and the codes it emits
(`agentops.runtime.failures.GENERIC_FAILURE_CODES`, docs/runtime.md §6); a test checks
that every enum value has a label here.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentops.runtime.failures import GENERIC_FAILURE_CODES
from agentops.runtime.session import FailureStage, TurnReason, TurnStatus


@dataclass(frozen=True, slots=True)
class Label:
    """What a page shows for a machine word: `text` (the label), `help` (one line, the
    tooltip) and `anchor` (a heading of docs/concepts.md, without "#")."""

    text: str
    help: str
    anchor: str


STATUSES: dict[str, Label] = {
    TurnStatus.RUNNING: Label("Running", "The turn is in progress.", "turn-statuses"),
    TurnStatus.COMPLETED: Label(
        "Completed",
        "The agent finished normally; its events are replayed as stored.",
        "turn-statuses",
    ),
    TurnStatus.INTERRUPTED: Label(
        "Stopped early",
        "The turn stopped before its end without an error of its own; the reason says why.",
        "turn-statuses",
    ),
    TurnStatus.FAILED: Label(
        "Failed", "The run raised an error; the failure says what and where.", "turn-statuses"
    ),
    # Not runtime statuses: the triage queue derives these two (sessions_app/triage).
    "stuck": Label(
        "Stuck",
        "Still running, but no new event for longer than the stuck threshold.",
        "stuck-turns",
    ),
    "blocks": Label(
        "Blocks the session",
        "Completed, but a tool call it made has no result (lost, or awaiting a person's "
        "decision), so the session cannot resume until the call's outcome or the decision is "
        "recorded.",
        "cannot-resume",
    ),
    # Not a runtime status: events stored without a turn record.
    "legacy": Label(
        "No turn record",
        "Events stored without a turn record (older imports); they are sent as stored.",
        "legacy-events",
    ),
}

REASONS: dict[str, Label] = {
    TurnReason.NONE: Label("", "", "turn-reasons"),
    TurnReason.CANCELED: Label(
        "Stopped by a person",
        "Stopped on purpose: someone pressed Stop, the run was cancelled, or the transcript "
        "marks an interrupt.",
        "turn-reasons",
    ),
    TurnReason.DEADLINE_EXCEEDED: Label(
        "Ran out of time", "A timeout or deadline ended the run before it finished.", "turn-reasons"
    ),
    TurnReason.CONSUMER_STOPPED: Label(
        "Reader stopped",
        "Whoever read the run's events stopped before the end (imports: calls await the user).",
        "turn-reasons",
    ),
    TurnReason.AGENT_ERROR: Label(
        "Error", "The agent, provider, tool check, store or reader raised an error.", "turn-reasons"
    ),
    TurnReason.ABANDONED: Label(
        "Abandoned",
        "Its worker died or went away mid-turn (recovered later), or the transcript ends "
        "inside the turn.",
        "turn-reasons",
    ),
}

STAGES: dict[str, Label] = {
    FailureStage.AGENT: Label(
        "in the agent", "Projecting history, or running the agent.", "failure-stages"
    ),
    FailureStage.PROVIDER: Label(
        "at the model provider", "Talking to the model provider.", "failure-stages"
    ),
    FailureStage.TOOL: Label(
        "at a tool",
        "Running a tool, or checking the tool calls before the agent ran.",
        "failure-stages",
    ),
    FailureStage.PERSISTENCE: Label(
        "in the database", "Reading from or writing to the store.", "failure-stages"
    ),
    FailureStage.CONSUMER: Label(
        "handing out events", "Handing an event to whoever read the run.", "failure-stages"
    ),
}

_GENERIC_HELP = "An error that did not describe itself (generic failure of its stage)."
CODES: dict[str, Label] = {
    **{
        code: Label(f"{stage.capitalize()} error", _GENERIC_HELP, "failure-codes")
        for stage, code in GENERIC_FAILURE_CODES.items()
    },
    "execution_error": Label("Run error", _GENERIC_HELP, "failure-codes"),
    "tool_execution_unknown": Label(
        "Unknown whether tools ran",
        "Refused: the history holds tool calls with no result; a person must say what happened.",
        "cannot-resume",
    ),
    "provider_error": Label("Model provider error", _GENERIC_HELP, "failure-codes"),
    "provider_rate_limited": Label(
        "Rate limited", "The model provider refused: too many requests.", "failure-codes"
    ),
}

#: Statuses of todo items (`agentops.runtime.todos`); an agent may write another word.
TODO_STATUSES: dict[str, Label] = {
    "pending": Label("To do", "Not started yet.", "todo-lists"),
    "in_progress": Label(
        "In progress", "Being worked on; the active form says what is happening.", "todo-lists"
    ),
    "completed": Label("Done", "Finished.", "todo-lists"),
}

KINDS = {
    "status": STATUSES,
    "reason": REASONS,
    "stage": STAGES,
    "code": CODES,
    "todo": TODO_STATUSES,
}


def label_for(kind: str, value: object) -> Label:
    """The Label of `value` (a machine word or a StrEnum member) of `kind` ("status",
    "reason", "stage", "code" or "todo"). An unknown value (a custom failure code) gets itself
    as text, its words split on "_", with a tooltip saying it is the raw word.

    Raises KeyError for an unknown `kind`."""
    table = KINDS[kind]
    word = str(getattr(value, "value", value) or "")
    known = table.get(word)
    if known is not None:
        return known
    text = word.replace("_", " ").replace(".", " ").strip().capitalize()
    return Label(text, f"Recorded as “{word}”.", "failure-codes" if kind == "code" else "")
