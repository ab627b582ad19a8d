"""A tool span that starts before the model span that asked for it has ended (a
producer that starts the tool while the response is still being finished, or spans of
the same timestamp): the model's call is stored once, on the assistant message, with
its arguments, answered by the tool's result; no orphan result, nothing to block a
resume."""

from __future__ import annotations

import json

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sessions_app import models
from tests.otlp.agent_spans import protobuf_body, provider
from tests.otlp.conftest import OtlpPoster
from tests.otlp.rows import event_rows

MS = 1_000_000
T0 = 1_767_000_000_000 * MS


def _turn(tool_starts_before_chat_ends_by: int) -> bytes:
    exporter = InMemorySpanExporter()
    tracer = provider(exporter).get_tracer("tests.otlp.overlap")
    root = tracer.start_span("invoke_agent files", start_time=T0)
    root.set_attributes({"gen_ai.operation.name": "invoke_agent",
                         "gen_ai.conversation.id": "conv-overlap"})  # fmt: skip
    context = trace.set_span_in_context(root)
    asked = {"role": "assistant", "parts": [
        {"type": "text", "content": "Listing."},
        {"type": "tool_call", "id": "call_ls", "name": "ls", "arguments": {"path": "/"}},
    ]}  # fmt: skip
    chat = tracer.start_span("chat gpt-4o", context=context, start_time=T0 + 1 * MS)
    chat.set_attributes({
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "List /"}]}]
        ),
        "gen_ai.output.messages": json.dumps([asked]),
    })  # fmt: skip
    chat_end = T0 + 10 * MS
    tool = tracer.start_span(
        "execute_tool ls", context=context, start_time=chat_end - tool_starts_before_chat_ends_by
    )
    tool.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ls",
                         "gen_ai.tool.call.id": "call_ls",
                         "gen_ai.tool.call.result": json.dumps(["etc", "usr"])})  # fmt: skip
    chat.end(end_time=chat_end)
    tool.end(end_time=chat_end + 5 * MS)
    root.end(end_time=chat_end + 6 * MS)
    return protobuf_body(exporter.get_finished_spans())


@pytest.mark.parametrize("overlap", [0, 1 * MS, 9 * MS], ids=["at-its-end", "1ms", "9ms"])
def test_a_tool_span_starting_before_its_model_span_ends(poster: OtlpPoster, overlap: int) -> None:
    assert poster.post(_turn(overlap)).status_code == 200
    assert event_rows(session_id="conv-overlap") == [
        ("user", "List /", [], ""),
        ("assistant", "Listing.", ["call_ls"], ""),
        ("tool", "", [], "call_ls"),
    ]
    call = models.Event.objects.get(session_id="conv-overlap", role="assistant").tool_calls[0]
    assert call["arguments"] == {"path": "/"}
    session = models.Session.objects.get(pk="conv-overlap")
    assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)
    assert not session.cannot_resume
