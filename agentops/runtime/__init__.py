"""agentops runtime: sessions, durable turns, the runner and its helpers (docs/runtime.md §1-7).

Framework-free: nothing below this package imports Django. The main names are
re-exported here; see each module for the details.
"""

from __future__ import annotations

from agentops.runtime.errors import (
    AgentOpsRuntimeError,
    EventNotFoundError,
    InvalidEventError,
    InvalidOutcomeError,
    InvalidTurnError,
    NothingToContinueError,
    SessionNotFoundError,
    ToolExecutionUnknownError,
    TurnNotFoundError,
    TurnStateConflictError,
)
from agentops.runtime.failures import (
    FailureClassifier,
    TurnFailureProvider,
    default_failure_classifier,
)
from agentops.runtime.memory import (
    InMemorySessionService,
    InMemoryTodoStore,
    LegacyInMemorySessionService,
)
from agentops.runtime.model import (
    Content,
    ContentPart,
    Event,
    FinishReason,
    Role,
    ToolCall,
    ToolResponse,
    Usage,
)
from agentops.runtime.projection import (
    DefaultProjector,
    ProjectionExplanation,
    ProjectionInput,
    Projector,
    ProjectorFunc,
    explain_projection,
    project_default,
)
from agentops.runtime.protocol import (
    NOTHING_TO_CONTINUE,
    OrphanResult,
    ToolProtocolIssue,
    continuation_problem,
    inspect_orphan_results,
    inspect_tool_protocol,
    validate_continuation,
    validate_tool_protocol,
)
from agentops.runtime.runner import Agent, Runner, cleanup_errors
from agentops.runtime.session import (
    FailureStage,
    RunLock,
    Session,
    SessionService,
    Turn,
    TurnFailure,
    TurnOutcome,
    TurnReason,
    TurnStatus,
    TurnStore,
    validate_outcome,
)
from agentops.runtime.todos import TodoItem, TodoStore, TodoTools

__all__ = [
    "NOTHING_TO_CONTINUE",
    "Agent",
    "AgentOpsRuntimeError",
    "Content",
    "ContentPart",
    "DefaultProjector",
    "Event",
    "EventNotFoundError",
    "FailureClassifier",
    "FailureStage",
    "FinishReason",
    "InMemorySessionService",
    "InMemoryTodoStore",
    "InvalidEventError",
    "InvalidOutcomeError",
    "InvalidTurnError",
    "LegacyInMemorySessionService",
    "NothingToContinueError",
    "OrphanResult",
    "ProjectionExplanation",
    "ProjectionInput",
    "Projector",
    "ProjectorFunc",
    "Role",
    "RunLock",
    "Runner",
    "Session",
    "SessionNotFoundError",
    "SessionService",
    "TodoItem",
    "TodoStore",
    "TodoTools",
    "ToolCall",
    "ToolExecutionUnknownError",
    "ToolProtocolIssue",
    "ToolResponse",
    "Turn",
    "TurnFailure",
    "TurnFailureProvider",
    "TurnNotFoundError",
    "TurnOutcome",
    "TurnReason",
    "TurnStateConflictError",
    "TurnStatus",
    "TurnStore",
    "Usage",
    "cleanup_errors",
    "continuation_problem",
    "default_failure_classifier",
    "explain_projection",
    "inspect_orphan_results",
    "inspect_tool_protocol",
    "project_default",
    "validate_continuation",
    "validate_outcome",
    "validate_tool_protocol",
]
