"""`otlp.strands.strands_attributes` on shapes the captured runs do not hold (the runs
themselves: `test_strands_capture`)."""

from __future__ import annotations

import json

from sessions_app.otlp.messages import EVENTS_KEY, input_messages, output_messages
from sessions_app.otlp.strands import ERROR_RESULT, strands_attributes

STRANDS = {"gen_ai.system": "strands-agents"}


def test_spans_of_other_producers_are_left_as_they_are() -> None:
    attributes = {"gen_ai.operation.name": "chat", EVENTS_KEY: [{"name": "gen_ai.choice"}]}
    assert strands_attributes(attributes, 0) is attributes


def test_a_json_result_block_is_read_as_its_json_and_an_error_text_is_not_kept() -> None:
    events = [
        {"name": "gen_ai.user.message", "attributes": {"content": '[{"text": "Go"}]'}},
        {
            "name": "gen_ai.assistant.message",
            "attributes": {
                "content": json.dumps([{"toolUse": {"toolUseId": "c1", "name": "t", "input": {}}}])
            },
        },
        {
            "name": "gen_ai.tool.message",
            "attributes": {
                "content": json.dumps(
                    [
                        {
                            "toolResult": {
                                "toolUseId": "c1",
                                "status": "success",
                                "content": [{"json": {"a": 1}}],
                            }
                        },
                        {
                            "toolResult": {
                                "toolUseId": "c2",
                                "status": "error",
                                "content": [{"text": "Error: secret"}],
                            }
                        },
                    ]
                )
            },
        },
        {"name": "gen_ai.choice", "attributes": {"message": "plain answer"}},
    ]
    kept = strands_attributes({**STRANDS, "gen_ai.operation.name": "chat", EVENTS_KEY: events}, 0)
    assert EVENTS_KEY not in kept and "secret" not in json.dumps(kept)
    results = [r for m in input_messages(kept) for r in m.results]
    assert [(r.call_id, r.result) for r in results] == [("c1", '{"a": 1}'), ("c2", ERROR_RESULT)]
    assert [m.text for m in output_messages(kept)] == ["plain answer"]


def test_agent_and_cycle_spans_keep_no_messages() -> None:
    for operation in ("invoke_agent", "execute_event_loop_cycle"):
        attributes = {
            **STRANDS,
            "gen_ai.operation.name": operation,
            "gen_ai.input.messages": "[]",
            "gen_ai.system_instructions": "[]",
            EVENTS_KEY: [{"name": "gen_ai.choice", "attributes": {"message": "hi"}}],
            "gen_ai.usage.input_tokens": 9,
        }
        assert strands_attributes(attributes, 0) == {
            **STRANDS,
            "gen_ai.operation.name": operation,
            "gen_ai.usage.input_tokens": 9,
        }


def test_a_failed_tools_result_is_not_kept_and_redacted_values_are_dropped() -> None:
    attributes = {
        "gen_ai.provider.name": "strands-agents",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.call.arguments": "[REDACTED]",
        "gen_ai.tool.call.result": '[{"text": "Error: secret"}]',
    }
    assert strands_attributes(attributes, 2) == {
        "gen_ai.provider.name": "strands-agents",
        "gen_ai.operation.name": "execute_tool",
    }
