"""Tool results read from two places: the ``execute_tool`` span that ran the tool and
the next model call's input, which hands the result back to the model.

- `tool_results`: after `tool_pairs.pair_tool_spans`, a tool span that carries no result
  (``gen_ai.tool.call.result`` absent: AutoGen never sets it) takes the result the
  model's input gives for the same call id, so the one stored result says what the tool
  returned instead of "not captured".
- `without_failed_results`: a tool that raised is answered, in the model input that
  follows, by whatever its framework told the model (AutoGen hands over the exception's
  message as the tool's output). Such a result in ``gen_ai.input.messages`` (a model
  span's, or its GenAI events': span events, or log records such as
  ``gen_ai.client.inference.operation.details``) is replaced by the error class its tool
  span names (``error.type``) before the record is kept, when that tool span is kept
  already or comes in the same request; when the tool span comes later, the records
  kept before it are rewritten then.
- `failed_tool_kept`: a tool span that failed (status ERROR) keeps no
  ``gen_ai.tool.call.result``: what a tool that raised "returned" is where its error's
  text ends up, and the call is answered by the span's error class alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sessions_app.ingest.normalise import json_or_none
from sessions_app.otlp.messages import EVENTS_KEY
from sessions_app.otlp.tool_pairs import pair_tool_spans

if TYPE_CHECKING:
    from sessions_app.otlp.decode import SpanRecord
    from sessions_app.otlp.mapping import Draft

__all__ = ["failed_tool_kept", "tool_results", "without_failed_results"]

NOT_CAPTURED = {"content_captured": False}
GENAI_INPUT = "gen_ai.input.messages"
TOOL_RESULT = "gen_ai.tool.call.result"
ERROR_STATUS = 2


def failed_tool_kept(attributes: dict[str, Any], status_code: int) -> dict[str, Any]:
    """`attributes` of a span without the result of a tool that failed (module); the same
    dict for any other span."""
    if status_code != ERROR_STATUS or TOOL_RESULT not in attributes:
        return attributes
    return {k: v for k, v in attributes.items() if k != TOOL_RESULT}


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


def _without_failed(record: SpanRecord, failed: dict[str, str]) -> bool:
    """Replace in `record`'s input messages (its own, and its GenAI events': a model
    span's, or a log record's) the results of the `failed` calls; whether any was."""
    attrs, changed = record.attributes, {}
    if GENAI_INPUT in attrs and (value := _scrubbed(attrs[GENAI_INPUT], failed)) is not None:
        changed[GENAI_INPUT] = value
    events = attrs.get(EVENTS_KEY)
    if isinstance(events, list):
        kept_events, scrubbed = [], False
        for event in events:
            fields = event.get("attributes") if isinstance(event, dict) else None
            if isinstance(fields, dict):
                if (value := _scrubbed(fields.get(GENAI_INPUT), failed)) is not None:
                    event = {**event, "attributes": {**fields, GENAI_INPUT: value}}
                    scrubbed = True
            kept_events.append(event)
        if scrubbed:
            changed[EVENTS_KEY] = kept_events
    if changed:
        record.attributes = {**attrs, **changed}
    return bool(changed)


def without_failed_results(
    fresh: Mapping[str, Mapping[str, SpanRecord]], kept: Mapping[str, Sequence[SpanRecord]]
) -> list[SpanRecord]:
    """Of each trace's `fresh` records (by trace id, then span id; their attributes
    already the kept ones), replace in place the model input's results of the tool
    calls that failed (the trace's failed ``execute_tool`` spans, `kept` or fresh) by
    their error class (the module docstring); and so in the trace's `kept` records when
    a fresh tool span failed (a log record of the model call may come before the tool
    span: the exporters of logs and of spans send apart): those are returned, for their
    rows to be rewritten."""
    rewritten: list[SpanRecord] = []
    for trace_id, new in fresh.items():
        failed = _failed_calls([*kept.get(trace_id, ()), *new.values()])
        if not failed:
            continue
        for record in new.values():
            _without_failed(record, failed)
        if not (newly := _failed_calls(new.values())):
            continue
        rewritten += [r for r in kept.get(trace_id, ()) if _without_failed(r, newly)]
    return rewritten
