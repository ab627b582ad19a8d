"""What is kept of a model span's input messages: the part the mapping reads.

A GenAI model span's input (``gen_ai.input.messages``; Google ADK's
``gcp.vertex.agent.llm_request`` ``contents``; an OpenInference LLM span's
``llm.input_messages.N.message.*``, and ``input.value`` the same messages as its
framework serialised them) holds the whole conversation so far, so a
turn of n model calls would keep O(n²) messages, and every later batch of its trace would
read and map them all again. The mapping reads only two things of a span's input
(`mapping.span_drafts`): the messages after its last assistant message (what was new to
the model) and its system messages (the first model span's system prompt when no system
instructions are given). `kept_inputs` drops the rest before the span is stored, so the
turn planned from kept spans is the one planned from the spans as received (tests/otlp:
`test_history` plans both for every producer shape). The draft keys count messages from
the last assistant one, so they do not change either.

Values that are not a list of messages are kept as received. Of an OpenInference LLM
span, the flattened messages the mapping does not read are left out, and its
``input.value`` when some of its messages are kept (the mapping never reads it: the
messages say the span carried content).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sessions_app.ingest.normalise import json_or_none
from sessions_app.otlp.messages import adk_content, genai_role
from sessions_app.otlp.openinference import INPUT, KIND_KEY

__all__ = ["kept_inputs"]

GENAI_INPUT = "gen_ai.input.messages"
ADK_REQUEST = "gcp.vertex.agent.llm_request"
OI_INPUTS = "llm.input_messages."


def _adk_role(content: Any) -> str | None:
    message = adk_content(content)  # its parts decide: a function response is "tool"
    return message.role if message is not None else None


def _read_part(items: list[Any], role_of_item: Callable[[Any], str | None]) -> list[Any] | None:
    """Of `items` (a span's input messages as sent), those the mapping reads: every
    system message, and every item after the last assistant message; None when that
    is all of them."""
    roles = [role_of_item(item) for item in items]
    last = max((i for i, role in enumerate(roles) if role == "assistant"), default=-1)
    if last < 0:
        return None
    return [item for i, item in enumerate(items) if i > last or roles[i] == "system"]


#: The standard library's encoder: it writes back whatever `json_or_none` read
#: (non-finite numbers, integers of any size) as it was. Made once: `json.dumps` with
#: these options makes this same encoder anew for every call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_text = _ENCODER.encode


def kept_inputs(attributes: dict[str, Any]) -> dict[str, Any]:
    """`attributes` with the model input's earlier history left out (module docstring);
    the same dict when there is nothing to leave out."""
    changed: dict[str, Any] = {}
    if GENAI_INPUT in attributes:
        value = attributes[GENAI_INPUT]
        items = json_or_none(value)
        if isinstance(items, list) and (kept := _read_part(items, genai_role)) is not None:
            changed[GENAI_INPUT] = _text(kept) if isinstance(value, str) else kept
    elif ADK_REQUEST in attributes:  # read only when the GenAI attribute is absent
        value = attributes[ADK_REQUEST]
        request = json_or_none(value)
        contents = request.get("contents") if isinstance(request, dict) else None
        if isinstance(contents, list) and (kept := _read_part(contents, _adk_role)) is not None:
            request = {**request, "contents": kept}
            changed[ADK_REQUEST] = _text(request) if isinstance(value, str) else request
    elif attributes.get(KIND_KEY) == "LLM":
        return _kept_openinference(attributes)
    return {**attributes, **changed} if changed else attributes


def _kept_openinference(attributes: dict[str, Any]) -> dict[str, Any]:
    """An OpenInference LLM span's `attributes` without the input messages the mapping
    does not read, nor its ``input.value`` when some are kept (the module docstring);
    the same dict when there is nothing to leave out."""
    roles: dict[int, str | None] = {}
    for key, value in attributes.items():
        if key.startswith(OI_INPUTS) and key.endswith(".message.role"):
            index = key[len(OI_INPUTS) : -len(".message.role")]
            if index.isdigit():
                roles[int(index)] = genai_role({"role": value})
    last = max((i for i, role in roles.items() if role == "assistant"), default=-1)
    kept: dict[str, Any] = {}
    for key, value in attributes.items():
        if last >= 0 and key.startswith(OI_INPUTS):
            index = key[len(OI_INPUTS) :].split(".", 1)[0]
            if index.isdigit() and int(index) <= last and roles.get(int(index)) != "system":
                continue
        kept[key] = value
    if INPUT in kept and any(key.startswith(OI_INPUTS) for key in kept):
        del kept[INPUT]
    return kept if len(kept) != len(attributes) else attributes
