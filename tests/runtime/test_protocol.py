"""Tool-protocol inspection and validation (docs/runtime.md §5, acceptance cases of 8)."""

from __future__ import annotations

import pytest

from agentops.runtime import (
    ToolExecutionUnknownError,
    inspect_tool_protocol,
    validate_tool_protocol,
)

from .helpers import assistant, call, result, user


def test_all_calls_answered_has_no_issue() -> None:
    events = [
        user(id=1),
        assistant(calls=[call("a"), call("b")], id=2),
        result("b", id=3),
        result("a", id=4, plain=True),
        assistant("done", id=5),
    ]
    assert inspect_tool_protocol(events) == []
    validate_tool_protocol(events)


def test_missing_result_names_only_the_missing_call() -> None:
    events = [
        user(id=1, turn="t1"),
        assistant(calls=[call("a"), call("b"), call("c")], id=2, turn="t1"),
        result("a", id=3, turn="t1"),
        result("c", id=4, turn="t1"),
    ]
    [issue] = inspect_tool_protocol(events)
    assert (issue.session_id, issue.turn_id, issue.event_id) == ("s", "t1", 2)
    assert [c.id for c in issue.tool_calls] == ["b"]


def test_later_group_reusing_call_id_does_not_close_earlier_one() -> None:
    events = [
        assistant(calls=[call("x")], id=1),
        user(id=2),
        assistant(calls=[call("x")], id=3),
        result("x", id=4),
    ]
    [issue] = inspect_tool_protocol(events)
    assert issue.event_id == 1
    assert [c.id for c in issue.tool_calls] == ["x"]


def test_result_from_another_turn_does_not_match() -> None:
    events = [assistant(calls=[call("a")], id=1, turn="t1"), result("a", id=2, turn="t2")]
    [issue] = inspect_tool_protocol(events)
    assert issue.event_id == 1


def test_tool_event_of_another_turn_is_skipped_without_ending_the_scan() -> None:
    events = [
        assistant(calls=[call("a"), call("b")], id=1, turn="t1"),
        result("a", id=2, turn="t2"),
        result("a", id=3, turn="t1"),
        result("b", id=4, turn="t1"),
    ]
    assert inspect_tool_protocol(events) == []


def test_duplicate_call_ids_are_matched_first_unmatched_first() -> None:
    events = [
        assistant(calls=[call("a", n=1), call("a", n=2), call("b")], id=1),
        result("a", id=2),
        result("a", id=3),
        result("a", id=4),  # extra duplicate: ignored
        result("zzz", id=5),  # unknown: ignored
    ]
    [issue] = inspect_tool_protocol(events)
    assert [c.id for c in issue.tool_calls] == ["b"]

    events = [assistant(calls=[call("a", n=1), call("a", n=2)], id=1), result("a", id=2)]
    [issue] = inspect_tool_protocol(events)
    assert [c.arguments for c in issue.tool_calls] == [{"n": 2}]


def test_several_issues_returned_in_order_and_validation_raises_for_first() -> None:
    events = [
        user(id=1, turn="t1"),
        assistant(calls=[call("a")], id=2, turn="t1"),
        user(id=3, turn="t2"),
        assistant(calls=[call("b"), call("c")], id=4, turn="t2"),
        result("c", id=5, turn="t2"),
    ]
    issues = inspect_tool_protocol(events)
    assert [(i.event_id, [c.id for c in i.tool_calls]) for i in issues] == [
        (2, ["a"]),
        (4, ["b"]),
    ]
    with pytest.raises(ToolExecutionUnknownError) as caught:
        validate_tool_protocol(events)
    error = caught.value
    assert (error.session_id, error.turn_id, error.event_id, error.call_ids) == (
        "s",
        "t1",
        2,
        ["a"],
    )
    failure = error.turn_failure()
    assert (failure.code, failure.stage) == ("tool_execution_unknown", "tool")
    assert failure.message  # fixed, safe text of ours


def test_inspection_does_not_mutate_input() -> None:
    events = [assistant(calls=[call("a")], id=1)]
    before = [e.model_dump() for e in events]
    inspect_tool_protocol(events)
    assert [e.model_dump() for e in events] == before


def test_orphan_results_are_every_result_that_answers_no_call() -> None:
    from agentops.runtime.protocol import inspect_orphan_results

    events = [
        user(id=1, turn="t1"),
        result("x", id=2, turn="t1"),  # no call before it
        assistant(calls=[call("a")], id=3, turn="t1"),
        result("a", id=4, turn="t1"),
        result("a", id=5, turn="t1"),  # duplicate
        result("zzz", id=6, turn="t1"),  # unknown id
        assistant(calls=[call("b")], id=7, turn="t1"),
        result("b", id=8, turn="t2"),  # another turn
    ]
    orphans = inspect_orphan_results(events)
    assert [(o.event_id, o.call_id, o.position) for o in orphans] == [
        (2, "x", 1),
        (5, "a", 4),
        (6, "zzz", 5),
        (8, "b", 7),
    ]
    # The dangling-call verdicts are unchanged: only the call of event 7 is unanswered.
    assert [issue.event_id for issue in inspect_tool_protocol(events)] == [7]


def test_all_calls_answered_has_no_orphan() -> None:
    from agentops.runtime.protocol import inspect_orphan_results

    events = [user(id=1), assistant(calls=[call("a")], id=2), result("a", id=3)]
    assert inspect_orphan_results(events) == []
