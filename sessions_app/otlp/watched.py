"""What the watchers of a request's sessions are sent, made from what `landing` wrote.

`landing.land` knows every event of each turn it wrote (the rows it read and rewrote, the
ones it appended), so the ``live.event`` payloads of the new events (their `pair` with
the call they answer included) are made here from those values without reading them back:
equal to what a watcher resuming from the database reads
(`live.payloads.event_payloads_after`). The turns' payloads are made from the rows it
wrote and their active events too (`turn_payloads_written`; only their token totals and
their sessions' turn counts, token totals and model, which SQL computed, are read: one
query), equal to the
stored turns' (`live.payloads.turn_payload`), and everything goes to the sessions'
outboxes in order (`messages`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sessions_app import models
from sessions_app.live.payloads import (
    EVENT,
    EVENT_FIELDS,
    TURN,
    TurnCalls,
    turn_facts,
    turn_payload_from,
)

__all__ = ["event_payloads", "messages", "new_values", "stored_values", "turn_payloads_written"]


#: The last (datetime, ISO text) converted: most calls convert a batch's one write time.
#: One tuple, replaced whole, so threads never see a pair that does not match.
_last_iso: tuple[datetime | None, str] = (None, "")


def _iso(value: datetime) -> str:
    global _last_iso
    last = _last_iso
    if value is last[0]:
        return last[1]
    text = value.isoformat()
    _last_iso = (value, text)
    return text


def new_values(
    session_id: str, turn_id: str, columns: dict[str, Any], now: datetime
) -> dict[str, Any]:
    """The `EVENT_FIELDS` values of an event about to be inserted with `columns` (its id
    None until known), as the database will hold them (the other fields' defaults)."""
    return {
        "id": None,
        "session_id": session_id,
        "turn_id": turn_id,
        "author": columns["author"],
        "role": columns["role"],
        "text": columns["text"],
        "parts": [],
        "reasoning": "",
        "tool_calls": columns["tool_calls"],
        "tool_response": columns["tool_response"],
        "tool_call_id": columns["tool_call_id"],
        "pending_call_ids": [],
        "finish_reason": columns["finish_reason"],
        "usage": columns["usage"],
        "state_delta": {},
        "created_at": _iso(columns["created_at"]),
        "updated_at": _iso(now),
    }


def stored_values(
    row: dict[str, Any], columns: dict[str, Any] | None, now: datetime
) -> dict[str, Any]:
    """The `EVENT_FIELDS` values of a stored `row` (read with them), once rewritten with
    `columns` at `now` (None: left as it was)."""
    values = {name: row[name] for name in EVENT_FIELDS}
    if columns is not None:
        values.update((name, columns[name]) for name in EVENT_FIELDS if name in columns)
        values["updated_at"] = now
    return {
        **values,
        "created_at": _iso(values["created_at"]),
        "updated_at": _iso(values["updated_at"]),
    }


def event_payloads(
    timelines: Iterable[list[dict[str, Any]]], new: set[int]
) -> list[dict[str, Any]]:
    """EventPayloads of the events whose ids are in `new`, in id order. `timelines`: each
    turn's active events (`new_values` / `stored_values`, ids set) in id order, so a
    tool result's `pair` is the call it answers, wherever that was stored."""
    payloads = []
    for timeline in timelines:
        calls = TurnCalls()
        for values in timeline:
            pair = calls.add(values)
            if values["id"] in new:
                payloads.append({**values, "pair": pair, "event_count": None})
    payloads.sort(key=lambda payload: int(payload["id"]))
    return payloads


def turn_payloads_written(
    turn_ids: Iterable[str],
    rows: Mapping[str, models.Turn],
    written: Mapping[str, tuple[str, Sequence[Any]]],
) -> dict[str, dict[str, Any]]:
    """TurnPayloads of `turn_ids`, by id, made from `rows` (the turn rows as written) and
    `written` ({turn id: (session id, its active events)}), with the turns' token totals and
    their sessions' turn counts, token totals and model read in one query (after the
    write: SQL summed the tokens, `live.payloads.turn_facts`)."""
    wanted = list(dict.fromkeys(turn_ids))
    if not wanted:
        return {}
    facts = turn_facts(wanted)
    payloads = {}
    for turn_id in wanted:
        turn_count, values = facts[turn_id]
        timeline = written[turn_id][1]
        payloads[turn_id] = turn_payload_from(rows[turn_id], len(timeline), turn_count, values)
    return payloads


def messages(
    created: list[str],
    changed: list[str],
    events: list[dict[str, Any]],
    turns: dict[str, dict[str, Any]],
) -> list[tuple[str, dict[str, Any]]]:
    """(session id, message) in the order watchers get them: the `created` turns (a new
    turn reaches them before its events), the new `events`, then the other `changed`
    turns (their status and event count). `turns`: TurnPayloads by turn id
    (`turn_payloads_written`)."""
    fresh = set(created)
    found = [
        (turns[i]["session_id"], {"type": TURN, "turn": turns[i]}) for i in created if i in turns
    ]
    found += [(event["session_id"], {"type": EVENT, "event": event}) for event in events]
    found += [
        (turns[i]["session_id"], {"type": TURN, "turn": turns[i]})
        for i in changed
        if i in turns and i not in fresh
    ]
    return found
