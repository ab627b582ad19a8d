"""Each real transcript of ../shared/corpus imports with the counts read from the file.

The expected figures were checked by reading each file (see shared/corpus/README.md for
what each one holds); README line numbers are 0-based, ours (in problems and status notes)
are 1-based.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from sessions_app.ingest import import_file
from sessions_app.models import Event, Session, Turn
from todos_app.models import TodoList

pytestmark = pytest.mark.django_db


def _import(path: Path) -> dict[str, int]:
    report = import_file(path)
    assert report.status == "imported"
    return report.stats


def _turns(session_id: str) -> list[tuple[str, str]]:
    return [(t.status, t.reason) for t in Turn.objects.filter(session_id=session_id)]


def test_claude_full_session_three_ends_inside_three_tool_calls(corpus: Path) -> None:
    stats = _import(corpus / "claude-code/agentcmd__full-session-three.jsonl")
    # 49 lines: 2 prompts ("Hey", "Can you audit..."); assistant lines sharing message.id
    # merge into 12 events; 20 tool_result blocks -> 20 tool events.
    assert stats == {
        "sessions": 1,
        "turns": 2,
        "events": 32,
        "tool_calls": 23,
        "unanswered_calls": 3,
        "pending_calls": 0,
        "todo_items": 7,
        "skipped_lines": 0,
    }
    sid = "cfa1e878-62b5-4e40-b281-bbf9b250d766"
    assert _turns(sid) == [("completed", ""), ("interrupted", "abandoned")]
    last = Turn.objects.filter(session_id=sid).last()
    assert last is not None
    assert last.status_note == (
        "transcript ends inside tool call toolu_019KCj6ze6s4xPHdfY6s1FC5, "
        "toolu_011df4X9k8WZCHh9sXKVzGHZ, toolu_01XSaf9HkXmiWhn7q2mekBiR"
    )
    # Lines 1-2 (0-based) are one API message: text then a tool_use.
    merged = Event.objects.filter(session_id=sid, role="assistant").first()
    assert merged is not None
    assert merged.text.startswith("I'll help you")
    assert [c["name"] for c in merged.tool_calls] == ["mcp__happy__change_title"]
    assert merged.raw is not None and len(merged.raw) == 2
    assert merged.usage is not None and set(merged.usage) == {
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "details",
    }
    # Two TodoWrite calls: the list is the last write, version = number of writes.
    todo_list = TodoList.objects.get(session_id=sid)
    assert todo_list.version == 2
    assert [i.status for i in todo_list.items.all()].count("completed") >= 1
    session = Session.objects.get(id=sid)
    assert "todos" not in session.state
    assert session.created_at.tzinfo is not None


def test_claude_tool_heavy_has_two_interrupt_markers_and_no_dangling_calls(corpus: Path) -> None:
    stats = _import(corpus / "claude-code/spotter__tool_heavy.jsonl")
    assert stats == {
        "sessions": 1,
        "turns": 2,
        "events": 17,  # one event per API message: msg ...5jdsym spans lines 34-37
        "tool_calls": 6,
        "unanswered_calls": 0,
        "pending_calls": 0,
        "todo_items": 0,
        "skipped_lines": 0,
    }
    sid = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"
    turns = list(Turn.objects.filter(session_id=sid))
    assert [(t.status, t.reason, t.status_note) for t in turns] == [
        ("interrupted", "canceled", "interrupt marker at line 18"),
        ("interrupted", "canceled", "interrupt marker at line 39"),
    ]
    # The caveat, /mcp command and its stdout are stored but start no turn.
    assert Event.objects.filter(session_id=sid, author="command").count() == 3
    # Lines 26-29 are one API message: a whitespace-only text block (dropped), thinking
    # (-> reasoning) and two tool_use blocks.
    first_answer = Event.objects.filter(session_id=sid, source_id__endswith="DSj7e6").get()
    assert first_answer.text == ""
    assert first_answer.reasoning.startswith("The user wants me to research")
    assert [c["name"] for c in first_answer.tool_calls] == ["WebSearch", "Glob"]
    assert not TodoList.objects.filter(session_id=sid).exists()


def test_claude_edge_cases_skip_malformed_lines(corpus: Path) -> None:
    report = import_file(corpus / "claude-code/claude-code-log__edge_cases.jsonl")
    assert report.stats == {
        "sessions": 1,
        "turns": 3,
        "events": 11,
        "tool_calls": 3,
        "unanswered_calls": 2,
        "pending_calls": 0,
        "todo_items": 4,
        "skipped_lines": 7,
    }
    assert [(p.line, p.reason) for p in report.problems] == [
        (10, "message has no 'content' (found 'contenst')"),
        (11, "missing or invalid 'timestamp' (found 'timesstamp')"),
        (13, "not a JSON object (got str)"),
        (14, "object has no 'type'"),
        (15, "not a JSON object (got int)"),
        (16, "not a JSON object (got list)"),
        (18, "message.content[0] is not an object"),
    ]
    assert _turns("edge_cases") == [
        ("completed", ""),
        ("completed", ""),
        ("interrupted", "abandoned"),
    ]
    turns = list(Turn.objects.filter(session_id="edge_cases"))
    # Line 10 (the MultiEdit result) was skipped, so that call has no result.
    assert turns[1].status_note == (
        "left with an unknown tool outcome: no result for tool call tool_edge_002"
    )
    failing = Event.objects.get(session_id="edge_cases", tool_call_id="tool_edge_001")
    assert failing.tool_response == {
        "tool_call_id": "tool_edge_001",
        "name": "FailingTool",
        "error": "Error: Tool execution failed with error: Command not found",
    }
    # Old-style TodoWrite: the string entry is skipped, 4 items, no active form.
    todo_list = TodoList.objects.get(session_id="edge_cases")
    assert todo_list.version == 1
    assert [(i.position, i.status, i.active_form) for i in todo_list.items.all()] == [
        (0, "in_progress", ""),
        (1, "pending", ""),
        (2, "pending", ""),
        (3, "pending", ""),
    ]
    assert Session.objects.get(id="edge_cases").title.startswith("Tested various edge cases")


def test_codex_rollout_pairs_34_calls(corpus: Path) -> None:
    path = corpus / "codex-cli/agentcmd__rollout-2025-09-25T15-12-14-019982b8.jsonl"
    stats = _import(path)
    # environment context (system) + 1 prompt + 34 call events + 34 outputs + final answer.
    assert stats == {
        "sessions": 1,
        "turns": 1,
        "events": 71,
        "tool_calls": 34,
        "unanswered_calls": 0,
        "pending_calls": 0,
        "todo_items": 0,
        "skipped_lines": 0,
    }
    sid = "019982b8-3422-79e0-8b3b-05abaf4f3c3e"
    assert _turns(sid) == [("completed", "")]
    events = list(Event.objects.filter(session_id=sid))
    assert [e.role for e in events[:3]] == ["system", "user", "assistant"]
    assert events[2].tool_calls[0]["arguments"]["command"] == ["bash", "-lc", "ls"]
    assert events[2].reasoning == "**Evaluating repo structure and planning**"
    assert events[2].usage is not None and events[2].usage["prompt_tokens"] == 2899
    assert events[3].tool_response is not None
    assert events[3].tool_response["result"]["metadata"]["exit_code"] == 0
    assert events[-1].text.startswith("**Findings**")


def test_adk_customer_service_pairs_calls_without_ids(corpus: Path) -> None:
    stats = _import(corpus / "google-adk/adk-samples__customer-service__123.session.json")
    assert stats == {
        "sessions": 1,
        "turns": 11,
        "events": 34,
        "tool_calls": 6,
        "unanswered_calls": 0,
        "pending_calls": 0,
        "todo_items": 0,
        "skipped_lines": 0,
    }
    sid = "f7e81523-cd34-4202-821e-a1f44d9cef94"
    assert set(_turns(sid)) == {("completed", "")}
    calls = [c for e in Event.objects.filter(session_id=sid) for c in e.tool_calls]
    answers = list(Event.objects.filter(session_id=sid, role="tool"))
    # Synthetic ids are stable and every response found its call by name and order.
    assert [a.tool_call_id for a in answers] == [c["id"] for c in calls]
    assert [a.tool_response["name"] for a in answers if a.tool_response] == [
        c["name"] for c in calls
    ]
    assert Session.objects.get(id=sid).state["customer_profile"]["customer_id"] == "123"


def test_adk_shopping_keeps_state_only_events(corpus: Path) -> None:
    path = (
        corpus
        / "google-adk/adk-samples__personalized-shopping__text_search_floral_dress.session.json"
    )
    stats = _import(path)
    assert stats == {
        "sessions": 1,
        "turns": 8,
        "events": 50,
        "tool_calls": 12,
        "unanswered_calls": 0,
        "pending_calls": 0,
        "todo_items": 0,
        "skipped_lines": 0,
    }
    sid = "9056575a-70ad-410e-84ea-a2af3aa7dbed"
    state_only = Event.objects.filter(session_id=sid, author="model")
    assert state_only.count() == 10
    assert all(
        e.role == "assistant" and e.text == "" and "_time" in e.state_delta for e in state_only
    )
    # The two state-only events before the first prompt belong to the first turn.
    assert Turn.objects.filter(session_id=sid).first().id == state_only.first().turn_id  # type: ignore[union-attr]


def test_swe_agent_history_normalises_tool_call_ids(corpus: Path) -> None:
    path = corpus / "openai-chat-swe-agent/swe-agent__6e44b9__sweagenttestrepo-1c2844.traj.json"
    stats = _import(path)
    # 10 messages: system, user, then 4 assistant calls each answered by a tool message
    # (the corpus README says 3 pairs; the file has 4).
    assert stats == {
        "sessions": 1,
        "turns": 1,
        "events": 10,
        "tool_calls": 4,
        "unanswered_calls": 0,
        "pending_calls": 0,
        "todo_items": 0,
        "skipped_lines": 0,
    }
    sid = "openai-chat:swe-agent__6e44b9__sweagenttestrepo-1c2844.traj"
    assert _turns(sid) == [("completed", "")]
    tool = Event.objects.filter(session_id=sid, role="tool").first()
    assert tool is not None and tool.tool_call_id == "call_fJuazlMUN5fQDQ73G6XSpYpx"
    call = Event.objects.filter(session_id=sid, role="assistant").first()
    assert call is not None and call.tool_calls[0]["arguments"] == {"file_name": "missing_colon.py"}


def test_agents_sdk_pending_approval_is_pending_not_broken(corpus: Path) -> None:
    path = corpus / "openai-agents-sdk/run_state__resume__v1_13_pending_tool_approval.json"
    stats = _import(path)
    assert stats == {
        "sessions": 1,
        "turns": 1,
        "events": 2,
        "tool_calls": 1,
        "unanswered_calls": 0,
        "pending_calls": 1,
        "todo_items": 0,
        "skipped_lines": 0,
    }
    sid = "openai-agents:run_state__resume__v1_13_pending_tool_approval"
    turn = Turn.objects.get(session_id=sid)
    assert (turn.status, turn.reason) == ("interrupted", "consumer_stopped")
    assert turn.status_note == "awaiting the user: historical-approval-1"
    call = Event.objects.get(session_id=sid, role="assistant")
    assert call.pending_call_ids == ["historical-approval-1"]
    # The title is the run's first real input: this fixture's `original_input` really is
    # the words "historical input" (the SDK's test data), not a placeholder of ours.
    original = json.loads(path.read_text())["original_input"]
    assert Session.objects.get(pk=sid).title == original
    assert Event.objects.get(session_id=sid, role="user").text == original
    assert call.tool_calls[0]["arguments"] == {"account_id": "account-1"}


def test_agents_sdk_mount_credentials_never_stored(corpus: Path) -> None:
    path = corpus / "openai-agents-sdk/run_state__security__v1_13_legacy_mount_credentials.json"
    stats = _import(path)
    assert (stats["sessions"], stats["turns"], stats["events"], stats["tool_calls"]) == (1, 1, 1, 0)
    stored = repr(list(Event.objects.values())) + repr(list(Session.objects.values()))
    for sentinel in (
        "RUNSTATE_ACCESS_SENTINEL_42",
        "RUNSTATE_SECRET_SENTINEL_42",
        "RUNSTATE_TOKEN_SENTINEL_42",
    ):
        assert sentinel not in stored


def test_whole_corpus_directory_imports(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    call_command("import_sessions", str(corpus), "--no-progress")
    out = capsys.readouterr().out
    assert out.count(": imported (") == 9
    assert Session.objects.count() == 9
