"""An agent for any OpenAI-compatible chat-completions endpoint, streamed, with todo tools.

Configuration (environment, read when the factory runs):

- ``AGENTOPS_OPENAI_BASE_URL``: e.g. ``https://api.openai.com/v1`` or a local server's
  ``http://127.0.0.1:8080/v1`` (``/chat/completions`` is appended).
- ``AGENTOPS_OPENAI_MODEL``: the model name sent as ``model``.
- ``AGENTOPS_OPENAI_API_KEY``: sent as ``Authorization: Bearer <key>`` (optional for
  local servers).

One turn (docs/runtime.md §3): the context (projected history + the user event) becomes chat
messages; the request is streamed (``stream: true``, server-sent events); each content
delta is yielded as a partial event; at the end of the stream the assistant message is
yielded complete (text, tool calls, finish reason, usage). If it called tools, each call
is executed against the todo tools (docs/runtime.md §7) and its result yielded as a tool event, and
the model is asked again, at most `max_rounds` times.

Errors are safe to store (docs/runtime.md §6): `ProviderError` carries a failure with a code such as
``provider_http_429`` or ``provider_unreachable`` at stage provider and a message naming only
the HTTP status or the kind of error, never response text.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from httpx_sse import SSEError, aconnect_sse

from agentops.agents.tools import ToolRunner, session_id_of
from agentops.runtime.model import Content, Event, FinishReason, Role, ToolCall, Usage
from agentops.runtime.session import TurnFailure
from agentops.runtime.todos import TodoStore

__all__ = ["OpenAICompatAgent", "ProviderError", "event_to_messages", "make_agent"]

AUTHOR = "openai-compat"
_FINISH = {reason.value for reason in FinishReason}


class ProviderError(RuntimeError):
    """The endpoint failed: HTTP error, unreachable, or a malformed stream.

    `code` is a valid failure code (docs/runtime.md §2); `safe_message` names the status or the
    kind of error only.
    """

    def __init__(self, code: str, safe_message: str) -> None:
        self.code = code
        self.safe_message = safe_message
        super().__init__(f"{code}: {safe_message}")

    def turn_failure(self) -> TurnFailure:
        """The failure to record: `code`, `safe_message`, stage provider."""
        return TurnFailure(code=self.code, message=self.safe_message, stage="provider")


def event_to_messages(event: Event) -> list[dict[str, Any]]:
    """Chat-completions messages for one context event (usually one, none when empty).

    Text parts are joined (images are sent as image_url parts); assistant tool calls and
    tool results keep their call ids; reasoning and `author` are never sent.
    """
    content = event.content
    if content.role is Role.TOOL:
        response = content.tool_response
        if response is None:
            value: Any = content.text
        else:
            value = {"error": response.error} if response.is_error else response.result
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return [{"role": "tool", "tool_call_id": content.answered_call_id, "content": text}]
    body: Any = content.text
    if content.parts:
        parts: list[dict[str, Any]] = []
        for part in content.parts:
            if part.type == "text":
                parts.append({"type": "text", "text": part.text})
            elif part.type == "image_url":
                parts.append({"type": "image_url", "image_url": {"url": part.image_url}})
            else:
                url = f"data:{part.mime_type or 'image/png'};base64,{part.image_base64}"
                parts.append({"type": "image_url", "image_url": {"url": url}})
        body = parts
    message: dict[str, Any] = {"role": content.role.value, "content": body}
    if content.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in content.tool_calls
        ]
    elif not body:
        return []
    return [message]


@dataclass
class _Accumulated:
    text: str = ""
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    finish: str = ""
    usage: Usage | None = None

    def add(self, chunk: dict[str, Any]) -> str:
        """Fold one stream chunk in; return its text delta."""
        if isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"]
            self.usage = Usage(
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                total_tokens=int(usage.get("total_tokens") or 0),
            )
        delta_text = ""
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            piece = delta.get("content")
            if isinstance(piece, str):
                delta_text += piece
            for call in delta.get("tool_calls") or []:
                slot = self.calls.setdefault(
                    int(call.get("index", 0)), {"id": "", "name": "", "arguments": ""}
                )
                slot["id"] = call.get("id") or slot["id"]
                function = call.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                self.finish = str(choice["finish_reason"])
        self.text += delta_text
        return delta_text

    def tool_calls(self) -> tuple[ToolCall, ...]:
        calls = []
        for index in sorted(self.calls):
            slot = self.calls[index]
            try:
                call = ToolCall.model_validate(
                    {"id": slot["id"], "name": slot["name"], "arguments": slot["arguments"]}
                )
            except ValueError:
                raise ProviderError(
                    "provider_bad_tool_arguments",
                    "The model sent tool-call arguments that are not a JSON object.",
                ) from None
            calls.append(call)
        return tuple(calls)


class OpenAICompatAgent:
    """Streams one turn from a chat-completions endpoint (see the module docstring).

    `transport`: an httpx transport (tests pass an `httpx.MockTransport`); `timeout`:
    seconds per network operation; `max_rounds`: model calls per turn at most.
    """

    def __init__(
        self,
        *,
        todo_store: TodoStore,
        base_url: str,
        model: str,
        api_key: str = "",
        system_prompt: str = "",
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = 60.0,
        max_rounds: int = 8,
    ) -> None:
        self.tools = ToolRunner(todo_store, author="tools")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.system_prompt = system_prompt
        self.transport = transport
        self.timeout = timeout
        self.max_rounds = max_rounds

    def _tool_specs(self) -> list[dict[str, Any]]:
        return [
            {"type": "function", "function": spec.as_function()} for spec in self.tools.todos.specs
        ]

    def _messages(self, context: Sequence[Event]) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
        for event in context:
            messages.extend(event_to_messages(event))
        return messages

    async def __call__(self, context: list[Event]) -> AsyncIterator[Event]:
        """Run one turn: stream, execute todo tool calls, repeat until the model stops."""
        session_id = session_id_of(context)
        messages = self._messages(context)
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        async with httpx.AsyncClient(
            transport=self.transport, timeout=self.timeout, headers=headers
        ) as client:
            for _round in range(self.max_rounds):
                acc = _Accumulated()
                async for delta in self._stream(client, messages, acc):
                    yield Event(
                        author=AUTHOR,
                        partial=True,
                        content=Content(role=Role.ASSISTANT, text=delta),
                    )
                calls = acc.tool_calls()
                finish = acc.finish if acc.finish in _FINISH else ""
                assistant = Event(
                    author=AUTHOR,
                    content=Content(role=Role.ASSISTANT, text=acc.text, tool_calls=calls),
                    finish_reason=FinishReason(finish),
                    usage=acc.usage,
                )
                yield assistant
                if not calls:
                    return
                messages.extend(event_to_messages(assistant))
                for call in calls:
                    result = await self.tools.run(session_id, call)
                    yield result
                    messages.extend(event_to_messages(result))
        # Out of rounds: the last results are stored; the next turn's model sees them.

    async def _stream(
        self, client: httpx.AsyncClient, messages: list[dict[str, Any]], acc: _Accumulated
    ) -> AsyncIterator[str]:
        body = {
            "model": self.model,
            "messages": messages,
            "tools": self._tool_specs(),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        url = f"{self.base_url}/chat/completions"
        try:
            async with aconnect_sse(client, "POST", url, json=body) as source:
                response = source.response
                if response.status_code >= 400:
                    raise ProviderError(
                        f"provider_http_{response.status_code}",
                        f"The model endpoint answered HTTP {response.status_code}.",
                    )
                async for sse in source.aiter_sse():
                    if sse.data.strip() == "[DONE]":
                        break
                    try:
                        chunk = json.loads(sse.data)
                    except ValueError:
                        raise ProviderError(
                            "provider_bad_stream", "The model endpoint sent malformed data."
                        ) from None
                    if isinstance(chunk, dict) and "error" in chunk:
                        raise ProviderError(
                            "provider_stream_error", "The model endpoint reported an error."
                        )
                    delta = acc.add(chunk if isinstance(chunk, dict) else {})
                    if delta:
                        yield delta
        except SSEError:
            raise ProviderError(
                "provider_bad_stream", "The model endpoint did not answer with an event stream."
            ) from None
        except httpx.TimeoutException:
            raise ProviderError("provider_timeout", "The model endpoint timed out.") from None
        except httpx.TransportError:
            raise ProviderError(
                "provider_unreachable", "The model endpoint could not be reached."
            ) from None


def make_agent(*, todo_store: TodoStore) -> OpenAICompatAgent:
    """Factory for ``AGENTOPS_AGENT=agentops.agents.openai_compat.make_agent``.

    Reads AGENTOPS_OPENAI_BASE_URL (required), AGENTOPS_OPENAI_MODEL (required) and
    AGENTOPS_OPENAI_API_KEY; raises ValueError naming a missing variable.
    """
    base_url = os.environ.get("AGENTOPS_OPENAI_BASE_URL", "")
    model = os.environ.get("AGENTOPS_OPENAI_MODEL", "")
    for name, value in (("AGENTOPS_OPENAI_BASE_URL", base_url), ("AGENTOPS_OPENAI_MODEL", model)):
        if not value:
            raise ValueError(f"{name} must be set for the OpenAI-compatible agent")
    return OpenAICompatAgent(
        todo_store=todo_store,
        base_url=base_url,
        model=model,
        api_key=os.environ.get("AGENTOPS_OPENAI_API_KEY", ""),
    )
