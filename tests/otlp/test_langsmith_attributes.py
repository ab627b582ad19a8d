"""`otlp.langsmith` on shapes the captured runs do not hold (the runs themselves:
`test_langsmith_capture`), and a handled tool error sent through the receiver."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from sessions_app import models
from sessions_app.otlp.langsmith import exception_type, langsmith_attributes
from sessions_app.otlp.messages import input_messages, output_messages, system_text
from sessions_app.otlp.strands import ERROR_RESULT
from tests.otlp.agent_spans import protobuf_body, provider
from tests.otlp.conftest import OtlpPoster
from tests.otlp.rows import event_rows
from tests.test_redaction_shapes import database_text

LLM = {"langsmith.span.kind": "llm", "gen_ai.operation.name": "chat"}


def _lc(name: str, **kwargs: Any) -> dict[str, Any]:
    """A message as LangChain's ``dumpd`` serialises it."""
    return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", name],
            "kwargs": kwargs}  # fmt: skip


def _model(prompt: Any, completion: Any = None) -> dict[str, Any]:
    attributes = {**LLM, "gen_ai.prompt": json.dumps(prompt)}
    if completion is not None:
        attributes["gen_ai.completion"] = json.dumps(completion)
    return langsmith_attributes(attributes, 1)


def test_spans_of_other_producers_are_left_as_they_are() -> None:
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.prompt": '{"messages": [["hi"]]}'}
    assert langsmith_attributes(attributes, 0) is attributes


@pytest.mark.parametrize("value", ["{not json", "[1, 2", "null", '"text"', "[]", "{}", 7])
def test_unreadable_inputs_and_outputs_are_dropped_unread(value: Any) -> None:
    attributes = {**LLM, "gen_ai.prompt": value, "gen_ai.completion": value}
    assert langsmith_attributes(attributes, 1) == LLM


def test_content_blocks_tool_calls_and_error_results() -> None:
    prompt = {"messages": [[
        _lc("SystemMessage", content=[{"type": "text", "text": "Be brief."}], type="system"),
        _lc("HumanMessage", content=[{"type": "text", "text": "Hi"},
                                     {"type": "image_url", "image_url": {"url": "x"}}]),
        _lc("AIMessageChunk", content="", additional_kwargs={"tool_calls": [
            {"id": "c1", "function": {"name": "t", "arguments": '{"a": 1}'}}]}),
        _lc("ToolMessage", content="Error: boom", tool_call_id="c1", status="error"),
        _lc("AIMessage", content=[{"type": "tool_use", "id": "c2", "name": "t", "input": {}}]),
        _lc("ToolMessage", content=[{"type": "text", "text": "ok"}], tool_call_id="c2"),
        _lc("ToolMessage", content="no call id"),
        {"lc": 1, "type": "not_implemented", "id": ["x", "Thing"]},
    ]]}  # fmt: skip
    answer = _lc("AIMessage", content=[{"type": "thinking", "thinking": "hm"},
                                       {"type": "text", "text": "Done."}])  # fmt: skip
    kept = _model(prompt, {"generations": [[{"text": "Done.", "message": answer}]]})
    assert "gen_ai.prompt" not in kept and "gen_ai.completion" not in kept
    assert system_text(kept) == "Be brief."
    messages = input_messages(kept)
    assert [(m.role, m.text, [c.id for c in m.calls]) for m in messages] == [
        ("user", "Hi", []),
        ("assistant", "", ["c1"]),
        ("tool", "", []),
        ("assistant", "", ["c2"]),
        ("tool", "", []),
    ]
    assert messages[1].calls[0].arguments == {"a": 1}
    assert [(r.call_id, r.result) for m in messages for r in m.results] == [
        ("c1", ERROR_RESULT),
        ("c2", "ok"),
    ]
    assert [(m.role, m.text) for m in output_messages(kept)] == [("assistant", "Done.")]


def test_message_dicts_pairs_and_a_completion_models_prompts() -> None:
    kept = _model(
        {"messages": [[["system", "Be brief."], {"type": "human", "content": "Hi"},
                       {"role": "user", "content": "Again"}, ("nobody", "x")]]},
        {"generations": [[{"text": "Hello."}]]},
    )  # fmt: skip
    assert system_text(kept) == "Be brief."
    assert [(m.role, m.text) for m in input_messages(kept)] == [("user", "Hi"), ("user", "Again")]
    assert [m.text for m in output_messages(kept)] == ["Hello."]
    kept = _model({"prompts": ["Say hi"]}, {"generations": [[{"text": "hi"}]]})
    assert [(m.role, m.text) for m in input_messages(kept)] == [("user", "Say hi")]
    assert "gen_ai.system_instructions" not in kept


def test_chat_completions_shapes_of_a_traceable_model_run() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    system, user = {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}
    kept = _model(
        {"messages": [system, user], "model": "gpt-x"},
        {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}]},
    )
    assert system_text(kept) == "Be brief."
    assert [m.text for m in input_messages(kept)] == ["Hi"]
    assert [[c.id for c in m.calls] for m in output_messages(kept)] == [["c1"]]


def test_the_given_genai_attributes_are_not_replaced() -> None:
    given = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Given"}]}])
    attributes = {**LLM, "gen_ai.input.messages": given, "gen_ai.prompt": '{"prompts": ["x"]}'}
    assert langsmith_attributes(attributes, 1)["gen_ai.input.messages"] == given


def test_tool_spans_arguments_and_results() -> None:
    tool = {"langsmith.span.kind": "tool", "gen_ai.operation.name": "execute_tool"}
    message = _lc("ToolMessage", content="sunny", tool_call_id="c9", status="success")
    kept = langsmith_attributes(
        {**tool, "gen_ai.prompt": '{"city": "Paris"}',
         "gen_ai.completion": json.dumps({"output": message})}, 1,
    )  # fmt: skip
    assert kept == {**tool, "gen_ai.tool.call.arguments": '{"city": "Paris"}',
                    "gen_ai.tool.call.result": "sunny", "gen_ai.tool.call.id": "c9"}  # fmt: skip
    errored = {"output": {"type": "tool", "content": "Error: x", "tool_call_id": "c9",
                          "status": "error"}}  # fmt: skip
    kept = langsmith_attributes({**tool, "gen_ai.completion": json.dumps(errored)}, 1)
    assert kept["gen_ai.tool.call.result"] == ERROR_RESULT
    kept = langsmith_attributes({**tool, "gen_ai.completion": '{"output": 3}'}, 1)
    assert kept["gen_ai.tool.call.result"] == 3
    kept = langsmith_attributes({**tool, "gen_ai.completion": '{"a": 1, "b": 2}'}, 1)
    assert kept["gen_ai.tool.call.result"] == {"a": 1, "b": 2}
    failed = {**tool, "gen_ai.completion": json.dumps({"output": message})}
    assert langsmith_attributes(failed, 2) == tool  # a failed tool's output is not kept
    assert langsmith_attributes({**tool, "gen_ai.prompt": "{bad"}, 1) == tool


def test_chain_spans_keep_no_state_and_a_prompt_run_is_no_model_call() -> None:
    chain = {"langsmith.span.kind": "chain", "gen_ai.operation.name": "chain"}
    state = '{"messages": [{"type": "human", "content": "Hi"}]}'
    assert langsmith_attributes({**chain, "gen_ai.prompt": state}, 1) == chain
    prompt = {"langsmith.span.kind": "prompt", "gen_ai.operation.name": "chat"}
    assert langsmith_attributes(prompt, 1)["gen_ai.operation.name"] == "prompt"


@pytest.mark.parametrize(
    ("kind", "message", "expected"),
    [
        ("Exception", "ConnectionError('secret')Traceback ...", "ConnectionError"),
        ("Exception", "openai.RateLimitError(message='secret')", "openai.RateLimitError"),
        ("Exception", "secret words: (x)", "Exception"),
        ("Exception", "", "Exception"),
        ("ValueError", "KeyError('x')", "ValueError"),
    ],
)
def test_the_exception_class_is_read_from_the_repr_alone(
    kind: str, message: str, expected: str
) -> None:
    assert exception_type({"langsmith.span.kind": "tool"}, kind, message) == expected
    assert exception_type({}, kind, message) == kind  # another producer's: as sent


def test_a_handled_tool_error_is_stored_as_its_class_alone(poster: OtlpPoster) -> None:
    """LangGraph's ``ToolNode(handle_tool_errors=True)``: the tool's run fails (LangSmith
    records ``Exception(repr + traceback)``), the graph goes on: the node's state and the
    next model call's ``ToolMessage`` (status ``error``) hold the exception's message.
    Spans shaped as LangSmith sends them (`test_langsmith_capture` holds its real ones)."""
    secret = "the-handled-tool-error-text-k4"
    error = f"Error: ConnectionError('{secret}')\n Please fix your mistakes."
    exporter = InMemorySpanExporter()
    tracer = provider(exporter).get_tracer("langsmith")
    meta = {"langsmith.metadata.thread_id": "lsm-handled"}
    system = _lc("SystemMessage", content="Be brief.", type="system")
    user = _lc("HumanMessage", content="Weather in Atlantis?", type="human")
    call = {"name": "get_weather", "args": {"city": "Atlantis"}, "id": "c1", "type": "tool_call"}
    asked = _lc("AIMessage", content="", type="ai", tool_calls=[call])
    told = _lc("ToolMessage", content=error, type="tool", tool_call_id="c1", status="error")
    answer = _lc("AIMessage", content="The weather service failed.", type="ai")

    def run(kind: str, operation: str, prompt: Any, completion: Any) -> dict[str, Any]:
        return {
            **meta,
            "langsmith.span.kind": kind,
            "gen_ai.operation.name": operation,
            "gen_ai.prompt": json.dumps(prompt),
            "gen_ai.completion": json.dumps(completion),
        }

    state = {"messages": [{"type": "tool", "content": error, "tool_call_id": "c1"}]}
    with tracer.start_as_current_span("LangGraph", attributes=run("chain", "chain", {}, state)):
        generations = {"generations": [[{"text": "", "message": asked}]]}
        with tracer.start_as_current_span(
            "FakeChat", attributes=run("llm", "chat", {"messages": [[system, user]]}, generations)
        ):
            pass
        with tracer.start_as_current_span(
            "tools", attributes=run("chain", "chain", {"state": "..."}, state)
        ):
            tool = tracer.start_span("get_weather", attributes={
                **meta, "langsmith.span.kind": "tool", "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "c1",
                "gen_ai.prompt": '{"city": "Atlantis"}', "gen_ai.completion": "{}"})  # fmt: skip
            tool.set_status(Status(StatusCode.ERROR))
            tool.record_exception(Exception(f"ConnectionError('{secret}')Traceback ..."))
            tool.end()
        prompt = {"messages": [[system, user, asked, told]]}
        generations = {"generations": [[{"text": answer["kwargs"]["content"], "message": answer}]]}
        with tracer.start_as_current_span(
            "FakeChat", attributes=run("llm", "chat", prompt, generations)
        ):
            pass
    assert poster.post(protobuf_body(exporter.get_finished_spans())).status_code == 200
    assert event_rows(session_id="lsm-handled") == [
        ("system", "Be brief.", [], ""),
        ("user", "Weather in Atlantis?", [], ""),
        ("assistant", "", ["c1"], ""),
        ("tool", "", [], "c1"),
        ("assistant", "The weather service failed.", [], ""),
    ]
    (result,) = models.Event.objects.filter(session_id="lsm-handled", role="tool")
    assert result.tool_response == {
        "tool_call_id": "c1",
        "name": "get_weather",
        "error": "ConnectionError",
    }
    assert secret not in database_text()
