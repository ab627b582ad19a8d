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
- `long_running_tool_ids` -> `pending_call_ids` of the event holding those calls;
- state-only events (no content, only `actions.state_delta`) are kept, because their
  state delta is a fact of the session, as role assistant events with no text and the
  source author: the dashboard shows them as state changes, never as empty messages, and
  they carry nothing a model would read;
- an event with `error_code` fails its turn (code made safe, stage provider, no message:
  provider text is never copied into a failure, docs/runtime.md §6); `interrupted: true` marks the
  turn interrupted/canceled.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

from sessions_app.ingest.builder import SessionBuilder
from sessions_app.ingest.normalise import first_line, normalise_arguments, parse_iso, synthetic_time
from sessions_app.ingest.parsed import ImportProblem, ParsedEvent, ParseResult
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


def parse_google_adk(path: Path, data: Any) -> ParseResult:
    """Parse one decoded ADK session document (see the module docstring for the rules)."""
    name = str(path)
    problems: list[ImportProblem] = []
    session_id = str(data.get("id") or path.stem)
    builder = SessionBuilder(session_id)
    open_calls: dict[str, deque[str]] = defaultdict(deque)
    first_prompt = ""

    for index, raw_event in enumerate(data["events"]):
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
        long_running = [str(x) for x in (_get(raw_event, "long_running_tool_ids") or [])]

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

        for response in responses:
            call_name = str(response.get("name") or "")
            call_id = str(response.get("id") or "")
            if not call_id and open_calls[call_name]:
                call_id = open_calls[call_name].popleft()
            builder.add(
                ParsedEvent(
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
            )
        text = "\n\n".join(texts)
        if responses and not (texts or calls):
            pass
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

    state = data.get("state") if isinstance(data.get("state"), dict) else {}
    return ParseResult(
        sessions=[
            builder.build(
                app_name=str(_get(data, "app_name") or "google-adk"),
                user_id=str(_get(data, "user_id") or ""),
                title=first_line(first_prompt) or session_id,
                state=json.loads(json.dumps(state)),
                source_format=Session.SourceFormat.GOOGLE_ADK,
                updated_at=parse_iso(_get(data, "last_update_time")),
            )
        ],
        problems=problems,
    )


FORMAT = JsonDocumentFormat(
    name=Session.SourceFormat.GOOGLE_ADK,
    looks_like=looks_like_adk,
    parse_document=parse_google_adk,
)
