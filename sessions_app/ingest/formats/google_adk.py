"""Google ADK session JSON (`Session.model_dump()` and the camelCase web/API spelling).

Format notes (shared/corpus/README.md, "google-adk"): top level `id`, `app_name`,
`user_id`, `state`, `events[]`, `last_update_time` (epoch seconds); each event has `id`,
`invocation_id`, `author`, `timestamp`, `content{role, parts[]}`, `actions{state_delta}`
and optionally `long_running_tool_ids`. Every key is accepted in snake_case and camelCase.

Rules applied here:
- an event authored by "user" with text is a real prompt (starts a turn);
- `function_call` parts become tool calls of one assistant event (with any text parts);
  a call without an `id` (older ADK) gets a stable synthetic id `<event id>-call-<n>`, and a
  `function_response` without an id is paired with the first open call of the same name
  (name and order);
- `function_response` parts become role tool events, one per response, result = response;
  a later response for a call already answered (a long-running call's update, a call run
  again after a person confirmed it) updates that result instead (ADK sends the model
  only the latest response of each call, right after the call), and its state delta, if
  any, is kept as a state change where it came;
- `long_running_tool_ids` -> `pending_call_ids` of the event holding those calls;
- partial events (`partial: true`, streaming chunks) are never stored as messages: the
  chunks before a final event of the same author and invocation are dropped (the final
  event holds the whole text); chunks that no final event follows (the stream was cut)
  are merged into one event at the place of the last chunk;
- state-only events (no content, only `actions.state_delta`) are kept, because their
  state delta is a fact of the session, as events with no content and the source author:
  the dashboard shows them as state changes and the projection never sends them
  (`sessions_app.projector.is_state_only`);
- an event with `error_code` fails its turn (code made safe, stage provider, no message:
  provider text is never copied into a failure, docs/runtime.md §6); `interrupted: true` marks the
  turn interrupted/canceled.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict, deque
from datetime import datetime
from pathlib import Path
from typing import Any

from sessions_app.ingest.builder import SessionBuilder
from sessions_app.ingest.normalise import first_line, normalise_arguments, parse_iso, synthetic_time
from sessions_app.ingest.parsed import ImportProblem, ParsedEvent, ParsedSession, ParseResult
from sessions_app.ingest.registry import JsonDocumentFormat
from sessions_app.models import Session

_CAMEL_RE = re.compile(r"_([a-z])")


def _get(obj: Any, key: str, default: Any = None) -> Any:
    """obj[key] in snake_case, else in camelCase (`invocation_id` / `invocationId`)."""
    if not isinstance(obj, dict):
        return default
    if key in obj:
        return obj[key]
    return obj.get(_CAMEL_RE.sub(lambda m: m.group(1).upper(), key), default)


def looks_like_adk(data: Any) -> bool:
    """True for a dict with an `events` list and an app name in either spelling."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("events"), list)
        and _get(data, "app_name") is not None
    )


def _merged(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """Partial chunks with no final event after them, as one event (texts joined)."""
    text = "".join(
        str(_get(part, "text") or "")
        for chunk in chunks
        for part in (_get(_get(chunk, "content") or {}, "parts") or [])
        if isinstance(part, dict)
    )
    last = dict(chunks[-1])
    last.pop("partial", None)
    last["content"] = {"role": "model", "parts": [{"text": text}]}
    last["merged_partial_events"] = len(chunks)
    return last


def collapse_partials(events: list[Any]) -> list[Any]:
    """`events` without partial chunks (see the module docstring): chunks followed by a
    final event of the same author and invocation are dropped, the rest merged."""
    out: list[Any] = []
    open_chunks: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for raw_event in events:
        if not isinstance(raw_event, dict):
            out.append(raw_event)
            continue
        key = (str(_get(raw_event, "author") or ""), str(_get(raw_event, "invocation_id") or ""))
        if _get(raw_event, "partial") is True:
            open_chunks.setdefault(key, []).append(raw_event)
            continue
        if key in open_chunks and _get(raw_event, "content"):
            del open_chunks[key]
        out.append(raw_event)
    if not open_chunks:
        return out
    # Each merged event goes where its last chunk was: after the kept events before it.
    position = {id(e): i for i, e in enumerate(events)}
    for chunks in open_chunks.values():
        last = position[id(chunks[-1])]
        before = sum(1 for e in out if position.get(id(e), -1) < last)
        out.insert(before, _merged(chunks))
    return out


def _update_response(
    event: ParsedEvent, response: dict[str, Any], at: datetime, raw_event: dict[str, Any]
) -> None:
    """A later `function_response` for a call already answered (a long-running call's
    update, a call run again once a person confirmed it) becomes that call's result: ADK
    sends the model only the latest response of each call, right after the call
    (`contents._rearrange_events_for_async_function_responses_in_history`), so it is
    neither a second result nor an orphan. `raw` keeps every record, `updated_at` the
    update's time."""
    event.tool_response = {**(event.tool_response or {}), "result": response.get("response")}
    records = event.raw if isinstance(event.raw, list) else [event.raw]
    event.raw = [*records, raw_event]
    event.updated_at = max(at, event.updated_at or event.created_at)


def _state_change(
    author: str, event_id: str, at: datetime, delta: dict[str, Any], raw_event: dict[str, Any]
) -> ParsedEvent:
    """A state-only event: shown as a state change, never sent as a message."""
    return ParsedEvent(
        role="assistant" if author != "user" else "user",
        created_at=at,
        author=author,
        source_id=event_id,
        state_delta=delta,
        raw=raw_event,
    )


def parse_google_adk(path: Path, data: Any) -> ParseResult:
    """Parse one decoded ADK session document (see the module docstring for the rules)."""
    problems: list[ImportProblem] = []
    parsed = adk_session(str(path), data, problems, Session.SourceFormat.GOOGLE_ADK, path.stem)
    return ParseResult(sessions=[parsed] if parsed else [], problems=problems)


def adk_session(
    name: str,
    data: dict[str, Any],
    problems: list[ImportProblem],
    source_format: Session.SourceFormat,
    default_id: str,
) -> ParsedSession | None:
    """One ADK session (`Session.model_dump()` shape, either spelling) as a
    `ParsedSession`, or None when it holds no event; problems go to `problems` (`name`
    is the file or database named in them)."""
    session_id = str(data.get("id") or default_id)
    builder = SessionBuilder(session_id)
    open_calls: dict[str, deque[str]] = defaultdict(deque)
    called: set[str] = set()  # ids of the calls seen so far
    answered: dict[str, ParsedEvent] = {}  # call id -> the tool event answering it
    first_prompt = ""

    for index, raw_event in enumerate(collapse_partials(list(data["events"]))):
        if not isinstance(raw_event, dict):
            problems.append(ImportProblem(name, 0, f"events[{index}] is not an object"))
            continue
        at = parse_iso(_get(raw_event, "timestamp")) or synthetic_time(index)
        author = str(_get(raw_event, "author") or "")
        event_id = str(_get(raw_event, "id") or f"event-{index}")
        content = _get(raw_event, "content") or {}
        parts = _get(content, "parts") or []
        actions = _get(raw_event, "actions") or {}
        state_delta = _get(actions, "state_delta") or {}
        long_ids = _get(raw_event, "long_running_tool_ids") or []
        long_running = [str(x) for x in long_ids] if isinstance(long_ids, list) else []

        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[dict[str, Any]] = []
        responses: list[dict[str, Any]] = []
        for part in parts if isinstance(parts, list) else []:
            call = _get(part, "function_call")
            response = _get(part, "function_response")
            if isinstance(call, dict):
                call_name = str(call.get("name") or "")
                call_id = str(call.get("id") or f"{event_id}-call-{len(calls)}")
                if not call.get("id"):
                    open_calls[call_name].append(call_id)
                calls.append(
                    {
                        "id": call_id,
                        "name": call_name,
                        "arguments": normalise_arguments(call.get("args")),
                    }
                )
            elif isinstance(response, dict):
                responses.append(response)
            elif isinstance(_get(part, "text"), str):
                (thoughts if _get(part, "thought") else texts).append(part["text"])

        called.update(call["id"] for call in calls)
        updates = 0
        for response in responses:
            call_name = str(response.get("name") or "")
            call_id = str(response.get("id") or "")
            if not call_id and open_calls[call_name]:
                call_id = open_calls[call_name].popleft()
            earlier = answered.get(call_id)
            if earlier is not None:
                _update_response(earlier, response, at, raw_event)
                updates += 1
                continue
            answered_by = ParsedEvent(
                role="tool",
                created_at=at,
                author=author,
                source_id=event_id,
                tool_call_id=call_id,
                tool_response={
                    "tool_call_id": call_id,
                    "name": call_name,
                    "result": response.get("response"),
                },
                state_delta=state_delta if isinstance(state_delta, dict) else {},
                raw=raw_event,
            )
            if call_id in called:
                answered[call_id] = answered_by
            builder.add(answered_by)
        text = "\n\n".join(texts)
        if responses and not (texts or calls):
            if updates == len(responses) and state_delta and isinstance(state_delta, dict):
                # Only updates: the state delta stays where it came, as a state change.
                builder.add(_state_change(author, event_id, at, state_delta, raw_event))
        elif not (texts or thoughts or calls):
            # A state-only event (or one with nothing readable): kept, never sent.
            delta = state_delta if isinstance(state_delta, dict) else {}
            builder.add(_state_change(author, event_id, at, delta, raw_event))
        elif author == "user" and not calls:
            builder.add(
                ParsedEvent(
                    role="user",
                    created_at=at,
                    author=author,
                    source_id=event_id,
                    text=text,
                    state_delta=state_delta if isinstance(state_delta, dict) else {},
                    raw=raw_event,
                ),
                prompt=bool(text.strip()),
            )
            first_prompt = first_prompt or text
        else:
            builder.add(
                ParsedEvent(
                    role="assistant",
                    created_at=at,
                    author=author,
                    source_id=event_id,
                    text=text,
                    reasoning="\n\n".join(thoughts),
                    tool_calls=calls,
                    pending_call_ids=[c["id"] for c in calls if c["id"] in long_running],
                    finish_reason="tool_calls" if calls else ("stop" if text else ""),
                    state_delta=state_delta if isinstance(state_delta, dict) else {},
                    raw=raw_event,
                )
            )
        error_code = _get(raw_event, "error_code")
        if error_code:
            builder.fail(str(error_code), "provider", f"event {event_id} has error_code")
        if _get(raw_event, "interrupted"):
            builder.interrupt(f"event {event_id} is marked interrupted")

    if not builder.events:
        return None
    state = data.get("state") if isinstance(data.get("state"), dict) else {}
    return builder.build(
        app_name=str(_get(data, "app_name") or "google-adk"),
        user_id=str(_get(data, "user_id") or ""),
        title=first_line(first_prompt) or session_id,
        state=json.loads(json.dumps(state)),
        source_format=source_format,
        updated_at=parse_iso(_get(data, "last_update_time")),
    )


FORMAT = JsonDocumentFormat(
    name=Session.SourceFormat.GOOGLE_ADK,
    looks_like=looks_like_adk,
    parse_document=parse_google_adk,
)
