"""The LangSmith SDK's spans made plain before they are kept: what the mapping reads of them.

The ``langsmith`` SDK (tested: 0.15.1) with ``LANGSMITH_OTEL_ENABLED=true`` exports each
run as a span (scope ``langsmith``) naming its run type, ``langsmith.span.kind``
(``chain``, ``llm``, ``tool``, ``prompt``, ``retriever``, ...), with
``gen_ai.operation.name`` from it (``llm`` and ``prompt``: ``chat``; ``tool``:
``execute_tool``; others the run type), the run's inputs as JSON in ``gen_ai.prompt`` and
its outputs in ``gen_ai.completion``. Around LangChain / LangGraph, a chat model's run
(``llm``) has as inputs ``{"messages": [[...]]}`` (a batch of prompts, each a list of
LangChain messages as ``dumpd`` serialises them: ``{"lc": 1, "type": "constructor",
"id": [..., "HumanMessage"], "kwargs": {"content", "type", "tool_calls",
"tool_call_id", "status", ...}}``) and as outputs ``{"generations": [[{"text",
"message"}]]}``; a completion model's inputs are ``{"prompts": [...]}``. A tool's run has
its arguments as inputs and ``{"output": <the ToolMessage>}`` as outputs; a chain's (a
graph, a node, a runnable) the graph state: every message so far.

`langsmith_attributes` turns a model span's messages into the GenAI attributes
(``gen_ai.system_instructions``: its system messages; ``gen_ai.input.messages``: the
others; ``gen_ai.output.messages``: the first prompt's generations), a tool span's into
``gen_ai.tool.call.arguments`` / ``result`` (the ToolMessage's content), and drops
``gen_ai.prompt`` / ``gen_ai.completion`` from every LangSmith span: what the mapping reads
of them is kept as GenAI attributes, and a chain's copies of the state may hold what a
failed tool told the model. A ``ToolMessage`` of status ``error`` (LangGraph's
``ToolNode(handle_tool_errors=True)`` puts the exception's message in it) is kept as
`ERROR_RESULT`. A value that is not JSON, or not of these shapes, is dropped unread.

LangSmith records a run's error as ``Exception(run.error)``: every exception event's type
is ``Exception``, its message the error's ``repr`` then its traceback. `exception_type`
takes the class name that ``repr`` starts with (``ConnectionError('...')``:
``ConnectionError``) as the type, and nothing else of the message.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sessions_app.ingest.normalise import json_or_none
from sessions_app.otlp.strands import ERROR_RESULT

__all__ = ["KIND", "exception_type", "langsmith_attributes"]

KIND = "langsmith.span.kind"
PROMPT, COMPLETION = "gen_ai.prompt", "gen_ai.completion"
SYSTEM, INPUT, OUTPUT = (
    "gen_ai.system_instructions",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
)
ARGUMENTS, RESULT, CALL_ID = (
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.tool.call.id",
)
OPERATION = "gen_ai.operation.name"
ERROR_STATUS = 2  # OTLP's STATUS_CODE_ERROR
#: LangChain's message types (``kwargs.type``, a ``ChatMessage``'s ``role``, a message
#: tuple's first item) and class names (the serialised ``id``'s last item, without
#: ``Chunk``) by GenAI role.
ROLES = {
    "system": "system",
    "developer": "system",
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
    "SystemMessage": "system",
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "ToolMessage": "tool",
    "FunctionMessage": "tool",
}
#: The error's ``repr`` that LangSmith's exception message starts with: its class name.
_REPR_CLASS = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\(")


def exception_type(attributes: dict[str, Any], kind: str, message: str) -> str:
    """The type of a span's exception event of type `kind` and `message`: for a LangSmith
    span's ``Exception``, the class name its message's ``repr`` starts with (module
    docstring), else `kind`."""
    if kind != "Exception" or KIND not in attributes:
        return kind
    match = _REPR_CLASS.match(message)
    return match.group(1) if match else kind


def langsmith_attributes(attributes: dict[str, Any], status_code: int) -> dict[str, Any]:
    """`attributes` as the mapping reads them (module docstring); the same dict for a
    span that is not LangSmith's."""
    kind = attributes.get(KIND)
    if kind is None:
        return attributes
    kept = {k: v for k, v in attributes.items() if k not in (PROMPT, COMPLETION)}
    if kind == "llm":
        _model(kept, json_or_none(attributes.get(PROMPT)), json_or_none(attributes.get(COMPLETION)))
    elif kind == "tool":
        _tool(kept, attributes, status_code)
    elif kept.get(OPERATION) == "chat":  # a prompt run: no model call
        kept[OPERATION] = str(kind)
    return kept


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _model(kept: dict[str, Any], prompt: Any, completion: Any) -> None:
    """A model span's inputs and outputs as the GenAI message attributes, in `kept`."""
    system: list[dict[str, Any]] = []
    inputs: list[dict[str, Any]] = []
    for message in _messages(_prompt_items(prompt)):
        if message["role"] == "system":
            system += [part for part in message["parts"] if part["type"] == "text"]
        else:
            inputs.append(message)
    outputs = [m for m in _messages(_generation_items(completion)) if m["role"] == "assistant"]
    for key, value in ((SYSTEM, system), (INPUT, inputs), (OUTPUT, outputs)):
        if value and key not in kept:
            kept[key] = _json(value)


def _prompt_items(prompt: Any) -> list[Any]:
    """The messages of a model run's inputs: the first prompt of a chat model's batch
    (``{"messages": [[...]]}``; a list of messages as itself), or a completion model's
    first prompt (``{"prompts": [...]}``) as a user message."""
    if not isinstance(prompt, dict):
        return []
    messages = prompt.get("messages")
    if isinstance(messages, list) and messages:
        first = messages[0]
        return first if isinstance(first, list) else messages
    prompts = prompt.get("prompts")
    if isinstance(prompts, list) and prompts and isinstance(prompts[0], str):
        return [("user", prompts[0])]
    return []


def _generation_items(completion: Any) -> list[Any]:
    """The answers of a model run's outputs: the first prompt's generations, each its
    ``message`` (else its ``text``, an assistant message); a completion's ``choices``."""
    if not isinstance(completion, dict):
        return []
    generations = completion.get("generations")
    if isinstance(generations, list) and generations:
        first = generations[0]
        found: list[Any] = []
        for generation in first if isinstance(first, list) else generations:
            if not isinstance(generation, dict):
                continue
            if generation.get("message") is not None:
                found.append(generation["message"])
            elif isinstance(generation.get("text"), str):
                found.append(("assistant", generation["text"]))
        return found
    choices = completion.get("choices")
    if isinstance(choices, list):
        return [c["message"] for c in choices if isinstance(c, dict) and "message" in c]
    return []


def _fields(item: Any) -> tuple[str, dict[str, Any]] | None:
    """The GenAI role and the fields (``content``, ``tool_calls``, ...) of one message
    as LangChain serialises it (``dumpd``'s constructor, a message's ``model_dump``, a
    ``(role, text)`` pair, a Chat Completions message, a text); None when it is none."""
    if isinstance(item, str):
        return "user", {"content": item}
    if isinstance(item, list | tuple):
        if len(item) == 2 and isinstance(item[0], str) and (role := ROLES.get(item[0])):
            return role, {"content": item[1]}
        return None
    if not isinstance(item, dict):
        return None
    fields: Any = item
    name = ""
    if item.get("type") == "constructor" and "lc" in item:
        fields = item.get("kwargs")
        path = item.get("id")
        if isinstance(path, list) and path and isinstance(path[-1], str):
            name = path[-1].removesuffix("Chunk")
    if not isinstance(fields, dict):
        return None
    kind = fields.get("role") or fields.get("type") or name
    role = ROLES.get(kind) if isinstance(kind, str) else None
    if role is None:
        role = ROLES.get(name) if name else None
    return (role, fields) if role is not None else None


def _messages(items: list[Any]) -> list[dict[str, Any]]:
    """`items` (messages as LangChain serialises them, `_fields`) as GenAI messages; an
    item that is no message is skipped."""
    messages: list[dict[str, Any]] = []
    for item in items:
        found = _fields(item)
        if found is None:
            continue
        role, fields = found
        texts, block_calls = _content(fields.get("content"))
        if role == "tool":
            call_id = fields.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                continue
            response = _tool_response(fields, texts)
            parts: list[dict[str, Any]] = [{"type": "tool_call_response", "id": call_id,
                     "name": str(fields.get("name") or ""), "response": response}]  # fmt: skip
        else:
            parts = [{"type": "text", "content": text} for text in texts]
            if role == "assistant":
                parts += _calls(fields) or block_calls
        messages.append({"role": role, "parts": parts})
    return messages


def _content(content: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """A message's texts and the tool calls among its content blocks (``tool_use``,
    ``tool_call``): a text, or a list of texts and blocks (``{"type": "text", "text"}``);
    other blocks (images, reasoning) are not read."""
    if isinstance(content, str):
        return ([content] if content else []), []
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, str):
            texts.append(block)
        elif not isinstance(block, dict):
            continue
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") in ("tool_use", "tool_call") and block.get("id"):
            arguments = block.get("input", block.get("args"))
            calls.append(_call(block.get("id"), block.get("name"), arguments))
    return [text for text in texts if text], calls


def _call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": str(call_id), "name": str(name or ""),
            "arguments": arguments if arguments is not None else {}}  # fmt: skip


def _calls(fields: dict[str, Any]) -> list[dict[str, Any]]:
    """An AI message's tool calls: LangChain's ``tool_calls`` (``{name, args, id}``), else
    the provider's in ``additional_kwargs`` (or a Chat Completions message's own
    ``tool_calls``: ``{id, function: {name, arguments}}``)."""
    calls = fields.get("tool_calls")
    if not calls and isinstance(extra := fields.get("additional_kwargs"), dict):
        calls = extra.get("tool_calls")
    found: list[dict[str, Any]] = []
    for call in calls if isinstance(calls, list) else ():
        if not isinstance(call, dict) or not call.get("id"):
            continue
        function = call.get("function")
        if isinstance(function, dict):
            found.append(_call(call["id"], function.get("name"), function.get("arguments")))
        else:
            found.append(_call(call["id"], call.get("name"), call.get("args")))
    return found


def _tool_response(fields: dict[str, Any], texts: list[str]) -> Any:
    """What a ToolMessage (its `fields`, its content's `texts`) answered: `ERROR_RESULT`
    for one of status ``error``, else its text, else its content as sent."""
    if fields.get("status") == "error":
        return dict(ERROR_RESULT)
    content = fields.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(texts) if texts else content


def _tool(kept: dict[str, Any], attributes: dict[str, Any], status_code: int) -> None:
    """A tool span's inputs as its arguments and its output (a ToolMessage: its content)
    as its result, in `kept`; a failed tool's output is not kept (the mapping answers the
    call with the error's type)."""
    arguments = json_or_none(attributes.get(PROMPT))
    if isinstance(arguments, dict) and ARGUMENTS not in kept:
        kept[ARGUMENTS] = _json(arguments)
    outputs = json_or_none(attributes.get(COMPLETION))
    if status_code == ERROR_STATUS or not isinstance(outputs, dict) or not outputs:
        return
    output = outputs.get("output", outputs) if len(outputs) == 1 else outputs
    found = _fields(output) if isinstance(output, dict) else None
    if found is not None and found[0] == "tool":  # the ToolMessage the tool returned
        fields = found[1]
        call_id = fields.get("tool_call_id")
        if isinstance(call_id, str) and call_id:
            kept.setdefault(CALL_ID, call_id)
        output = _tool_response(fields, _content(fields.get("content"))[0])
    kept.setdefault(RESULT, output)
