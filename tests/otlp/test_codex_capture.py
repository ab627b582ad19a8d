"""A real producer: OpenAI's Codex CLI 0.171.0, its own OTLP log exports captured from
real runs against a fake OpenAI Responses API and replayed from
``tests/otlp/fixtures/codex_0.171.0_*`` (how they were made:
``tests/otlp/fixtures/README.md``).

Codex sends log records only (no trace context, no turn id): each names its conversation
(``conversation.id``). The fake model asks for the ``exec_command`` tool once per turn,
then answers in text (which Codex does not export). The runs:

- ``echo_1`` + ``echo_2``: ``codex exec "Run echo hello ..."`` (one turn, its records cut
  across two exports by Codex's batch exporter, the tool's result in the second);
  ``resume_1`` + ``resume_2``: ``codex exec resume <id> "Run echo hello once more."``,
  a second turn of the same conversation;
- ``exit3_1`` + ``exit3_2``: a command that exits with code 3 (Codex's tool succeeded:
  the command ran; its output ends ``Process exited with code 3``);
- ``tool_error``: a call whose arguments the tool cannot parse (``success`` false, the
  output is Codex's error message, which must not be stored);
- ``tui_api_error``: the interactive CLI with the fake API answering HTTP 400 (``codex
  exec`` exits on that error without exporting its records); the CLI's own title request
  is a conversation of its own;
- ``nocontent``: ``log_user_prompt = false`` (the prompt sent as ``[REDACTED]``);
- ``echo.pb``: an echo run exported with ``protocol = "binary"``;
- ``traced_1`` + ``traced_2``: an echo run with a ``trace_exporter`` set too, which puts
  Codex's own tracing's ids on some records;
- ``tui_retries_1`` .. ``_4``: the interactive CLI with ``request_max_retries`` and
  ``stream_max_retries`` 1: a prompt answered HTTP 500 every time, then a prompt whose
  stream ends in ``response.failed``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessions_app import models
from sessions_app.otlp import codex_events
from sessions_app.otlp.models import OtlpSpan
from tests.otlp.captured import session_turns
from tests.otlp.conftest import OtlpPoster
from tests.otlp.rows import event_rows
from tests.test_redaction_shapes import database_text

FIXTURES = Path(__file__).parent / "fixtures"
V = "codex_0.171.0"
MODEL = "fake-codex-model"
ECHO = "Run echo hello and tell me what it printed."


def _records(*names: str) -> list[dict[str, Any]]:
    """The fixtures' log records in order, each with its attributes as ``attrs``."""
    found = []
    for name in names:
        document = json.loads((FIXTURES / f"{V}_{name}.json").read_text())
        for resource in document["resourceLogs"]:
            for scope in resource["scopeLogs"]:
                for record in scope["logRecords"]:
                    attrs = {
                        a["key"]: next(iter(a["value"].values()), None)
                        for a in record.get("attributes", [])
                    }
                    found.append({**record, "attrs": attrs})
    return found


def _only(names: tuple[str, ...], event: str, key: str) -> list[Any]:
    return [r["attrs"][key] for r in _records(*names) if r["attrs"].get("event.name") == event]


def _conversation(*names: str) -> str:
    (found,) = set(_only(names, "codex.conversation_starts", "conversation.id"))
    return str(found)


def _land(poster: OtlpPoster, *names: str) -> None:
    for name in names:
        response = poster.post(
            (FIXTURES / f"{V}_{name}.json").read_bytes(), "application/json", path="/v1/logs"
        )
        assert response.status_code == 200, response.content
        assert json.loads(response.content) == {}  # no partial success


def _events(turn: models.Turn) -> list[models.Event]:
    return list(models.Event.objects.filter(turn_id=turn.id).order_by("id"))


def _usages(turn: models.Turn) -> list[tuple[int, int, dict[str, Any]]]:
    return [
        (e.usage["prompt_tokens"], e.usage["completion_tokens"], e.usage["details"])
        for e in _events(turn)
        if e.usage
    ]


def _usage(input_tokens: int, output_tokens: int, duration: int) -> tuple[int, int, Any]:
    """What the fake API sent: 200 cached and 5 reasoning tokens on every response."""
    details = {
        "model": MODEL,
        "cached_input_tokens": 200,
        "cache_creation_input_tokens": 0,
        "reasoning_output_tokens": 5,
        "duration_ms": duration,
    }
    return input_tokens, output_tokens, details


def _sent_usage(*names: str) -> list[tuple[int, int, Any]]:
    """Each model call's tokens as Codex sent them (``codex.sse_event`` of
    ``response.completed``), with the duration of the ``codex.api_request`` before it."""
    found, took = [], 0
    for record in _records(*names):
        attrs = record["attrs"]
        if attrs.get("event.name") == "codex.api_request":
            took = int(attrs["duration_ms"])
        elif attrs.get("event.name") == "codex.sse_event" and "input_token_count" in attrs:
            found.append(
                _usage(int(attrs["input_token_count"]), int(attrs["output_token_count"]), took)
            )
    return found


def _call_ids(*names: str) -> list[str]:
    return [str(i) for i in _only(names, "codex.tool_result", "call_id")]


def test_codex_runs_land_as_one_session_with_a_turn_per_prompt(poster: OtlpPoster) -> None:
    _land(poster, "echo_1", "echo_2", "resume_1", "resume_2")
    conversation = _conversation("echo_1", "echo_2")
    assert _conversation("resume_1", "resume_2") == conversation  # the resumed session
    first, second = _call_ids("echo_1", "echo_2") + _call_ids("resume_1", "resume_2")

    session = models.Session.objects.get(pk=conversation)
    assert (session.app_name, session.title, session.model) == ("codex_exec", ECHO, MODEL)
    assert session.state["otlp"] == {"content_captured": True}
    usage = _sent_usage("echo_1", "echo_2", "resume_1", "resume_2")
    assert len(usage) == 4  # two model calls a turn
    assert session.tokens_input == sum(u[0] for u in usage)
    assert session.tokens_output == sum(u[1] for u in usage)
    assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)

    prompts = _only(("echo_1", "resume_1"), "codex.user_prompt", "event.timestamp")
    turns = session_turns(conversation)  # one per prompt, keyed by the prompt's time
    keys = [p.replace("-", "").replace(":", "") for p in prompts]
    assert [(t.id, t.status, t.failure_code) for t in turns] == [
        (f"{conversation}/{keys[0]}", "completed", ""),
        (f"{conversation}/{keys[1]}", "completed", ""),
    ]
    for turn, prompt, call_id, tokens in (
        (turns[0], ECHO, first, usage[:2]),
        (turns[1], "Run echo hello once more.", second, usage[2:]),
    ):
        # The prompt, the first model call's usage, its tool call, the tool's result (the
        # command's output) and the second model call's usage (Codex exports no answer).
        assert event_rows(turn_id=turn.id) == [
            ("user", prompt, [], ""),
            ("assistant", "", [], ""),
            ("assistant", "", [call_id], ""),
            ("tool", "", [], call_id),
            ("assistant", "", [], ""),
        ]
        user, _, call, result, _ = _events(turn)
        assert call.tool_calls == [
            {"id": call_id, "name": "exec_command", "arguments": {"cmd": "echo hello"}}
        ]
        assert result.tool_response is not None
        assert result.tool_response["name"] == "exec_command"
        output = result.tool_response["result"]
        assert "Process exited with code 0" in output and output.endswith("Output:\nhello\n")
        assert _usages(turn) == tokens
        assert call.author == "codex_exec"  # resource service.name
        assert user.created_at < call.created_at < result.created_at


def test_codex_turn_cut_across_exports_keeps_its_call_and_result_together(
    poster: OtlpPoster,
) -> None:
    first = _records("echo_1")
    names = [r["attrs"].get("event.name") for r in first]
    assert "codex.tool_decision" in names and "codex.tool_result" not in names
    _land(poster, "echo_1")
    conversation = _conversation("echo_1")
    (turn,) = session_turns(conversation)
    (call_id,) = _call_ids("echo_2")
    assert [row[:3] for row in event_rows(turn_id=turn.id)] == [
        ("user", ECHO, []),
        ("assistant", "", []),
        ("assistant", "", [call_id]),  # the decision: the call, its arguments not yet sent
    ]
    _land(poster, "echo_2")
    assert [t.id for t in session_turns(conversation)] == [turn.id]  # the same turn
    rows = event_rows(turn_id=turn.id)
    assert [row for row in rows if row[2] or row[3]] == [
        ("assistant", "", [call_id], ""),
        ("tool", "", [], call_id),
    ]
    call = models.Event.objects.get(turn_id=turn.id, role="assistant", tool_calls__0__id=call_id)
    assert call.tool_calls[0]["arguments"] == {"cmd": "echo hello"}
    assert models.Session.objects.get(pk=conversation).protocol_issue_count == 0


def test_codex_command_exiting_3_is_answered_by_its_exit_code(poster: OtlpPoster) -> None:
    _land(poster, "exit3_1", "exit3_2")
    conversation = _conversation("exit3_1", "exit3_2")
    (call_id,) = _call_ids("exit3_1", "exit3_2")
    (success,) = _only(("exit3_1", "exit3_2"), "codex.tool_result", "success")
    assert success == "true"  # Codex's tool ran; the command failed
    (turn,) = session_turns(conversation)
    assert (turn.status, turn.failure_code) == ("completed", "")  # the model answered after
    assert event_rows(turn_id=turn.id) == [
        ("user", "Run a command that will fail: exit 3.", [], ""),
        ("assistant", "", [], ""),
        ("assistant", "", [call_id], ""),
        ("tool", "", [], call_id),
        ("assistant", "", [], ""),
    ]
    _, _, call, result, _ = _events(turn)
    assert call.tool_calls[0]["arguments"] == {"cmd": "exit 3"}
    assert result.tool_response == {
        "tool_call_id": call_id,
        "name": "exec_command",
        "error": "exit_code_3",
    }
    assert _usages(turn) == _sent_usage("exit3_1", "exit3_2")
    # The failed command's output is not kept.
    kept = OtlpSpan.objects.filter(name="codex.tool_result").get()
    assert "output" not in kept.attributes
    assert kept.attributes[codex_events.EXIT_KEY] == 3


def test_codex_failed_tool_is_answered_by_its_error_and_its_text_is_not_stored(
    poster: OtlpPoster,
) -> None:
    (message,) = _only(("tool_error",), "codex.tool_result", "output")
    assert message.startswith("failed to parse function arguments")
    _land(poster, "tool_error")
    conversation = _conversation("tool_error")
    (call_id,) = _call_ids("tool_error")
    (turn,) = session_turns(conversation)
    assert (turn.status, turn.failure_code, turn.failure_stage) == ("completed", "", "")
    rows = event_rows(turn_id=turn.id)
    assert rows[2:4] == [("assistant", "", [call_id], ""), ("tool", "", [], call_id)]
    _, _, call, result, _ = _events(turn)
    assert call.tool_calls[0]["arguments"] == {"command": "echo hello"}
    assert result.tool_response == {
        "tool_call_id": call_id,
        "name": "exec_command",
        "error": "tool_error",
    }
    text = database_text()
    assert "failed to parse function arguments" not in text
    assert "missing field" not in text


def test_codex_api_error_fails_the_turn_at_stage_provider(poster: OtlpPoster) -> None:
    records = _records("tui_api_error")
    failing = next(r for r in records if r["attrs"].get("http.response.status_code") == "400")
    assert failing["attrs"]["error.message"] == "http 400"
    conversation = failing["attrs"]["conversation.id"]
    _land(poster, "tui_api_error")

    (turn,) = session_turns(conversation)
    assert (turn.status, turn.reason, turn.failure_code, turn.failure_stage) == (
        "failed",
        "agent_error",
        "http_400",
        "provider",
    )
    assert turn.failure_message == ""
    assert event_rows(turn_id=turn.id) == [("user", "Ask for a provider-error now.", [], "")]
    session = models.Session.objects.get(pk=conversation)
    assert (session.app_name, session.title) == (
        "codex-app-server",
        "Ask for a provider-error now.",
    )
    # The CLI's title request: a conversation of its own, completed, with its usage.
    (other,) = models.Session.objects.exclude(pk=conversation)
    (title_turn,) = session_turns(other.pk)
    assert title_turn.status == "completed"
    assert [e.role for e in _events(title_turn)] == ["user", "assistant"]
    assert other.tokens_input > 0
    text = database_text()
    assert "http 400" not in text  # error.message
    assert "the-fake-provider-error-text-qx93" not in text  # the API's own (Codex sends none)


def test_codex_without_prompt_logging_lands_calls_and_says_content_not_captured(
    poster: OtlpPoster,
) -> None:
    assert _only(("nocontent",), "codex.user_prompt", "prompt") == ["[REDACTED]"]
    _land(poster, "nocontent")
    conversation = _conversation("nocontent")
    (call_id,) = _call_ids("nocontent")
    session = models.Session.objects.get(pk=conversation)
    assert session.title == ""
    assert session.state["otlp"] == {"content_captured": False}
    (turn,) = session_turns(conversation)
    assert turn.status == "completed"
    assert turn.status_note.endswith("message content was not captured")
    assert event_rows(turn_id=turn.id) == [
        ("assistant", "", [], ""),
        ("assistant", "", [call_id], ""),
        ("tool", "", [], call_id),
        ("assistant", "", [], ""),
    ]
    assert _usages(turn) == _sent_usage("nocontent")
    assert ECHO not in database_text()  # the run's prompt, which Codex did not send


def test_codex_binary_export_lands_as_the_json_one(poster: OtlpPoster) -> None:
    response = poster.post((FIXTURES / f"{V}_echo.pb").read_bytes(), path="/v1/logs")
    assert response.status_code == 200, response.content
    (session,) = models.Session.objects.all()
    assert (session.app_name, session.title, session.model) == ("codex_exec", ECHO, MODEL)
    (turn,) = session_turns(session.pk)
    rows = event_rows(turn_id=turn.id)
    assert [(role, text, len(calls), bool(answered)) for role, text, calls, answered in rows] == [
        ("user", ECHO, 0, False),
        ("assistant", "", 0, False),
        ("assistant", "", 1, False),
        ("tool", "", 0, True),
        ("assistant", "", 0, False),
    ]
    assert rows[2][2] == [rows[3][3]]


def test_codex_streamed_deltas_are_not_kept_and_a_resent_export_is_stored_once(
    poster: OtlpPoster,
) -> None:
    _land(poster, "echo_1", "echo_2")
    kinds = sorted(OtlpSpan.objects.values_list("name", flat=True))
    assert kinds == [
        "codex.api_request",
        "codex.api_request",
        "codex.sse_event",
        "codex.sse_event",
        "codex.tool_decision",
        "codex.tool_result",
        "codex.user_prompt",
    ]
    before = (OtlpSpan.objects.count(), models.Event.objects.count())
    _land(poster, "echo_1", "echo_2")  # the exporter's retry
    assert (OtlpSpan.objects.count(), models.Event.objects.count()) == before


def test_codex_records_with_trace_context_still_land_in_their_prompts_turn(
    poster: OtlpPoster,
) -> None:
    # With a `trace_exporter` set, Codex puts its own tracing's ids on some records.
    records = _records("traced_1", "traced_2")
    traced = {r["attrs"]["event.name"] for r in records if (r.get("traceId") or "").strip("0")}
    assert {"codex.tool_decision", "codex.tool_result"} <= traced
    _land(poster, "traced_1", "traced_2")
    conversation = _conversation("traced_1", "traced_2")
    (call_id,) = _call_ids("traced_1", "traced_2")
    assert list(models.Session.objects.values_list("pk", flat=True)) == [conversation]
    (turn,) = session_turns(conversation)
    assert event_rows(turn_id=turn.id) == [
        ("user", ECHO, [], ""),
        ("assistant", "", [], ""),
        ("assistant", "", [call_id], ""),
        ("tool", "", [], call_id),
        ("assistant", "", [], ""),
    ]
    assert _usages(turn) == _sent_usage("traced_1", "traced_2")


RETRIES = ("tui_retries_1", "tui_retries_2", "tui_retries_3", "tui_retries_4")


def test_codex_retried_server_error_and_failed_stream_fail_their_turns(
    poster: OtlpPoster,
) -> None:
    records = _records(*RETRIES)
    prompts = [r for r in records if r["attrs"].get("event.name") == "codex.user_prompt"]
    conversation = prompts[0]["attrs"]["conversation.id"]
    mine = [r["attrs"] for r in records if r["attrs"].get("conversation.id") == conversation]
    statuses = [
        (a["http.response.status_code"], a["attempt"])
        for a in mine
        if a.get("event.name") == "codex.api_request"
    ]
    # request_max_retries = 1 (two attempts), and the CLI retried the turn once more;
    # then the stream failure's request and its retry (stream_max_retries = 1).
    failed = [("500", "0"), ("500", "1"), ("500", "0"), ("500", "1")]
    assert statuses == [*failed, ("200", "0"), ("200", "0")]
    messages = [a["error.message"] for a in mine if "error.message" in a]
    assert any("the-fake-stream-error-text-hm58" in m for m in messages)
    _land(poster, *RETRIES)

    turns = session_turns(conversation)
    assert [(t.status, t.reason, t.failure_code, t.failure_stage) for t in turns] == [
        ("failed", "agent_error", "http_500", "provider"),
        ("failed", "agent_error", "api_error", "provider"),
    ]
    assert [event_rows(turn_id=t.id) for t in turns] == [
        [("user", "Ask for a server-error now.", [], "")],
        [("user", "Ask for a stream-failure now.", [], "")],
    ]
    assert all(t.failure_message == "" for t in turns)
    text = database_text()
    for message in messages:
        assert message not in text
    assert "the-fake-stream-error-text-hm58" not in text
    assert "stream disconnected" not in text


def _denied(name: str) -> bytes:
    """The fixture with its ``codex.tool_decision`` saying ``denied`` (not captured: a
    real run's decision, changed)."""
    document = json.loads((FIXTURES / f"{V}_{name}.json").read_text())
    for resource in document["resourceLogs"]:
        for scope in resource["scopeLogs"]:
            for record in scope["logRecords"]:
                for attribute in record.get("attributes", []):
                    if attribute["key"] == "decision":
                        attribute["value"] = {"stringValue": "denied"}
    return json.dumps(document).encode()


@pytest.mark.parametrize("with_result", [False, True])
def test_codex_denied_tool_call_is_answered_once_by_its_rejection(
    poster: OtlpPoster, with_result: bool
) -> None:
    response = poster.post(_denied("echo_1"), "application/json", path="/v1/logs")
    assert response.status_code == 200, response.content
    if with_result:  # a result that came all the same answers nothing more
        _land(poster, "echo_2")
    conversation = _conversation("echo_1")
    (call_id,) = _call_ids("echo_2")
    (turn,) = session_turns(conversation)
    answers = [e.tool_response for e in _events(turn) if e.role == "tool"]
    assert answers == [{"tool_call_id": call_id, "name": "exec_command", "error": "tool_rejected"}]
    assert models.Session.objects.get(pk=conversation).protocol_issue_count == 0
