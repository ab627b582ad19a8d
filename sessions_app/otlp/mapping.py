"""Where a trace lands and what its spans say: pure functions over kept spans.

- `place`: the session key, turn key, app name and user of a trace (first attribute
  found wins, in the order of docs/otlp.md; spans read root first, then by start);
- `turn_drafts`: the events of a turn, ordered by time (a model span's input at its
  start, its output at its end; a tool span's call at its start, its result at its end),
  each once (calls and results by call id, other messages by role and text);
- `turn_outcome`: running while no root span arrived; else completed, or failed with a
  failure code from ``error.type`` (`FAILURE_CODE_RE`, else ``agent_error``) and a stage
  from the failing span's operation (under an OK root: a failed OpenInference tool that
  ended the run, `openinference.tool_error_ending_run`). Status descriptions and
  exception messages are never read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import itemgetter
from typing import Any, Protocol

from agentops.runtime.session import FailureStage, failure_code_of
from sessions_app.otlp import openllmetry, vercel_ai
from sessions_app.otlp.authors import USER, agent_names, author_of
from sessions_app.otlp.autogen import run_root
from sessions_app.otlp.messages import (
    EVENTS_KEY,
    Message,
    arguments_object,
    has_content,
    has_key_prefix,
    input_messages,
    output_messages,
    system_text,
)
from sessions_app.otlp.openinference import (
    operation_of,
    tool_call_id,
    tool_error_ending_run,
    tool_input,
    tool_output,
)
from sessions_app.otlp.tool_results import tool_results
from sessions_app.otlp.usage import model_of, span_usage

__all__ = ["Draft", "Outcome", "Place", "place", "turn_drafts", "turn_outcome"]

#: Attributes naming a trace's session, first match wins (docs/otlp.md).
SESSION_KEYS = (
    "gen_ai.conversation.id",
    "session.id",
    "langfuse.session.id",
    "adk.session_id",
    "gcp.vertex.agent.session_id",
    "langsmith.metadata.session_id",
    "langsmith.metadata.thread_id",
    "metadata.session_id",
    "metadata.thread_id",
    *vercel_ai.SESSION_KEYS,  # the Vercel AI SDK's telemetry metadata
    *openllmetry.SESSION_KEYS,  # OpenLLMetry's association properties
)
#: Attributes naming a trace's turn, first match wins.
TURN_KEYS = ("adk.turn_id", "gcp.vertex.agent.invocation_id", "gen_ai.agent.call.id")
USER_KEYS = ("user.id", "enduser.id", "resource.user.id", "resource.enduser.id")
MODEL_SPANS = {"chat", "generate_content", "text_completion", "call_llm"}
ERROR_STATUS = 2


class SpanLike(Protocol):
    """What the mapping reads of a span (`decode.SpanRecord` has it)."""

    span_id: str
    parent_span_id: str
    name: str
    start_at: datetime
    end_at: datetime
    status_code: int
    attributes: dict[str, Any]


@dataclass(slots=True)
class Place:
    """Where a trace lands: raw session and turn keys ("" = none found), app, user,
    whether any span carried message content, and the model its latest model span
    names ("" when none)."""

    session_key: str
    turn_key: str
    app_name: str
    user_id: str
    content_captured: bool
    model: str = ""


@dataclass(slots=True)
class Draft:
    """One event to store: its source key (unique in its turn), time, and columns."""

    key: str
    at: datetime
    role: str
    author: str = ""
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_response: dict[str, Any] | None = None
    tool_call_id: str = ""
    usage: dict[str, Any] | None = None
    finish_reason: str = ""


@dataclass(slots=True)
class Outcome:
    """A finished turn's status, reason, failure code and stage, and its end time."""

    status: str
    reason: str
    failure_code: str
    failure_stage: str
    finished_at: datetime


def _ordered(spans: Sequence[SpanLike]) -> list[SpanLike]:
    return sorted(spans, key=lambda s: (s.parent_span_id != "", s.start_at, s.span_id))


def _first(spans: Sequence[SpanLike], keys: Sequence[str]) -> str:
    # Only the spans holding one of the keys are read key by key (one set test each:
    # most spans hold none of them); for one key, each span is read once anyway.
    if len(keys) > 1:
        spans = [span for span in spans if not span.attributes.keys().isdisjoint(keys)]
    for key in keys:
        for span in spans:
            value = span.attributes.get(key)
            if value not in (None, "", [], {}) and str(value).strip():  # spaces name nothing
                return str(value)
    return ""


def place(spans: Sequence[SpanLike]) -> Place:
    """Where the trace of `spans` lands (see the module docstring)."""
    ordered = _ordered(spans)
    return Place(
        session_key=_first(ordered, SESSION_KEYS),
        turn_key=_first(ordered, TURN_KEYS),
        app_name=_first(ordered, ("resource.service.name",)) or "otlp",
        user_id=_first(ordered, (*USER_KEYS, *vercel_ai.USER_KEYS, *openllmetry.USER_KEYS)),
        content_captured=any(has_content(span.attributes) for span in spans),
        model=_model(sorted(spans, key=lambda s: (s.start_at, s.span_id), reverse=True)),
    )


def _model(spans: Sequence[SpanLike]) -> str:
    """The model of the first of `spans` naming one (`usage.model_of`)."""
    for span in spans:
        found = model_of(span.attributes)
        if isinstance(found, str) and found:
            return found[:255]
    return ""


def operation(span: SpanLike) -> str:
    """The GenAI operation of a span (``gen_ai.operation.name``, else its OpenInference
    span kind's or AI SDK operation's, else its name's first word: "chat gpt-4o" -> "chat")."""
    name = (attrs := span.attributes).get("gen_ai.operation.name")
    if isinstance(name, str) and name:
        return name
    return operation_of(attrs) or vercel_ai.operation_of(attrs) or span.name.split(" ")[0].lower()


#: Attributes (and prefixes) that make a span a model call whatever its operation.
_MODEL_KEYS = frozenset({"gen_ai.input.messages", "gcp.vertex.agent.llm_request", EVENTS_KEY})
_MODEL_PREFIXES = ("llm.input_messages.", "gen_ai.prompt.")


def _is_model(span: SpanLike) -> bool:
    attrs, kind = span.attributes, operation(span)
    if kind == "execute_tool":
        return False
    return (
        kind in MODEL_SPANS
        or not attrs.keys().isdisjoint(_MODEL_KEYS)
        or (
            has_key_prefix(attrs, *_MODEL_PREFIXES)
            and any(key.startswith(_MODEL_PREFIXES) for key in attrs)
        )
    )


def _after_last_assistant(messages: list[Message]) -> list[Message]:
    for index in range(len(messages) - 1, -1, -1):  # the last assistant, from the end
        if messages[index].role == "assistant":
            messages = messages[index + 1 :]
            break
    return [m for m in messages if m.role != "system"]


def _message_drafts(
    span: SpanLike, messages: list[Message], at: datetime, tag: str, author: str
) -> list[Draft]:
    drafts: list[Draft] = []
    for index, message in enumerate(messages):
        key = f"{span.span_id}:{tag}{index}"
        if message.results:
            for number, result in enumerate(message.results):
                drafts.append(
                    Draft(
                        key=f"{key}.{number}",
                        at=at,
                        role="tool",
                        author=author,
                        tool_response={
                            "tool_call_id": result.call_id,
                            "name": result.name,
                            "result": result.result,
                        },
                    )
                )
            continue
        calls = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.calls if c.id
        ]
        if not message.text and not calls:
            continue
        finish = "tool_calls" if calls else ("stop" if message.role == "assistant" else "")
        drafts.append(
            Draft(
                key=key,
                at=at,
                role=message.role,
                author=USER if message.role == "user" else author,
                text=message.text,
                tool_calls=calls,
                finish_reason=finish,
            )
        )
    return drafts


ADK_NO_ID = "<not specified>"  # ADK's gen_ai.tool.call.id of a tool that raised


def _legacy_adk(attrs: dict[str, Any], key: str, legacy: str) -> Any:
    """`key`, else ADK's legacy attribute (its "{}" placeholder: not captured)."""
    value = attrs.get(key)
    if value is None and attrs.get(legacy) not in (None, "{}", "N/A"):
        value = attrs.get(legacy)
    return value


def span_drafts(
    span: SpanLike,
    first_model: bool,
    model: bool | None = None,
    nested_model: bool = False,
    agent: str = "",
) -> list[Draft]:
    """The candidate events of one span (before the turn drops repeats); `model`:
    `_is_model(span)` when the caller knows it; `agent`: the agent it runs under."""
    author = author_of(attrs := vercel_ai.as_genai(span.attributes), agent)  # AI SDK's ai.*
    if model is None:
        model = _is_model(span)
    drafts: list[Draft] = []
    kind = operation(span)
    if kind == "execute_tool":  # OpenInference's TOOL spans too (`openinference`)
        raw_id = attrs.get("gen_ai.tool.call.id") or tool_call_id(attrs)
        call_id = str(raw_id) if raw_id not in (None, "", ADK_NO_ID) else f"span-{span.span_id}"
        name = str(attrs.get("gen_ai.tool.name") or attrs.get("tool.name") or span.name)
        arguments = _legacy_adk(
            attrs, "gen_ai.tool.call.arguments", "gcp.vertex.agent.tool_call_args"
        )
        if arguments is None:
            arguments = tool_input(attrs)
        call = {"id": call_id, "name": name, "arguments": arguments_object(arguments)}
        drafts.append(
            Draft(
                f"{span.span_id}:call",
                span.start_at,
                "assistant",
                author,
                tool_calls=[call],
                finish_reason="tool_calls",
            )
        )
        response: dict[str, Any] = {"tool_call_id": call_id, "name": name}
        if span.status_code == ERROR_STATUS:
            response["error"] = str(attrs.get("error.type") or "error")
        else:
            result = _legacy_adk(attrs, "gen_ai.tool.call.result", "gcp.vertex.agent.tool_response")
            if result is None:
                result = tool_output(attrs)
            response["result"] = result if result is not None else {"content_captured": False}
        drafts.append(
            Draft(f"{span.span_id}:result", span.end_at, "tool", author, tool_response=response)
        )
        return drafts
    if not model and kind != "invoke_agent":
        return drafts
    system = system_text(attrs) if first_model else ""  # only the first model span's is read
    inputs: list[Message] | None = None
    if first_model and not system:  # a system message among the inputs (openai-v2 does)
        # All of them, read once: what follows the last assistant message is the same
        # whether the history before it was read or not (`_after_last_assistant`).
        inputs = input_messages(attrs)
        system = "\n".join(m.text for m in inputs if m.role == "system")
    if system and first_model:
        drafts.append(Draft(f"{span.span_id}:system", span.start_at, "system", author, text=system))
    if inputs is None:
        inputs = input_messages(attrs, after_last_assistant=True)
    drafts += _message_drafts(span, _after_last_assistant(inputs), span.start_at, "in", author)
    outputs = _message_drafts(span, output_messages(attrs), span.end_at, "out", author)
    usage = span_usage(span.attributes) if model and not nested_model else None
    if outputs and usage is not None:
        outputs[-1].usage = usage
    elif usage is not None:  # no content (or none kept): an event of usage alone
        outputs = [Draft(f"{span.span_id}:usage", span.end_at, "assistant", author, usage=usage)]
    return drafts + outputs


_BY_TIME = itemgetter(0, 1, 2)


def turn_drafts(spans: Sequence[SpanLike], extra: Sequence[Draft] = ()) -> list[Draft]:
    """The events of a turn made of `spans` (and the `extra` drafts of its log records,
    `log_mapping`), in time order, each once: a call on the first model message that
    carries it (also when the tool span that ran it started before that message ended)."""
    candidates: list[tuple[datetime, datetime, int, Draft]] = [
        (d.at, d.at, n, d) for n, d in enumerate(extra)
    ]
    first_model = True
    ordered = [(span, _is_model(span)) for span in vercel_ai.in_call_order(spans)]
    model_ids = {span.span_id for span, model in ordered if model}
    agents = agent_names(spans)
    for span, model in ordered:
        # ADK's legacy generate_content span repeats its call_llm parent's usage.
        nested = span.parent_span_id in model_ids
        found = span_drafts(span, first_model, model, nested, agents.get(span.span_id, ""))
        if model:
            first_model = False
        candidates += [(d.at, span.start_at, n, d) for n, d in enumerate(found)]
    candidates.sort(key=_BY_TIME)  # then by number: equal times keep their order
    tool_results([d for *_, d in candidates])  # paired, and results filled
    carried = {c["id"] for *_, d in candidates if d.key[-5:] != ":call" for c in d.tool_calls}
    seen_calls = set(carried)
    seen_results: set[str] = set()
    seen_text: set[tuple[str, str]] = set()
    drafts: list[Draft] = []
    for *_, draft in candidates:
        if draft.tool_response is not None:
            call_id = draft.tool_response["tool_call_id"]
            if call_id in seen_results:
                continue
            seen_results.add(call_id)
            drafts.append(draft)
            continue
        # An event of usage alone (a model request whose text was not sent) is kept.
        usage_alone = not draft.text and not draft.tool_calls and draft.usage is not None
        if draft.tool_calls and draft.key.endswith(":call"):  # a tool span's
            draft.tool_calls = [c for c in draft.tool_calls if c["id"] not in seen_calls]
            seen_calls.update(c["id"] for c in draft.tool_calls)
        elif draft.tool_calls:  # the first message carrying a call keeps it
            draft.tool_calls = [c for c in draft.tool_calls if c["id"] in carried]
            carried.difference_update(c["id"] for c in draft.tool_calls)
        signature = (draft.role, draft.text)
        if draft.text and signature in seen_text and not draft.tool_calls:
            continue
        if not draft.text and not draft.tool_calls and not usage_alone:
            continue
        seen_text.add(signature)
        drafts.append(draft)
    return drafts


def _stage(span: SpanLike) -> str:
    if _is_model(span):
        return FailureStage.PROVIDER.value
    if operation(span) == "execute_tool":
        return FailureStage.TOOL.value
    return FailureStage.AGENT.value


def root_of(spans: Sequence[SpanLike]) -> SpanLike | None:
    """The turn's root: the trace's span without a parent (None until it arrives; under
    AutoGen's runtime span, the agent's run: `autogen.run_root`)."""
    return run_root(spans, [span for span in spans if not span.parent_span_id])


def turn_outcome(spans: Sequence[SpanLike]) -> Outcome | None:
    """The outcome of a turn (None: still running; see the module docstring)."""
    root = root_of(spans)
    if root is None:
        return None
    if root.status_code != ERROR_STATUS:
        if (origin := tool_error_ending_run(spans)) is None:  # the Agents SDK's OK root
            return Outcome("completed", "", "", "", root.end_at)
    else:
        failing = [s for s in spans if s.status_code == ERROR_STATUS and s is not root]
        origin = min(failing, key=lambda s: (s.end_at, s.span_id)) if failing else root
    code = origin.attributes.get("error.type") or root.attributes.get("error.type")
    return Outcome("failed", "agent_error", failure_code_of(code), _stage(origin), root.end_at)
