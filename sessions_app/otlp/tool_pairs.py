"""Pairing a model's tool call with the ``execute_tool`` span that ran it, when their
ids differ (Google ADK) or the span names none (an OpenInference TOOL span of a tool
that raised): `pair_tool_spans`, so the call and its result are stored once."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessions_app.otlp.mapping import Draft

__all__ = ["pair_tool_spans"]


def _signature(call: dict[str, Any]) -> tuple[str, str]:
    return str(call.get("name") or ""), json.dumps(call.get("arguments") or {}, sort_keys=True)


def _unpaired_match(
    unpaired: dict[tuple[str, str], list[dict[str, Any]]],
    by_tool: dict[str, list[tuple[int, dict[str, Any]]]],
    call: dict[str, Any],
    index: int,
) -> dict[str, Any] | None:
    """The unpaired message call a tool span's `call` (the draft at `index`) answers,
    taken out of both indexes: the first of the same signature, else the first of the
    same tool before it (None when neither)."""
    same = unpaired.get(_signature(call))
    match = same[0] if same else None
    if match is None:
        earlier = [found for at, found in by_tool.get(call["name"], ()) if at < index]
        if not earlier:
            return None
        match = earlier[0]
    same = unpaired[_signature(match)]
    del same[next(n for n, found in enumerate(same) if found is match)]
    calls = by_tool[str(match.get("name") or "")]
    del calls[next(n for n, (_, found) in enumerate(calls) if found is match)]
    return match


def pair_tool_spans(drafts: list[Draft]) -> None:
    """Give a model's call and the ``execute_tool`` span that ran it one id, in place.

    Google ADK names a call in its model spans' messages by its telemetry's fallback
    (``<tool>_<part index>``: the model's call had no id yet, or none at all in its
    legacy ``llm_response``) and in its tool span by the id it gave the call
    (``adk-<uuid>``; a placeholder when the tool raised). A tool span whose id no
    message call has is paired with the first unpaired message call of the same tool and
    arguments; the pair takes the tool span's id (the model's when the tool span had
    none), and the message results answering the message's id, or answering no id for
    that tool, are renamed with it.

    A tool span that matches no call so is paired with the first unpaired message call
    of the same tool made before it, whatever its arguments: OpenInference's TOOL span
    has no call id when its tool raised, and its arguments are LangChain's rendering of
    the tool's input (the value alone for a tool of one argument), not the model's."""
    tool_ids = {c["id"] for d in drafts if d.key.endswith(":call") for c in d.tool_calls}
    if not tool_ids:  # no tool span: nothing to pair
        return
    message_calls = [c for d in drafts if not d.key.endswith(":call") for c in d.tool_calls]
    message_ids = {c["id"] for c in message_calls}
    # The unpaired message calls by signature, in turn order (each signature made once).
    unpaired: dict[tuple[str, str], list[dict[str, Any]]] = {}
    by_tool: dict[str, list[tuple[int, dict[str, Any]]]] = {}  # the same, by tool name
    for index, draft in enumerate(drafts):
        if draft.key.endswith(":call"):
            continue
        for message_call in draft.tool_calls:
            if message_call["id"] not in tool_ids:
                unpaired.setdefault(_signature(message_call), []).append(message_call)
                by_tool.setdefault(str(message_call.get("name") or ""), []).append(
                    (index, message_call)
                )
    renamed: dict[str, str] = {}  # a message id -> the pair's id (the latest pairing)
    by_name: dict[str, list[str]] = {}  # a tool -> the pairs' ids not yet answered
    span_pairs: dict[str, str] = {}  # a tool span's id -> its call's id
    for index, draft in enumerate(drafts):
        if draft.key.endswith(":call"):
            call = draft.tool_calls[0]
            if call["id"] in message_ids:
                continue
            match = _unpaired_match(unpaired, by_tool, call, index)
            if match is not None:
                message_id = match["id"]
                pair = message_id if call["id"].startswith("span-") else call["id"]
                renamed[message_id] = pair
                match["id"] = call["id"] = pair
            by_name.setdefault(call["name"], []).append(call["id"])
            span_pairs[draft.key.rsplit(":", 1)[0]] = call["id"]
        elif draft.key.endswith(":result") and draft.tool_response is not None:
            pair = span_pairs.get(draft.key.rsplit(":", 1)[0])
            if pair is not None:
                draft.tool_response["tool_call_id"] = pair
        elif draft.tool_response is not None:
            response = draft.tool_response
            old = response["tool_call_id"]
            if old in renamed:
                response["tool_call_id"] = renamed[old]
            elif not old and by_name.get(response.get("name") or ""):
                response["tool_call_id"] = by_name[response["name"]].pop(0)
