"""Pairing a model's tool call with the ``execute_tool`` span that ran it, when their
ids differ (Google ADK: `pair_tool_spans`), so the call and its result are stored once."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessions_app.otlp.mapping import Draft

__all__ = ["pair_tool_spans"]


def _signature(call: dict[str, Any]) -> tuple[str, str]:
    return str(call.get("name") or ""), json.dumps(call.get("arguments") or {}, sort_keys=True)


def pair_tool_spans(drafts: list[Draft]) -> None:
    """Give a model's call and the ``execute_tool`` span that ran it one id, in place.

    Google ADK names a call in its model spans' messages by its telemetry's fallback
    (``<tool>_<part index>``: the model's call had no id yet, or none at all in its
    legacy ``llm_response``) and in its tool span by the id it gave the call
    (``adk-<uuid>``; a placeholder when the tool raised). A tool span whose id no
    message call has is paired with the first unpaired message call of the same tool and
    arguments; the pair takes the tool span's id (the model's when the tool span had
    none), and the message results answering the message's id, or answering no id for
    that tool, are renamed with it."""
    tool_ids = {c["id"] for d in drafts if d.key.endswith(":call") for c in d.tool_calls}
    message_calls = [c for d in drafts if not d.key.endswith(":call") for c in d.tool_calls]
    message_ids = {c["id"] for c in message_calls}
    # The unpaired message calls by signature, in turn order (each signature made once).
    unpaired: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for message_call in message_calls:
        if message_call["id"] not in tool_ids:
            unpaired.setdefault(_signature(message_call), []).append(message_call)
    renamed: dict[str, str] = {}  # a message id -> the pair's id (the latest pairing)
    by_name: dict[str, list[str]] = {}  # a tool -> the pairs' ids not yet answered
    span_pairs: dict[str, str] = {}  # a tool span's id -> its call's id
    for draft in drafts:
        if draft.key.endswith(":call"):
            call = draft.tool_calls[0]
            if call["id"] in message_ids:
                continue
            same = unpaired.get(_signature(call))
            if same:
                match = same.pop(0)
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
