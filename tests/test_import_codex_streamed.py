"""A large Codex CLI rollout is imported while it is parsed (`ingest.codex_stream`) and
stores exactly the rows the whole-session path stores; the events it holds at once stay
bounded by a batch, whatever the file's size; the rollouts the whole parse refuses are
refused the same way, with nothing stored."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sessions_app.ingest import codex_stream, import_file
from sessions_app.ingest.errors import ImportRefusedError
from sessions_app.ingest.streamed import BATCH_EVENTS, SessionStream
from sessions_app.models import Event, ImportedFile, Session
from tests.test_import_streamed import STREAMED, WHOLE, _both_ways, _same

pytestmark = pytest.mark.django_db

SID = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"


def _item(kind: str, **payload: Any) -> dict[str, Any]:
    return {"type": kind, "payload": payload}


def _message(role: str, text: str, kind: str = "input_text") -> dict[str, Any]:
    content = [{"type": kind, "text": text}]
    return _item("response_item", type="message", role=role, content=content)


def _call(call_id: str, name: str = "shell", **extra: Any) -> dict[str, Any]:
    arguments = json.dumps({"command": ["bash", "-lc", f"ls {call_id}"]})
    return _item(
        "response_item", type="function_call", name=name, arguments=arguments, call_id=call_id
    )


def _output(call_id: str, output: str, kind: str = "function_call_output") -> dict[str, Any]:
    return _item("response_item", type=kind, call_id=call_id, output=output)


def _tokens(n: int) -> dict[str, Any]:
    usage = {"input_tokens": 100 + n, "output_tokens": 20, "total_tokens": 120 + n}
    return _item("event_msg", type="token_count", info={"last_token_usage": usage})


def _large_rollout(path: Path, turns: int) -> None:
    """A rollout with every shape the Codex parser and the turn rule look at: context and
    developer messages, reasoning, parallel calls joining an assistant message, custom
    and local shell calls, results a turn later or never, update_plan, token counts
    (some not numbers), turn_aborted, compactions (both shapes), session_meta records
    that do not count, lines without a time, bad lines, a credential, a NUL, and
    reasoning left at the end."""
    records: list[dict[str, Any] | str] = [
        _item("session_meta"),  # an empty one: the first that says something counts
        _item("session_meta", id=SID, timestamp="2026-02-01T00:00:00Z", cwd="/work"),
        _message("user", "<environment_context>\n  <cwd>/work</cwd>\n</environment_context>"),
        _message("developer", "be careful"),
    ]
    for n in range(turns):
        records.append(_item("turn_context", cwd="/work", model=f"gpt-5-codex-{n // 100}"))
        prompt = f"## My request for Codex:\nquestion {n}"
        if n == 7:
            prompt += " token ghp_" + "a1B2" * 9
        records.append(_message("user", prompt))
        records.append(_item("event_msg", type="user_message", message=prompt))
        records.append(
            _tokens(n)
            if n % 31 != 6
            else _item(
                "event_msg", type="token_count", info={"last_token_usage": {"input_tokens": "x"}}
            )
        )
        records.append(
            _item("response_item", type="reasoning", summary=[{"type": "t", "text": f"r{n}"}])
        )
        records.append(_message("assistant", f"looking at {n}", "output_text"))
        records.append(_call(f"c{n}a"))  # joins the assistant message: parallel calls
        records.append(_call(f"c{n}b"))
        if n % 5 == 2:
            records.append(
                _item(
                    "response_item",
                    type="custom_tool_call",
                    name="apply_patch",
                    input="*** Begin Patch",
                    call_id=f"p{n}",
                )
            )
            records.append(_output(f"p{n}", "done", "custom_tool_call_output"))
        if n % 7 == 3:
            records.append(_item("response_item", type="local_shell_call", call_id=f"l{n}",
                                 action={"command": ["pwd"]}))  # fmt: skip
            records.append(_output(f"l{n}", "/work", "local_shell_call_output"))
        records.append(_output(f"c{n}a", f"out {n}\u0000" if n == 11 else f"out {n}"))
        if n % 9 != 4:  # sometimes the second call is answered a turn later, or never
            records.append(_output(f"c{n}b", json.dumps({"output": f"ok {n}", "exit": 0})))
        elif n % 2 == 0 and n > 0:
            records.append(_output(f"c{n - 9}b", "late"))
        if n % 17 == 3:
            plan = {"plan": [{"step": f"step {n}", "status": "pending"}]}
            records.append(
                _item(
                    "response_item",
                    type="function_call",
                    name="update_plan",
                    arguments=json.dumps(plan),
                    call_id=f"plan{n}",
                )
            )
            records.append(_output(f"plan{n}", "Plan updated"))
        if n % 29 == 8:
            records.append(_item("event_msg", type="turn_aborted", reason="interrupted"))
        if n == 60:
            records.append(_item("compacted", message="Summary: step 59 is pending"))
        if n == 200:  # newer Codex: the history it goes on from
            history = [{"type": "message", "role": "user", "content": "question 199"}]
            records.append(_item("compacted", message="", replacement_history=history))
            records.append(_item("session_meta", id="another-id"))  # not the first: ignored
        if n % 43 == 10:
            records.append("{not json")
            records.append(_item("response_item"))  # no payload object: skipped
            records[-1].pop("payload")  # type: ignore[union-attr]
        records.append(_tokens(n))
        records.append(_message("assistant", f"done {n}", "output_text"))
    records.append(_call("dangling"))  # the rollout ends inside a call
    records.append(
        _item("response_item", type="reasoning", summary=[{"type": "t", "text": "last"}])
    )
    start = datetime(2026, 2, 1, tzinfo=UTC)
    with path.open("w", encoding="utf-8") as out:
        for n, record in enumerate(records):
            if isinstance(record, dict) and n % 50 != 25:  # a few lines have no time
                record["timestamp"] = (start + timedelta(seconds=n)).isoformat()
            out.write((record if isinstance(record, str) else json.dumps(record)) + "\n")


@pytest.fixture
def handed_on(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The events held after each hand-over of a streamed import (none: not streamed)."""
    held: list[int] = []
    monkeypatch.setattr(SessionStream, "watch", staticmethod(held.append))
    return held


@pytest.mark.parametrize("batch", [BATCH_EVENTS, 1, 5])
def test_a_streamed_rollout_stores_the_rows_the_whole_session_path_stores(
    tmp_path: Path,
    settings: Any,
    handed_on: list[int],
    monkeypatch: pytest.MonkeyPatch,
    batch: int,
) -> None:
    # Small batches cut the rollout everywhere: after a message its calls join, too.
    monkeypatch.setattr(codex_stream, "BATCH_EVENTS", batch)
    path = tmp_path / "rollout-big.jsonl"
    _large_rollout(path, 400)
    whole, streamed, whole_rows, streamed_rows = _both_ways(path, settings)
    assert len(handed_on) > 2  # it streamed, in batches
    assert streamed.stats == whole.stats
    assert streamed.problems == whole.problems
    assert streamed.session_ids == whole.session_ids == [SID]
    assert streamed.source_format == whole.source_format == "codex_cli"
    _same(streamed_rows, whole_rows, path)
    # The shapes were there: open calls, problems, a redaction, a todo list, a model.
    session = whole_rows[SID]
    assert session["session"]["protocol_issue_count"] > 0
    assert session["session"]["model"] == "gpt-5-codex-3"
    assert session["session"]["title"] == "question 0"
    assert whole.stats["unanswered_calls"] > 0 and whole.stats["events"] > 2 * BATCH_EVENTS
    assert {p.reason for p in whole.problems} >= {"token counts are not numbers"}
    assert "ghp_" not in json.dumps(session["export"])
    assert {t["status"] for t in session["turns"]} >= {"completed", "interrupted"}
    assert session["items"]


def test_every_corpus_codex_rollout_streams_to_the_same_rows(
    corpus: Path, settings: Any, handed_on: list[int]
) -> None:
    files = sorted((corpus / "codex-cli").rglob("*.jsonl"))
    assert files
    for path in files:
        handed_on.clear()
        whole, streamed, whole_rows, streamed_rows = _both_ways(path, settings)
        assert handed_on, path  # it streamed
        assert (streamed.stats, streamed.problems) == (whole.stats, whole.problems), path
        assert whole.stats["events"] > 0
        _same(streamed_rows, whole_rows, path)
        Session.objects.all().delete()
        ImportedFile.objects.all().delete()


def test_a_streamed_rollout_holds_a_bounded_number_of_events_at_once(
    tmp_path: Path, settings: Any, handed_on: list[int]
) -> None:
    settings.AGENTOPS_IMPORT_STREAM_BYTES = STREAMED
    held = handed_on
    for turns in (300, 1500):
        path = tmp_path / f"rollout-{turns}.jsonl"
        _large_rollout(path, turns)
        held.clear()
        report = import_file(path)
        assert report.stats["events"] > 5 * BATCH_EVENTS or turns == 300
        # Right after each hand-over, only the last event stays held (calls may join it).
        assert held and max(held) <= 1, (turns, max(held))
        Session.objects.all().delete()


def _refusal(path: Path, settings: Any) -> tuple[str, str]:
    reasons = []
    for size in (WHOLE, STREAMED):
        settings.AGENTOPS_IMPORT_STREAM_BYTES = size
        with pytest.raises(ImportRefusedError) as refused:
            import_file(path)
        reasons.append(str(refused.value))
        assert not Session.objects.exists() and not Event.objects.exists()
        assert not ImportedFile.objects.exists()
    return reasons[0], reasons[1]


def test_rollouts_the_whole_parse_refuses_are_refused_alike(tmp_path: Path, settings: Any) -> None:
    no_conversation = tmp_path / "rollout-empty.jsonl"
    lines = [_item("session_meta", id=SID), _item("event_msg", type="user_message", message="hi")]
    no_conversation.write_text("".join(json.dumps(r) + "\n" for r in lines))
    whole, streamed = _refusal(no_conversation, settings)
    assert whole == streamed and "no response_item record" in whole

    bad_id = tmp_path / "rollout-bad-id.jsonl"
    lines = [_item("session_meta", id="a/b?c"), _message("user", "hi")]
    bad_id.write_text("".join(json.dumps(r) + "\n" for r in lines))
    whole, streamed = _refusal(bad_id, settings)
    assert whole == streamed

    # A value the parser cannot read, far into the file (a type that is a list): the
    # first reading finds it, so the whole parse refuses it, with its reason and line.
    late = tmp_path / "rollout-late-bad-value.jsonl"
    _large_rollout(late, 400)
    with late.open("a", encoding="utf-8") as out:
        out.write(json.dumps(_item("response_item", type=["function_call"])) + "\n")
    whole, streamed = _refusal(late, settings)
    assert whole == streamed and "unhashable" in whole

    # --strict with skipped lines: refused before anything is written, both ways.
    strict = tmp_path / "rollout-strict.jsonl"
    _large_rollout(strict, 20)
    for size in (WHOLE, STREAMED):
        settings.AGENTOPS_IMPORT_STREAM_BYTES = size
        assert import_file(strict, strict=True).status == "refused"
        assert not Session.objects.exists()


def test_an_existing_session_without_replace_takes_the_whole_path(
    tmp_path: Path, settings: Any
) -> None:
    path = tmp_path / "rollout-twice.jsonl"
    _large_rollout(path, 50)
    settings.AGENTOPS_IMPORT_STREAM_BYTES = STREAMED
    first = import_file(path)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(_message("user", "one more")) + "\n")
    second = import_file(path)  # a changed version of the file: replaces its session
    assert second.replaced == first.session_ids == [SID]
    assert second.stats["events"] == first.stats["events"] + 1
    assert Event.objects.filter(session_id=SID).count() == second.stats["events"]
