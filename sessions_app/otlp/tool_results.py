"""Tool results read from two places: the ``execute_tool`` span that ran the tool and
the next model call's input, which hands the result back to the model.

- `tool_results`: after `tool_pairs.pair_tool_spans`, a tool span that carries no result
  (``gen_ai.tool.call.result`` absent: AutoGen never sets it) takes the result the
  model's input gives for the same call id, so the one stored result says what the tool
  returned instead of "not captured".
- `without_failed_results`: a tool that raised is answered, in the model input that
  follows, by whatever its framework told the model (AutoGen hands over the exception's
  message as the tool's output). Before spans are kept, such a result in a model span's
  ``gen_ai.input.messages`` is replaced by the error class its tool span names
  (``error.type``), when that tool span is kept already or arrives in the same request
  (an exporter sends a tool span before the model call that reads its result: the tool
  span ends first).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sessions_app.ingest.normalise import json_or_none
from sessions_app.otlp.tool_pairs import pair_tool_spans

if TYPE_CHECKING:
    from sessions_app.otlp.decode import SpanRecord
    from sessions_app.otlp.mapping import Draft

__all__ = ["tool_results", "without_failed_results"]

NOT_CAPTURED = {"content_captured": False}
GENAI_INPUT = "gen_ai.input.messages"
ERROR_STATUS = 2


def tool_results(drafts: list[Draft]) -> None:
    """Pair the tool spans with the model's calls (`pair_tool_spans`), then give each
    tool span's result that was not captured the model input's result for its call id,
    in place (the model input's draft is then a repeat, dropped by the turn)."""
    pair_tool_spans(drafts)
    given: dict[str, Any] = {}
    for draft in drafts:
        response = draft.tool_response
        if response is not None and not draft.key.endswith(":result") and "result" in response:
            given.setdefault(response["tool_call_id"], response["result"])
    if not given:
        return
    for draft in drafts:
        response = draft.tool_response
        if draft.key.endswith(":result") and response is not None:
            if response.get("result") == NOT_CAPTURED and response["tool_call_id"] in given:
                response["result"] = given[response["tool_call_id"]]


def _failed_calls(spans: Iterable[SpanRecord]) -> dict[str, str]:
    """Call id -> error class of the ``execute_tool`` spans among `spans` that failed."""
    failed: dict[str, str] = {}
    for span in spans:
        attrs = span.attributes
        if span.status_code == ERROR_STATUS and attrs.get("gen_ai.operation.name") == (
            "execute_tool"
        ):
            call_id = attrs.get("gen_ai.tool.call.id")
            if isinstance(call_id, str) and call_id:
                failed[call_id] = str(attrs.get("error.type") or "error")
    return failed


def _scrubbed(value: Any, failed: dict[str, str]) -> Any:
    """`value` (a GenAI messages attribute) with the results of `failed` calls replaced
    by their error; None when none is there."""
    items = json_or_none(value) if isinstance(value, str) else value
    if not isinstance(items, list):
        return None
    changed = False
    for item in items:
        for part in (item.get("parts") or ()) if isinstance(item, dict) else ():
            if (
                isinstance(part, dict)
                and part.get("type") == "tool_call_response"
                and str(part.get("id") or "") in failed
            ):
                part.pop("result", None)
                part["response"] = {"error": failed[str(part["id"])]}
                changed = True
    if not changed:
        return None
    return json.dumps(items, ensure_ascii=False) if isinstance(value, str) else items


def without_failed_results(
    fresh: Mapping[str, Mapping[str, SpanRecord]], kept: Mapping[str, Sequence[SpanRecord]]
) -> None:
    """Of each trace's `fresh` records (by trace id, then span id; their attributes
    already the kept ones), replace in place the model input's results of the tool
    calls that failed (the trace's failed ``execute_tool`` spans, `kept` or fresh) by
    their error class (the module docstring)."""
    for trace_id, new in fresh.items():
        failed = _failed_calls([*kept.get(trace_id, ()), *new.values()])
        if not failed:
            continue
        for record in new.values():
            if GENAI_INPUT in record.attributes:
                value = _scrubbed(record.attributes[GENAI_INPUT], failed)
                if value is not None:
                    record.attributes = {**record.attributes, GENAI_INPUT: value}
