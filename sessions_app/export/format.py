"""The `agentops.session-export/1` document as pydantic models: the one definition of the
export format.

`docs/session-export.schema.json` is generated from these models
(`sessions_app.export.schema`, `manage.py export_schema --write`), and the importer
(`sessions_app.ingest.formats.agentops_export`) validates every export it reads with
them before anything is written. The enums come from the runtime
(`agentops.runtime`: turn status, reason, failure stage and code, roles, content part
types, finish reasons) and from the models' choices (source format, tool outcome);
session and turn ids follow the id rules of `sessions_app.ids`.

Validation is strict about types (an integer is never a string or a boolean) and keeps
values as they are: times stay ISO 8601 strings (checked, not converted), JSON values
(state, arguments, results, raw records) are taken as they are.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    WithJsonSchema,
)

from agentops.runtime.model import ContentPartType, FinishReason, Role, Usage
from agentops.runtime.session import (
    FAILURE_CODE_RE,
    FailureStage,
    TurnReason,
    TurnStatus,
    is_valid_failure_code,
)
from sessions_app.ids import (
    MAX_ID_LENGTH,
    MAX_TURN_ID_LENGTH,
    session_id_problem,
    turn_id_problem,
)
from sessions_app.models import Session, ToolOutcome

#: The document's `schema` value: names the format and its version.
ExportSchemaName = Literal["agentops.session-export/1"]
EXPORT_SCHEMA: str = get_args(ExportSchemaName)[0]


def _iso_time(value: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise ValueError("not an ISO 8601 time") from None
    return value


def _session_id(value: str) -> str:
    problem = session_id_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _turn_id(value: str) -> str:
    problem = turn_id_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _session_id_or_empty(value: str) -> str:
    return _session_id(value) if value else value


def _turn_id_or_empty(value: str) -> str:
    return _turn_id(value) if value else value


def _failure_code_or_empty(value: str) -> str:
    if value and not is_valid_failure_code(value):
        raise ValueError(f"failure code {value[:60]!r} does not match {FAILURE_CODE_RE.pattern}")
    return value


_STAGES = ("", *(stage.value for stage in FailureStage))


def _stage_or_empty(value: str) -> str:
    if value not in _STAGES:
        raise ValueError(f"failure stage {value[:40]!r} is not one of {list(_STAGES)}")
    return value


def _not_null(value: Any) -> Any:
    if value is None:
        raise ValueError("may be left out, but not null")
    return value


def _without_default(schema: dict[str, Any]) -> None:
    # A key that may be left out has no default in the document: None only stands for
    # "absent" in the model.
    schema.pop("default", None)


_TIME_SCHEMA = {"type": "string", "format": "date-time", "description": "ISO 8601, UTC"}

#: An ISO 8601 time (UTC as written by the export), kept as the string it is.
IsoTime = Annotated[StrictStr, AfterValidator(_iso_time), WithJsonSchema(_TIME_SCHEMA)]
#: A session id a URL can carry (`sessions_app.ids.session_id_problem`).
SessionId = Annotated[
    StrictStr,
    AfterValidator(_session_id),
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_ID_LENGTH,
            "description": "no '/', no control characters, not '.' or '..'",
        }
    ),
]
#: A session id, or "" for none (a session that is no sub-agent has no parent).
SessionIdOrEmpty = Annotated[
    StrictStr,
    AfterValidator(_session_id_or_empty),
    WithJsonSchema(
        {
            "type": "string",
            "maxLength": MAX_ID_LENGTH,
            "description": "empty, or a session id: no '/', no control characters, not '.' or '..'",
        }
    ),
]
_TURN_ID_SCHEMA: dict[str, Any] = {
    "type": "string",
    "maxLength": MAX_TURN_ID_LENGTH,
    "description": "no control characters, no '.' or '..' segment between '/'",
}
#: A turn id a URL can carry (`sessions_app.ids.turn_id_problem`).
TurnId = Annotated[
    StrictStr, AfterValidator(_turn_id), WithJsonSchema({**_TURN_ID_SCHEMA, "minLength": 1})
]
#: A turn id, or "" for none (legacy events, audit rows that did not know the turn).
TurnIdOrEmpty = Annotated[
    StrictStr, AfterValidator(_turn_id_or_empty), WithJsonSchema(_TURN_ID_SCHEMA)
]
#: A failure code (the runtime's `FAILURE_CODE_RE`), or "" when the turn has no failure.
FailureCodeOrEmpty = Annotated[
    StrictStr,
    AfterValidator(_failure_code_or_empty),
    WithJsonSchema({"type": "string", "pattern": f"^(?:{FAILURE_CODE_RE.pattern})?$"}),
]
#: A `FailureStage` value, or "" when the turn has no failure.
FailureStageOrEmpty = Annotated[
    StrictStr, AfterValidator(_stage_or_empty), WithJsonSchema({"enum": list(_STAGES)})
]


#: A string that may be left out (None in the model), but is never null in a document.
OmittableStr = Annotated[
    StrictStr | None,
    BeforeValidator(_not_null),
    WithJsonSchema({"type": "string"}),
    Field(json_schema_extra=_without_default),
]
#: A `ContentPartType` value that may be left out, but is never null in a document.
OmittablePartType = Annotated[
    ContentPartType | None,
    BeforeValidator(_not_null),
    WithJsonSchema({"enum": [t.value for t in ContentPartType]}),
    Field(json_schema_extra=_without_default),
]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExportSession(_Part):
    """The session header."""

    id: SessionId
    app_name: StrictStr
    user_id: StrictStr
    title: Annotated[StrictStr, Field(max_length=500)]
    state: dict[str, Any] = Field(
        description="session state; the todo list is in todo_list, never here"
    )
    source_format: Session.SourceFormat
    source_path: StrictStr = Field(
        description="the file the session was first imported from (empty for runtime sessions)"
    )
    created_at: IsoTime
    updated_at: IsoTime
    protocol_issue_count: StrictInt = Field(ge=0, description="derived; recomputed on import")
    cannot_resume: StrictBool = Field(description="derived; recomputed on import")
    orphan_result_count: StrictInt = Field(
        default=0,
        ge=0,
        description="tool results that answer no call (derived; recomputed on import); "
        "absent in exports written before it was added",
    )
    parent_session_id: SessionIdOrEmpty = Field(
        default="",
        description="a sub-agent's parent session (empty: not a sub-agent; absent in "
        "exports written before it was added)",
    )
    parent_call_id: StrictStr = Field(
        default="",
        description="the parent's tool call that started this sub-agent (empty: unknown "
        "or not a sub-agent)",
    )
    model: OmittableStr = Field(
        default=None, description="the model the source named (absent or empty: unknown)"
    )


class ExportTurn(_Part):
    """One turn's record: how it ended and why."""

    id: TurnId
    status: TurnStatus
    reason: TurnReason
    failure_code: FailureCodeOrEmpty
    failure_stage: FailureStageOrEmpty
    failure_message: StrictStr
    status_note: StrictStr
    started_at: IsoTime
    finished_at: IsoTime | None = Field(description="ISO 8601, UTC, or null while running")


class ExportContentPart(BaseModel):
    """One part of a multimodal message (other keys: text, image_url, image_base64...)."""

    model_config = ConfigDict(extra="allow")

    type: OmittablePartType = None


class ExportToolCall(BaseModel):
    """A tool call an assistant event requested."""

    model_config = ConfigDict(extra="allow")

    id: StrictStr
    name: StrictStr
    arguments: dict[str, Any]
    thought_signature: StrictStr | None = Field(
        default=None, description="opaque provider token (base64), null when none"
    )


class ExportToolResponse(BaseModel):
    """The structured result of a tool call."""

    model_config = ConfigDict(extra="allow")

    tool_call_id: StrictStr
    name: OmittableStr = None
    result: Any = Field(default=None, json_schema_extra=_without_default)
    error: OmittableStr = None


class ExportUsage(Usage):
    """Token usage of one model call (the runtime's `Usage`; counts are integers)."""

    model_config = ConfigDict(strict=True)


class ExportEvent(_Part):
    """One event, with every stored field."""

    id: StrictInt = Field(
        ge=1, description="the id where it was exported; a re-import assigns a new one"
    )
    turn_id: TurnIdOrEmpty = Field(description="empty for legacy events")
    source_id: StrictStr
    author: StrictStr
    role: Role
    text: StrictStr
    parts: list[ExportContentPart]
    reasoning: StrictStr
    tool_calls: list[ExportToolCall]
    tool_response: ExportToolResponse | None
    tool_call_id: StrictStr
    pending_call_ids: list[StrictStr]
    finish_reason: FinishReason
    usage: ExportUsage | None
    state_delta: dict[str, Any]
    raw: Any = Field(description="the source record(s) the event was imported from; any JSON")
    created_at: IsoTime
    updated_at: IsoTime
    deleted_at: IsoTime | None = Field(description="ISO 8601, UTC, or null")
    archived_at: IsoTime | None = Field(description="ISO 8601, UTC, or null")


class ExportTodoItem(_Part):
    """One item of the todo list."""

    position: StrictInt = Field(ge=0)
    content: StrictStr
    status: StrictStr = Field(
        description="pending, in_progress, completed or any other string (docs/runtime.md §7)"
    )
    active_form: StrictStr


class ExportTodoChange(_Part):
    """One audited change of the todo list (`TodoChange`)."""

    version: StrictInt = Field(ge=0)
    # The todo app's `TodoChange.Actor` values (a test keeps them equal): the export format
    # does not import the todo app, which depends on sessions, not the other way round.
    actor: Literal["agent", "person", "import", "api"]
    user: StrictStr | None = Field(description="username")
    turn_id: TurnIdOrEmpty
    event_id: StrictInt | None = Field(
        description="an id of this document's events (or of an event no longer stored)"
    )
    action: StrictStr
    before: list[Any]
    after: list[Any]
    created_at: IsoTime


class ExportTodoList(_Part):
    """The session's todo list: version, items and its audit."""

    version: StrictInt = Field(ge=0)
    updated_at: IsoTime
    items: list[ExportTodoItem]
    changes: list[ExportTodoChange] = Field(description="the audit (TodoChange), oldest first")


class ExportToolOutcome(_Part):
    """A recorded outcome of an unanswered tool call (`ToolOutcome`)."""

    event_id: StrictInt = Field(description="the assistant event's id in this document")
    call_id: StrictStr
    tool_name: StrictStr
    outcome: ToolOutcome.Outcome
    result: Any
    reason: StrictStr
    recorded_by: StrictStr | None = Field(description="username")
    recorded_at: IsoTime


class ExportDocument(_Part):
    """One session as written by `manage.py export_session` and the session page's 'Export
    JSON' link, read back by `manage.py import_sessions` (format agentops_export).
    Credential-shaped values are already redacted as '[REDACTED:<kind>]'."""

    model_config = ConfigDict(title="agentops session export, version 1")

    schema_: ExportSchemaName = Field(alias="schema")
    exported_at: IsoTime
    session: ExportSession
    turns: list[ExportTurn] = Field(description="ordered by started_at, then id")
    events: list[ExportEvent] = Field(
        description="every event, soft-deleted and archived ones included, in conversation "
        "(id) order"
    )
    todo_list: ExportTodoList | None
    tool_outcomes: list[ExportToolOutcome] = Field(
        description="recorded outcomes of unanswered tool calls (ToolOutcome), oldest first"
    )


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for step in loc:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out or "the document"


def _one_line(text: str) -> str:
    """`text` with every character that is not printable (newlines too) escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def validation_problem(exc: ValidationError) -> str:
    """One line saying where an export does not fit the format and why, e.g.
    "turns[3].failure_code: failure code 'x y' does not match [a-z0-9_.-]{1,128}", with
    "(and N more problems)" when there are others."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    others = len(errors) - 1
    more = f" (and {others} more problem{'s' if others > 1 else ''})" if others else ""
    # Our own validators' messages say what is wrong without pydantic's "Value error, ".
    why = str(first["ctx"]["error"]) if first["type"] == "value_error" else first["msg"]
    return _one_line(f"{_location(first['loc'])}: {why}{more}")


def validate_export(data: Any) -> ExportDocument:
    """`data` (a decoded export document) as an `ExportDocument`.

    Raises ValueError with a one-line `validation_problem` when it does not fit.
    """
    try:
        return ExportDocument.model_validate(data)
    except ValidationError as exc:
        raise ValueError(validation_problem(exc)) from None
