"""OpenLLMetry's (Traceloop's) LangChain / LangGraph spans made plain before they are kept.

``opentelemetry-instrumentation-langchain`` (alone, or through ``traceloop-sdk``'s
``Traceloop.init``; tested: 0.62.4) sends, per LangGraph run, an ``invoke_agent <graph>``
root (``gen_ai.conversation.id``: the run's ``thread_id``), a ``<name>.workflow`` span,
an ``execute_task <node>`` span per graph node and runnable, a ``<Model>.chat`` span per
model call (``gen_ai.input.messages`` / ``output.messages`` / ``system_instructions``,
``gen_ai.usage.*``) and an ``execute_tool <tool>`` span per tool run. Every span carries
``traceloop.*`` attributes; ``Traceloop.set_association_properties({...})`` and the
run's LangChain metadata come as ``traceloop.association.properties.<key>``
(`SESSION_KEYS`, `USER_KEYS`). What `openllmetry_attributes` changes:

- a tool span's ``gen_ai.tool.call.arguments`` is the JSON of the callback's
  ``{"input_str", "tags", "metadata", "inputs", "kwargs"}``: the arguments are its
  ``inputs`` (else ``input_str``), the call id its ``kwargs.tool_call_id`` (the span
  names none); its ``gen_ai.tool.call.result`` is ``{"output", "kwargs"}``, ``output``
  the tool's ``ToolMessage`` as LangChain serialises it: the result is its ``content``;
- ``traceloop.entity.input`` / ``output`` and ``gen_ai.task.input`` / ``output`` (on
  workflow and task spans the graph state, every message so far; on tool spans the
  callback's wrappers above) are dropped: the mapping reads the model and tool spans,
  and a node's output may hold what a failed tool told the model (LangGraph's
  ``ToolNode(handle_tool_errors=True)`` gives it the exception's message);
- ``gen_ai.request.model`` / ``response.model`` of ``unknown`` (OpenLLMetry's name for
  a model it did not find) become LangChain's ``ls_model_name``, else are dropped.

Its earlier releases (tested: 0.47.5) send a model span's messages flattened,
``gen_ai.prompt.N.role|content|tool_call_id|tool_calls.M.*`` and
``gen_ai.completion.N.*`` (a completion that only called tools as role ``unknown``,
content ``""``: JSON of the empty text), ``llm.request.type`` for the operation, and
name a tool span ``<tool>.tool`` (``traceloop.span.kind`` ``tool``, no GenAI name) with
the callback's wrappers in ``traceloop.entity.input`` / ``output`` only. Those become the
GenAI attributes (``gen_ai.system_instructions``, ``gen_ai.input.messages``,
``gen_ai.output.messages``, ``gen_ai.operation.name`` ``chat`` / ``execute_tool``,
``gen_ai.tool.*``), so a failed tool's result in the next model input is replaced by its
error like any other (`tool_results.without_failed_results`).
"""

from __future__ import annotations

import json
from typing import Any

from sessions_app.ingest.normalise import json_or_none
from sessions_app.otlp.messages import (
    Message,
    has_key_prefix,
    input_messages,
    output_messages,
    system_text,
)

__all__ = ["SESSION_KEYS", "USER_KEYS", "is_openllmetry", "openllmetry_attributes"]

ASSOCIATION = "traceloop.association.properties."
#: Association properties naming a trace's session (OpenLLMetry's documented
#: ``session_id``; LangChain's ``thread_id`` metadata), first match wins.
SESSION_KEYS = (f"{ASSOCIATION}session_id", f"{ASSOCIATION}thread_id")
USER_KEYS = (f"{ASSOCIATION}user_id",)
#: Copies of a chain's, node's or tool's inputs and outputs, never read.
ENTITY_KEYS = frozenset({
    "traceloop.entity.input",
    "traceloop.entity.output",
    "gen_ai.task.input",
    "gen_ai.task.output",
})  # fmt: skip
MODEL_KEYS = ("gen_ai.request.model", "gen_ai.response.model")
UNKNOWN_MODEL = "unknown"
ARGUMENTS, RESULT, CALL_ID = (
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.tool.call.id",
)


def is_openllmetry(attributes: dict[str, Any]) -> bool:
    """True for a span of OpenLLMetry's instrumentations (it names ``traceloop.*``)."""
    return has_key_prefix(attributes, "traceloop.") and any(
        key.startswith("traceloop.") for key in attributes
    )


def openllmetry_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """`attributes` as the mapping reads them (the module docstring); the same dict for
    a span that is not OpenLLMetry's."""
    if not is_openllmetry(attributes):
        return attributes
    plain = {k: v for k, v in attributes.items() if k not in ENTITY_KEYS}
    if attributes.get("traceloop.span.kind") == "tool" or (
        attributes.get("gen_ai.operation.name") == "execute_tool"
    ):
        plain.setdefault("gen_ai.operation.name", "execute_tool")
        name = attributes.get("traceloop.entity.name")
        if isinstance(name, str) and name:
            plain.setdefault("gen_ai.tool.name", name)
        for key, entity in ((ARGUMENTS, "input"), (RESULT, "output")):  # 0.47's
            if key not in plain and f"traceloop.entity.{entity}" in attributes:
                plain[key] = attributes[f"traceloop.entity.{entity}"]
        _tool(plain)
    elif has_key_prefix(plain, *LEGACY):
        _legacy_model(plain)
    if (kind := attributes.get("llm.request.type")) is not None:  # 0.47's model spans
        plain.setdefault("gen_ai.operation.name", OPERATIONS.get(str(kind), "chat"))
    if any(plain.get(key) == UNKNOWN_MODEL for key in MODEL_KEYS):
        named = plain.get(f"{ASSOCIATION}ls_model_name")
        for key in MODEL_KEYS:
            if plain.get(key) == UNKNOWN_MODEL:
                if isinstance(named, str) and named:
                    plain[key] = named
                else:
                    del plain[key]
    return plain


def _tool(attributes: dict[str, Any]) -> None:
    """A tool span's callback wrappers as the GenAI arguments, call id and result."""
    wrapper = json_or_none(attributes.get(ARGUMENTS))
    if isinstance(wrapper, dict) and ("input_str" in wrapper or "inputs" in wrapper):
        inputs = wrapper.get("inputs")
        arguments = inputs if isinstance(inputs, dict) else wrapper.get("input_str")
        attributes[ARGUMENTS] = _json(arguments)
        call_id = (wrapper.get("kwargs") or {}).get("tool_call_id")
        if isinstance(call_id, str) and call_id and not attributes.get(CALL_ID):
            attributes[CALL_ID] = call_id
    wrapper = json_or_none(attributes.get(RESULT))
    if isinstance(wrapper, dict) and "output" in wrapper:
        output = wrapper["output"]
        message = output.get("kwargs") if _serialised(output) else None
        if isinstance(message, dict):  # a ToolMessage (LangChain's dumpd)
            call_id = message.get("tool_call_id")
            if isinstance(call_id, str) and call_id and not attributes.get(CALL_ID):
                attributes[CALL_ID] = call_id
            output = message.get("content")
        attributes[RESULT] = output if isinstance(output, str) else _json(output)


LEGACY = ("gen_ai.prompt.", "gen_ai.completion.")
OPERATIONS = {"chat": "chat", "completion": "text_completion"}


def _legacy_model(attributes: dict[str, Any]) -> None:
    """The flattened prompts and completions of OpenLLMetry's earlier releases as the
    GenAI message attributes, in place (the module docstring)."""
    for key in [k for k in attributes if k.startswith("gen_ai.completion.")]:
        if key.endswith(".role") and attributes[key] == UNKNOWN_MODEL:
            attributes[key] = "assistant"
        elif key.endswith(".content") and attributes[key] == '""':
            attributes[key] = ""
    system = system_text(attributes)
    inputs = [m for m in input_messages(attributes) if m.role != "system"]
    outputs = output_messages(attributes)
    for key in [k for k in attributes if k.startswith(LEGACY)]:
        del attributes[key]
    if system:
        attributes["gen_ai.system_instructions"] = _json([{"type": "text", "content": system}])
    attributes["gen_ai.input.messages"] = _json([_genai(m) for m in inputs])
    attributes["gen_ai.output.messages"] = _json([_genai(m) for m in outputs])


def _genai(message: Message) -> dict[str, Any]:
    """`message` as a GenAI message (``role``, ``parts``)."""
    parts: list[dict[str, Any]] = (
        [{"type": "text", "content": message.text}] if message.text else []
    )
    parts += [
        {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
        for c in message.calls
    ]
    parts += [
        {"type": "tool_call_response", "id": r.call_id, "name": r.name, "response": r.result}
        for r in message.results
    ]
    return {"role": message.role, "parts": parts}


def _serialised(value: Any) -> bool:
    """True for a LangChain object as ``dumpd`` gives it (``{"lc", "type", "id",
    "kwargs"}``)."""
    return isinstance(value, dict) and value.get("type") == "constructor" and "lc" in value


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
