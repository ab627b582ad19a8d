"""Built-in agents (agentops.agents) on the in-memory runtime stores: no Django, no network."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from agentops.agents.demo import DemoAgent
from agentops.agents.openai_compat import OpenAICompatAgent
from agentops.runtime import (
    Event,
    InMemorySessionService,
    InMemoryTodoStore,
    Runner,
    Turn,
    TurnStore,
)

Stores = tuple[InMemorySessionService, InMemoryTodoStore]


@pytest.fixture
async def stores() -> Stores:
    service = InMemorySessionService()
    await service.create_session("app", "u", session_id="s")
    return service, InMemoryTodoStore(service)


async def _run(runner: Runner, text: str) -> tuple[list[Event], BaseException | None, Turn]:
    events: list[Event] = []
    error: BaseException | None = None
    try:
        async for event in runner.run("s", text):
            events.append(event)
    except BaseException as caught:
        error = caught
    assert isinstance(runner.session_service, TurnStore)
    turns = await runner.session_service.list_turns("s")
    return events, error, turns[-1]


async def test_demo_agent_streams_plans_with_todos_and_completes(stores: Stores) -> None:
    service, todos = stores
    events, error, turn = await _run(Runner(DemoAgent(todo_store=todos, delay=0), service), "plan")
    assert error is None and turn.status == "completed"
    partials = [e for e in events if e.partial]
    stored = [e for e in events if not e.partial]
    answer = next(e for e in stored if e.content.text.startswith("Here is the"))
    assert "".join(p.content.text for p in partials) == answer.content.text
    called = [c.name for e in stored for c in e.content.tool_calls]
    assert called[:2] == ["todos_write", "todos_update"] and "word_count" in called
    results = [e for e in stored if e.role == "tool"]
    assert len(results) == len(called) and all(
        r.content.tool_response is not None and not r.content.tool_response.is_error
        for r in results
    )
    items = await todos.read_todos("s")
    assert [i.status for i in items] == ["completed", "completed", "completed"]


@pytest.mark.parametrize(
    "text,code,stage",
    [
        ("please fail", "demo_provider_error", "provider"),
        ("stop mid-tool", "demo_stopped_mid_tool", "tool"),
    ],
)
async def test_demo_agent_failures_are_recorded_with_their_safe_failure(
    stores: Stores, text: str, code: str, stage: str
) -> None:
    service, todos = stores
    events, error, turn = await _run(Runner(DemoAgent(todo_store=todos, delay=0), service), text)
    assert error is not None
    assert (turn.status, turn.reason) == ("failed", "agent_error")
    assert turn.failure is not None
    assert (turn.failure.code, turn.failure.stage) == (code, stage) and turn.failure.message
    if text == "stop mid-tool":
        assert events[-1].content.tool_calls and not any(e.role == "tool" for e in events)


async def test_demo_agent_hang_is_cancelled_as_interrupted_canceled(stores: Stores) -> None:
    service, todos = stores
    runner = Runner(DemoAgent(todo_store=todos, delay=0), service)

    async def consume() -> None:
        async for _event in runner.run("s", "hang please"):
            pass

    task = asyncio.create_task(consume())
    while not await service.list_turns("s"):
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (turn,) = await service.list_turns("s")
    assert (turn.status, turn.reason) == ("interrupted", "canceled")


def _sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


def _delta(**delta: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}


def _finish(reason: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


async def test_openai_compat_agent_streams_and_executes_todo_tools(stores: Stores) -> None:
    service, todos = stores
    requests: list[tuple[httpx.Request, Any]] = []
    arguments = json.dumps({"todos": [{"content": "Write tests", "status": "pending"}]})

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        requests.append((request, body))
        if len(requests) == 1:
            stream = _sse(
                _delta(role="assistant", content="Let me "),
                _delta(content="plan."),
                _delta(tool_calls=[{"index": 0, "id": "call_1", "type": "function",
                                    "function": {"name": "todos_write",
                                                 "arguments": arguments[:10]}}]),
                _delta(tool_calls=[{"index": 0, "function": {"arguments": arguments[10:]}}]),
                _finish("tool_calls"),
            )  # fmt: skip
        else:
            stream = _sse(
                _delta(content="Planned "),
                _delta(content="one task."),
                _finish("stop"),
                {
                    "choices": [],
                    "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
                },
            )
        return httpx.Response(200, content=stream, headers={"content-type": "text/event-stream"})

    agent = OpenAICompatAgent(
        todo_store=todos, base_url="http://llm.test/v1", model="m", api_key="k",
        transport=httpx.MockTransport(handler),
    )  # fmt: skip
    events, error, turn = await _run(Runner(agent, service), "plan my work")
    assert error is None and turn.status == "completed"
    assert [e.content.text for e in events if e.partial] == [
        "Let me ",
        "plan.",
        "Planned ",
        "one task.",
    ]
    stored = [e for e in events if not e.partial]
    assert [e.role for e in stored] == ["assistant", "tool", "assistant"]
    call = stored[0].content.tool_calls[0]
    assert (call.id, call.name, call.arguments["todos"][0]["content"]) == (
        "call_1",
        "todos_write",
        "Write tests",
    )
    assert stored[0].finish_reason == "tool_calls"
    assert stored[1].content.tool_response is not None
    assert stored[1].content.tool_response.result == {"count": 1}
    usage = stored[2].usage
    assert stored[2].content.text == "Planned one task." and usage is not None
    assert usage.total_tokens == 10
    assert [i.content for i in await todos.read_todos("s")] == ["Write tests"]
    first, second = requests
    assert first[0].url == "http://llm.test/v1/chat/completions"
    assert first[0].headers["authorization"] == "Bearer k"
    assert first[1]["stream"] is True and first[1]["model"] == "m"
    assert {t["function"]["name"] for t in first[1]["tools"]} >= {"todos_write", "todos_update"}
    assert first[1]["messages"] == [{"role": "user", "content": "plan my work"}]
    assert [m["role"] for m in second[1]["messages"]] == ["user", "assistant", "tool"]
    assert second[1]["messages"][2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"count": 1}',
    }


async def test_openai_compat_http_error_is_a_safe_provider_failure(stores: Stores) -> None:
    service, todos = stores
    secret = "internal stack trace with a key sk-123"
    agent = OpenAICompatAgent(
        todo_store=todos, base_url="http://llm.test/v1", model="m",
        transport=httpx.MockTransport(lambda request: httpx.Response(503, text=secret)),
    )  # fmt: skip
    _events, error, turn = await _run(Runner(agent, service), "hi")
    assert error is not None and turn.failure is not None
    assert (turn.status, turn.failure.code, turn.failure.stage) == (
        "failed",
        "provider_http_503",
        "provider",
    )
    assert "503" in turn.failure.message and secret not in turn.failure.message


@pytest.mark.parametrize(
    ("decision", "said"),
    [
        ({"result": {"decision": "approved", "by": "ada", "note": ""}}, "Approved by ada."),
        ({"error": "The person rejected this tool call."}, "I did not deploy **demo-app**"),
    ],
    ids=["approved", "rejected"],
)
async def test_demo_agent_deploy_awaits_a_person_then_continues(
    stores: Stores, decision: dict[str, Any], said: str
) -> None:
    from agentops.runtime import Content, Role, ToolResponse

    service, todos = stores
    runner = Runner(DemoAgent(todo_store=todos, delay=0), service)
    events, error, turn = await _run(runner, "please deploy")
    assert error is None and turn.status == "completed"
    [asking] = [e for e in events if not e.partial]
    [call] = asking.content.tool_calls
    assert call.name == "deploy" and asking.pending_call_ids == (call.id,)
    response = ToolResponse(tool_call_id=call.id, name="deploy", **decision)
    await service.append_event(
        Event(
            session_id="s", turn_id=turn.id, content=Content(role=Role.TOOL, tool_response=response)
        )
    )
    continued = [e async for e in runner.resume("s") if not e.partial]
    assert [e.role for e in continued] == ["assistant"] and said in continued[0].content.text
    assert ("Deployed" in continued[0].content.text) == ("result" in decision)
