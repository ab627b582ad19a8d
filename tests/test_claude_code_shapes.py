"""Claude Code shapes from real transcripts, each as a minimal input with concrete verdicts:
one event per API message, compaction, rewinds, orphans, turn rule, awaiting the user."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions_app.ingest import import_file, parse_file
from sessions_app.ingest.writer import parsed_facts, parsed_resume_status
from sessions_app.models import Event, Session, Turn
from sessions_app.store import orphan_count
from tests.claude_lines import SID, Lines, project_folder

pytestmark = pytest.mark.django_db


def split_message(tmp_path: Path) -> Path:
    """The issue's minimal input: results arrive between the lines of msg_X."""
    lines = Lines()
    lines.prompt("check both")
    lines.use("msg_X", "A")
    lines.use("msg_X", "B")
    lines.result("A")
    lines.use("msg_X", "C")
    lines.result("B")
    lines.result("C")
    lines.say("msg_Y", "both fine")
    return lines.write(tmp_path / "split.jsonl")


def test_lines_of_one_api_message_are_one_event_whatever_comes_between(
    tmp_path: Path, operator_client: Client
) -> None:
    report = import_file(split_message(tmp_path))
    assert report.stats["events"] == 6
    assert report.stats["unanswered_calls"] == 0
    roles = list(Event.objects.order_by("id").values_list("role", flat=True))
    assert roles == ["user", "assistant", "tool", "tool", "tool", "assistant"]
    assistant = Event.objects.get(source_id="msg_X")
    assert [call["id"] for call in assistant.tool_calls] == ["A", "B", "C"]
    session = Session.objects.get()
    assert (session.protocol_issue_count, session.cannot_resume) == (0, False)
    body = operator_client.get(reverse("sessions:protocol", args=[SID])).content.decode()
    assert "no result</span>" not in body and "clean" in body
    context = operator_client.get(reverse("sessions:context", args=[SID])).content.decode()
    assert "resumable" in context and "Projection fails" not in context


@st.composite
def answered_sessions(draw: st.DrawFn) -> Lines:
    """A prompt, then API messages whose tool_use lines and results interleave in any
    order a result can follow its call; every call answered."""
    lines = Lines()
    lines.prompt("go")
    for m in range(draw(st.integers(1, 3))):
        calls = [f"c{m}-{i}" for i in range(draw(st.integers(1, 4)))]
        pending: list[str] = []
        todo = list(calls)
        while todo or pending:
            if todo and (not pending or draw(st.booleans())):
                call = todo.pop(0)
                lines.use(f"msg_{m}", call)
                pending.append(call)
            else:
                lines.result(pending.pop(draw(st.integers(0, len(pending) - 1))))
        lines.say(f"msg_{m}_end", "done")
    return lines


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=answered_sessions())
def test_all_answered_sessions_are_never_flagged(tmp_path: Path, lines: Lines) -> None:
    parsed = parse_file(lines.write(tmp_path / "p.jsonl")).sessions[0]
    assert parsed.stats()["unanswered_calls"] == 0
    assert parsed_resume_status(parsed) == (0, False)
    assert orphan_count(parsed_facts(parsed)[1]) == 0
    assert {t.status for t in parsed.turns} == {"completed"}


@pytest.mark.parametrize("order", [(0, 1, 2), (1, 2, 0), (2, 0, 1), (1, 0, 2)])
def test_project_folder_lands_every_session_once_with_links_in_any_order(
    tmp_path: Path, order: tuple[int, int, int]
) -> None:
    files = project_folder(tmp_path)
    for index in order:
        assert import_file(files[index]).status == "imported"
    rows = dict(Session.objects.values_list("id", "parent_session_id"))
    assert rows == {SID: "", f"{SID}.agent-a1": SID, f"{SID}.agent-acompact-x": SID}
    calls = dict(Session.objects.values_list("id", "parent_call_id"))
    assert calls[f"{SID}.agent-a1"] == "task-1" and calls[f"{SID}.agent-acompact-x"] == ""
    assert Turn.objects.filter(session_id=SID).count() == 1


def test_inline_sidechain_of_claude_2_0_is_a_sub_agent_and_leaves_the_task_answered(
    tmp_path: Path,
) -> None:
    # The shape of claude-code-log's sidechain_integrated fixture (CLI 2.0.46): the
    # parent's Task result line carries the sub-agent's agentId too, and only some of the
    # sub-agent's own (isSidechain) lines name it.
    lines = Lines(isSidechain=False)
    lines.prompt("research the border colours")
    lines.use("msg_1", "task-1", name="Task")
    done = lines.result("task-1", "report", agentId="e1c84ba5", toolUseResult={})
    lines.prompt("Research how data-border-color is used", parent="", isSidechain=True)
    lines.use("msg_s1", "grep-1", name="Grep", isSidechain=True)
    lines.result("grep-1", "3 files", isSidechain=True, agentId="e1c84ba5")
    lines.say("msg_2", "Excellent research!", parent=done)
    report = import_file(lines.write(tmp_path / f"{SID}.jsonl"))
    sub = f"{SID}.agent-e1c84ba5"
    assert sorted(report.session_ids) == [SID, sub]
    main, agent = Session.objects.get(pk=SID), Session.objects.get(pk=sub)
    assert (main.protocol_issue_count, main.cannot_resume, main.orphan_result_count) == (
        0,
        False,
        0,
    )
    assert (agent.protocol_issue_count, agent.orphan_result_count) == (0, 0)
    assert (agent.parent_session_id, agent.parent_call_id) == (SID, "task-1")
    assert Event.objects.filter(session_id=SID).count() == 4
    assert Event.objects.filter(session_id=sub).count() == 3


def test_directory_walk_imports_the_session_file_before_its_folder(tmp_path: Path) -> None:
    from sessions_app.ingest import transcript_files

    project_folder(tmp_path)
    names = [path.name for path, _explicit in transcript_files([str(tmp_path)])]
    assert names == [f"{SID}.jsonl", "agent-a1.jsonl", "agent-acompact-x.jsonl"]


def test_session_page_nests_sub_agents_and_links_up(
    tmp_path: Path, operator_client: Client
) -> None:
    for path in project_folder(tmp_path):
        import_file(path)
    body = operator_client.get(reverse("sessions:detail", args=[SID])).content.decode()
    assert "Sub-agents" in body and body.count(f"/sessions/{SID}.agent-") == 2
    sub = operator_client.get(reverse("sessions:detail", args=[f"{SID}.agent-a1"]))
    assert "Sub-agent of" in sub.content.decode() and f'href="/sessions/{SID}/"' in (
        sub.content.decode()
    )


def test_compaction_is_a_marked_event_and_the_context_starts_at_its_summary(
    tmp_path: Path, operator_client: Client
) -> None:
    import_file(project_folder(tmp_path)[0])
    compaction = Event.objects.get(session_id=SID, author="compaction")
    assert compaction.role == "user"
    assert isinstance(compaction.raw, dict)
    facts = compaction.raw["compaction"]
    assert facts["summarised_events"] == 4 and facts["trigger"] == "auto"
    assert facts["pre_tokens"] == 1234 and facts["todo_carried"] is None
    assert Turn.objects.filter(session_id=SID).count() == 1  # never a user turn
    body = operator_client.get(reverse("sessions:context", args=[SID])).content.decode()
    assert body.count("badge kind-compacted") == 4
    assert body.count("badge kind-kept") == 2  # the summary and what came after it
    assert "Compacted at event" in body
    chunk = operator_client.get(
        reverse("sessions:turn_events", args=[SID, f"{SID}/turn-0001"])
    ).content.decode()
    # The tool result is shown inside its call: 3 rows for the 4 compacted events.
    assert chunk.count(">compacted</span>") == 3 and "4 earlier events summarised" in chunk


@pytest.mark.parametrize(
    ("summary", "carried"),
    [
        ("Done so far. Open: Write the parser; Add tests.", True),
        ("Done so far. Open: Write the parser.", False),
    ],
)
def test_compaction_says_whether_the_open_todo_items_were_carried(
    tmp_path: Path, operator_client: Client, summary: str, carried: bool
) -> None:
    lines = Lines()
    lines.prompt("build it")
    items = [
        {"content": "Read the spec", "status": "completed", "activeForm": "Reading"},
        {"content": "Write the parser", "status": "in_progress", "activeForm": "Writing"},
        {"content": "Add tests", "status": "pending", "activeForm": "Adding tests"},
    ]
    lines.todo_write("msg_1", "todo-1", items)
    lines.result("todo-1")
    lines.compaction(f"This session is being continued. {summary}")
    lines.say("msg_2", "continuing")
    import_file(lines.write(tmp_path / "todo.jsonl"))
    compaction = Event.objects.get(session_id=SID, author="compaction")
    assert isinstance(compaction.raw, dict)
    assert compaction.raw["compaction"]["todo_carried"] is carried
    body = operator_client.get(reverse("sessions:context", args=[SID])).content.decode()
    said = "Todo list carried: yes" if carried else "Todo list carried: <strong>no</strong>"
    assert said in body


def test_rewind_keeps_only_the_active_branch_and_marks_the_abandoned_one(
    tmp_path: Path, operator_client: Client
) -> None:
    lines = Lines()
    lines.prompt("Start")
    a1 = lines.say("msg_a1", "Ready")
    lines.prompt("First attempt")
    lines.say("msg_b1", "First answer")
    lines.prompt("Second attempt", parent=a1)
    leaf = lines.say("msg_b2", "Second answer")
    lines.raw({"type": "summary", "summary": "Second try", "leafUuid": leaf})
    import_file(lines.write(tmp_path / "rewind.jsonl"))
    archived = Event.objects.filter(archived_at__isnull=False)
    assert sorted(archived.values_list("text", flat=True)) == ["First answer", "First attempt"]
    assert Session.objects.get().title == "Second try"
    body = operator_client.get(reverse("sessions:context", args=[SID])).content.decode()
    assert body.count("badge kind-abandoned") == 2 and body.count("badge kind-kept") == 4
    assert "resumable" in body


def test_compaction_after_a_rewind_summarises_only_the_active_branch(
    tmp_path: Path, operator_client: Client
) -> None:
    # The shape of claude-code-log's dag_compact_after_rewind fixture.
    lines = Lines()
    lines.prompt("Start")
    ready = lines.say("msg_a1", "Ready")
    lines.prompt("First attempt")
    lines.say("msg_b1", "First answer")
    lines.prompt("Second attempt", parent=ready)
    lines.say("msg_b2", "Second answer")
    lines.prompt("Keep going")
    lines.say("msg_b3", "Kept going")
    lines.compaction("This session is being continued from a previous conversation.")
    lines.prompt("After compaction")
    lines.say("msg_p1", "Final answer")
    import_file(lines.write(tmp_path / "dag.jsonl"))
    archived = Event.objects.filter(archived_at__isnull=False)
    assert sorted(archived.values_list("text", flat=True)) == ["First answer", "First attempt"]
    compaction = Event.objects.get(author="compaction")
    assert isinstance(compaction.raw, dict)
    assert compaction.raw["compaction"]["summarised_events"] == 6
    assert compaction.raw["compaction"]["summarised_up_to"] == "msg_b3"
    session = Session.objects.get()
    assert (session.protocol_issue_count, session.cannot_resume) == (0, False)
    body = operator_client.get(reverse("sessions:context", args=[SID])).content.decode()
    assert body.count("badge kind-compacted") == 6 and body.count("badge kind-abandoned") == 2
    assert body.count("badge kind-kept") == 3  # the summary, the prompt after it, its answer


def test_orphan_results_are_flagged_counted_and_marked(
    tmp_path: Path, operator_client: Client
) -> None:
    lines = Lines()
    lines.prompt("go")
    lines.use("msg_1", "A")
    lines.result("A")
    lines.result("ghost")  # answers no call
    lines.say("msg_2", "done")
    import_file(lines.write(tmp_path / "orphan.jsonl"))
    session = Session.objects.get()
    assert (session.orphan_result_count, session.protocol_issue_count) == (1, 0)
    protocol = operator_client.get(reverse("sessions:protocol", args=[SID])).content.decode()
    assert "1 orphan result" in protocol and "<code>ghost</code>" in protocol
    context = operator_client.get(reverse("sessions:context", args=[SID])).content.decode()
    assert context.count("would be rejected by providers</span>") == 1
    listing = operator_client.get(reverse("sessions:list") + "?health=orphans").content.decode()
    assert "1 orphan" in listing


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("start", [("completed", "", "left with an unknown tool outcome")]),
        (
            "middle",
            [("completed", "", "left with an unknown tool outcome"), ("completed", "", "")],
        ),
        ("end", [("completed", "", ""), ("interrupted", "abandoned", "transcript ends inside")]),
    ],
)
def test_one_turn_rule_wherever_the_unanswered_call_sits(
    tmp_path: Path, where: str, expected: list[tuple[str, str, str]]
) -> None:
    lines = Lines()
    if where == "start":  # a transcript that starts with a non-user event
        lines.use("msg_0", "X")
        lines.prompt("first")
        lines.say("msg_1", "hi")
    elif where == "middle":
        lines.prompt("first")
        lines.use("msg_0", "X")
        lines.prompt("second")
        lines.say("msg_1", "hi")
    else:
        lines.prompt("first")
        lines.say("msg_1", "hi")
        lines.prompt("second")
        lines.use("msg_0", "X")
    turns = parse_file(lines.write(tmp_path / f"{where}.jsonl")).sessions[0].turns
    got = [(t.status, t.reason, t.status_note) for t in turns]
    assert [(s, r) for s, r, _n in got] == [(s, r) for s, r, _n in expected]
    assert all(
        note.startswith(prefix)
        for (_s, _r, note), (_a, _b, prefix) in zip(got, expected, strict=True)
    )


def test_every_real_prompt_starts_a_turn_after_a_leading_non_user_event(tmp_path: Path) -> None:
    lines = Lines()
    lines.say("msg_0", "hello from a resumed agent")
    for n in range(3):
        lines.prompt(f"prompt {n}")
        lines.say(f"msg_{n + 1}", "ok")
    parsed = parse_file(lines.write(tmp_path / "lead.jsonl")).sessions[0]
    assert len(parsed.turns) == 3
    assert {t.status for t in parsed.turns} == {"completed"}


def test_exit_plan_mode_without_answer_is_awaiting_the_user(
    tmp_path: Path, operator_client: Client
) -> None:
    lines = Lines()
    lines.prompt("plan it")
    lines.use("msg_1", "plan-1", name="ExitPlanMode")
    report = import_file(lines.write(tmp_path / "plan.jsonl"))
    assert (report.stats["unanswered_calls"], report.stats["pending_calls"]) == (0, 1)
    turn = Turn.objects.get()
    assert (turn.status, turn.reason) == ("interrupted", "consumer_stopped")
    assert turn.status_note == "awaiting the user: plan-1"
    chunk = operator_client.get(
        reverse("sessions:turn_events", args=[SID, turn.id])
    ).content.decode()
    assert "awaiting the user" in chunk and "no result</span>" not in chunk
    protocol = operator_client.get(reverse("sessions:protocol", args=[SID])).content.decode()
    assert "awaiting the user" in protocol and "no result</span>" not in protocol
    # The context leaves the call out (its turn is interrupted) and says why.
    context = operator_client.get(reverse("sessions:context", args=[SID])).content.decode()
    assert "resumable" in context and "awaiting the user: plan-1" in context
