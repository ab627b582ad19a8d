"""A real producer: Claude Code 2.1.197's own log events and beta trace spans, captured
from real headless runs (``claude -p``) against a fake Anthropic API and replayed from
``tests/otlp/fixtures/claude_code_2.1.197_*`` (how they were made:
``tests/otlp/fixtures/README.md``).

The fake API answers a prompt with a text and a ``Bash`` tool call, and the tool's result
with a text answer, with usage on each; a prompt saying FAILTOOL gets ``exit 3`` (the tool
fails), one saying APIERROR an HTTP 529 (twice: ``CLAUDE_CODE_MAX_RETRIES=1``). With
traces on (``..._traces.json`` / ``..._logs.json``):

- session ``S1``: two prompts, the second a ``--resume`` of the first ("Please run echo
  hello", "Now run echo hello once more");
- session ``FAIL``: one prompt whose tool fails ("Please run the check FAILTOOL");
- session ``API``: one prompt whose model request fails ("Please run echo hello
  APIERROR").

Also: the same without content variables (``..._nocontent_*``), logs without traces
(``..._logs_only.json``: a session of two prompts, the second failing its tool, and one
whose request fails) and one run sent as protobuf (``..._traces.pb`` / ``..._logs.pb``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessions_app import models
from tests.otlp.captured import session_turns
from tests.otlp.conftest import OtlpPoster
from tests.otlp.rows import EventRow, event_rows
from tests.test_redaction_shapes import database_text

FIXTURES = Path(__file__).parent / "fixtures"
V = "claude_code_2.1.197"
TRACES, LOGS = f"{V}_traces.json", f"{V}_logs.json"
S1 = "0d8ca38d-66d4-4c99-8464-c61676e8ab32"
FAIL = "b4c1b913-d6df-4012-8e5b-2444f264c3a9"
API = "9ccf34ba-4f73-46b0-a586-5c9c3018fe04"
#: The trace of each prompt (its ``claude_code.interaction`` span's), which its records name.
S1_TRACES = ("ce8e24cc4578e53391d3f0cce5537c78", "c91910787444992f65f9ff0966e86a3e")
FAIL_TRACE, API_TRACE = "59084bde2e5dfe1b8a1b67f9498271a0", "d74069200192be7999872509f1c31e1b"
#: The raw error texts Claude Code sends (``error`` attributes, span status messages).
API_ERROR_TEXT = "the-fake-overloaded-text-q93"
TOOL_ERROR_TEXT = "Shell command failed"
MODEL = "claude-opus-4-8"  # the API's; Claude Code's spans say "claude-opus-4-8[1m]"
HELLO = "The command printed: hello."
#: Each request's cache reads and writes (300 + 20): counted in its input tokens, as
#: Anthropic's input_tokens (116, ...) leave them out.
CACHE = 320
ECHO = {"command": "echo hello", "description": "Run a harmless command"}


def _post(poster: OtlpPoster, fixture: str, content_type: str = "application/json") -> None:
    path = "/v1/traces" if "traces" in fixture else "/v1/logs"
    response = poster.post((FIXTURES / fixture).read_bytes(), content_type, path=path)
    assert response.status_code == 200, response.content
    assert response.content in (b"{}", b"")  # no partial success: every span and record kept


def _rows(turn: models.Turn) -> list[EventRow]:
    return event_rows(turn_id=turn.id)


def _events(turn: models.Turn, **lookup: Any) -> list[models.Event]:
    return list(models.Event.objects.filter(turn_id=turn.id, **lookup).order_by("id"))


def _usages(turn: models.Turn) -> list[tuple[Any, ...]]:
    """Each model request's (input tokens with the cache's, output, cached, cache creation
    tokens, model, cost)."""
    return [
        (u["prompt_tokens"], u["completion_tokens"], u["details"]["cached_input_tokens"],
         u["details"]["cache_creation_input_tokens"], u["details"]["model"],
         u["details"].get("cost_usd"))
        for e in _events(turn, usage__isnull=False) if (u := e.usage)
    ]  # fmt: skip


def _results(turn: models.Turn) -> list[dict[str, Any] | None]:
    return [e.tool_response for e in _events(turn, role="tool")]


def _assert_sessions_and_turns(*, with_text: bool) -> None:
    """What the traced runs land, from both signals or (`with_text` False) spans alone."""
    answer, running = ("Running it.", HELLO) if with_text else ("", "")
    session = models.Session.objects.get(pk=S1)  # Claude Code's session.id
    assert (session.app_name, session.title, session.model) == (
        "claude-code",
        "Please run echo hello",
        MODEL,
    )
    assert session.state["otlp"] == {"content_captured": True}
    assert (session.tokens_input, session.tokens_output) == (
        116 + 117 + 118 + 118 + 4 * CACHE,
        21 + 9 + 21 + 9,
    )
    assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)
    assert not session.cannot_resume
    first, second = session_turns(S1)  # one per prompt, named by its trace
    assert [(t.id, t.status) for t in (first, second)] == [
        (f"{S1}/{S1_TRACES[0]}", "completed"),
        (f"{S1}/{S1_TRACES[1]}", "completed"),
    ]
    for turn, prompt, call_id in (
        (first, "Please run echo hello", "toolu_fake0001"),
        (second, "Now run echo hello once more", "toolu_fake0006"),
    ):
        # The call is on the response that made it, answered by its result, then the answer.
        assert _rows(turn) == [
            ("user", prompt, [], ""),
            ("assistant", answer, [call_id], ""),
            ("tool", "", [], call_id),
            ("assistant", running, [], ""),
        ]
        assert _results(turn) == [
            {"tool_call_id": call_id, "name": "Bash", "result": {"content_captured": False}}
        ]
    # The interaction span's times: the turn from the prompt to Claude Code's last answer.
    assert first.finished_at is not None
    assert (first.finished_at - first.started_at).total_seconds() == pytest.approx(0.235, abs=1e-3)
    (failed_tool,) = session_turns(FAIL)
    assert (failed_tool.id, failed_tool.status) == (f"{FAIL}/{FAIL_TRACE}", "completed")
    answer_failed = "The check failed (exit code 3)." if with_text else ""
    assert _rows(failed_tool) == [
        ("user", "Please run the check FAILTOOL", [], ""),
        ("assistant", answer, ["toolu_fake0001"], ""),
        ("tool", "", [], "toolu_fake0001"),
        ("assistant", answer_failed, [], ""),
    ]
    # Claude Code gives the error to the model and goes on: the turn completes.
    code = "shell_error" if with_text else "tool_error"  # the spans name no error type
    assert _results(failed_tool) == [
        {"tool_call_id": "toolu_fake0001", "name": "Bash", "error": code}
    ]
    (failed_api,) = session_turns(API)
    assert (failed_api.id, failed_api.status, failed_api.failure_code) == (
        f"{API}/{API_TRACE}",
        "failed",
        "http_529",
    )
    assert (failed_api.failure_stage, failed_api.failure_message) == ("provider", "")
    assert _rows(failed_api) == [("user", "Please run echo hello APIERROR", [], "")]
    assert API_ERROR_TEXT not in database_text()
    assert TOOL_ERROR_TEXT not in database_text()


@pytest.mark.parametrize("order", [(TRACES, LOGS), (LOGS, TRACES)], ids=["traces", "logs"])
def test_claude_code_traces_and_logs_land_in_one_turn_per_prompt(
    poster: OtlpPoster, order: tuple[str, str]
) -> None:
    for fixture in order:
        _post(poster, fixture)
    _assert_sessions_and_turns(with_text=True)


def test_claude_code_each_fact_lands_once_from_both_signals(poster: OtlpPoster) -> None:
    _post(poster, LOGS)
    (turn,) = session_turns(FAIL)
    from_logs = _rows(turn)
    assert turn.status == "running"  # its records name a trace: they wait for its root span
    _post(poster, TRACES)
    turn.refresh_from_db()
    assert (turn.status, _rows(turn)) == ("completed", from_logs)
    assert models.Event.objects.count() == 4 + 4 + 4 + 1
    _post(poster, LOGS)  # an exporter's retry: stored once
    _post(poster, TRACES)
    assert models.Event.objects.count() == 4 + 4 + 4 + 1


def test_claude_code_usage_cost_model_and_what_the_spans_add(poster: OtlpPoster) -> None:
    _post(poster, TRACES)
    _post(poster, LOGS)
    first, second = session_turns(S1)
    assert _usages(first) == [
        (116 + CACHE, 21, 300, 20, MODEL, pytest.approx(0.00138)),
        (117 + CACHE, 9, 300, 20, MODEL, pytest.approx(0.001085)),
    ]
    assert _usages(second) == [
        (118 + CACHE, 21, 300, 20, MODEL, pytest.approx(0.00139)),
        (118 + CACHE, 9, 300, 20, MODEL, pytest.approx(0.00109)),
    ]
    calling, answering = _events(first, usage__isnull=False)
    # api_request's duration; the llm_request span's time to first token.
    assert (calling.usage or {})["details"]["duration_ms"] == 38
    assert (calling.usage or {})["details"]["ttft_ms"] == 16
    assert (calling.finish_reason, answering.finish_reason) == ("tool_calls", "stop")
    # The model's input (tool_result's tool_input), not Claude Code's summary of it.
    assert calling.tool_calls == [{"id": "toolu_fake0001", "name": "Bash", "arguments": ECHO}]
    assert models.Session.objects.get(pk=API).model == MODEL


def test_claude_code_spans_alone_land_prompts_calls_results_and_usage(
    poster: OtlpPoster,
) -> None:
    _post(poster, TRACES)
    _assert_sessions_and_turns(with_text=False)
    first, _ = session_turns(S1)
    assert _usages(first) == [
        (116 + CACHE, 21, 300, 20, MODEL, None),
        (117 + CACHE, 9, 300, 20, MODEL, None),
    ]
    (call,) = [e for e in _events(first) if e.tool_calls]
    assert call.tool_calls[0]["arguments"] == {"full_command": "echo hello"}  # the span's


def test_claude_code_logs_without_traces(poster: OtlpPoster) -> None:
    _post(poster, f"{V}_logs_only.json")
    session_id = "427b2e33-c707-4dad-ab7a-9715a83892c9"
    session = models.Session.objects.get(pk=session_id)
    assert (session.title, session.model) == ("Please run echo hello (logs only)", MODEL)
    assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)
    first, second = session_turns(session_id)  # one per prompt.id
    assert [(t.id, t.status) for t in (first, second)] == [
        (f"{session_id}/e7ac9d76-0318-4b84-8997-e273972d76e8", "completed"),
        (f"{session_id}/023fb5b1-773b-418e-bf95-f61fcad5077d", "completed"),
    ]
    assert _rows(first) == [
        ("user", "Please run echo hello (logs only)", [], ""),
        ("assistant", "Running it.", ["toolu_fake0016"], ""),
        ("tool", "", [], "toolu_fake0016"),
        ("assistant", HELLO, [], ""),
    ]
    assert _rows(second) == [
        ("user", "And once more FAILTOOL", [], ""),
        ("assistant", "Running it.", ["toolu_fake0021"], ""),
        ("tool", "", [], "toolu_fake0021"),
        ("assistant", "The check failed (exit code 3).", [], ""),
    ]
    assert _results(second) == [
        {"tool_call_id": "toolu_fake0021", "name": "Bash", "error": "shell_error"}
    ]
    assert _usages(first) == [
        (116 + CACHE, 21, 300, 20, MODEL, pytest.approx(0.00138)),
        (117 + CACHE, 9, 300, 20, MODEL, pytest.approx(0.001085)),
    ]
    (failed,) = session_turns("1a3d19c0-a24c-4b36-86c6-3209e8647d78")
    assert (failed.id, failed.status, failed.failure_code, failed.failure_stage) == (
        "1a3d19c0-a24c-4b36-86c6-3209e8647d78/5b31974d-8189-40ce-84bd-d03d0c92eabc",
        "failed",
        "http_529",
        "provider",
    )
    assert API_ERROR_TEXT not in database_text()


@pytest.mark.parametrize("traces_first", [True, False], ids=["traces", "logs"])
def test_claude_code_without_content(poster: OtlpPoster, traces_first: bool) -> None:
    fixtures = [f"{V}_nocontent_traces.json", f"{V}_nocontent_logs.json"]
    for fixture in fixtures if traces_first else fixtures[::-1]:
        _post(poster, fixture)
    session_id = "42e82356-eaec-4c94-998c-b4ea57507144"
    session = models.Session.objects.get(pk=session_id)
    assert (session.title, session.model) == ("", MODEL)
    assert session.state["otlp"] == {"content_captured": False}
    (turn,) = session_turns(session_id)
    assert (turn.status, "message content was not captured" in turn.status_note) == (
        "completed",
        True,
    )
    assert _rows(turn) == [
        ("assistant", "", ["toolu_fake0011"], ""),
        ("tool", "", [], "toolu_fake0011"),
        ("assistant", "", [], ""),
    ]
    (call,) = [e for e in _events(turn) if e.tool_calls]
    assert call.tool_calls == [{"id": "toolu_fake0011", "name": "Bash", "arguments": {}}]
    assert _usages(turn) == [
        (116 + CACHE, 21, 300, 20, MODEL, pytest.approx(0.00138)),
        (117 + CACHE, 9, 300, 20, MODEL, pytest.approx(0.001085)),
    ]


def test_claude_code_protobuf_bodies(poster: OtlpPoster) -> None:
    _post(poster, f"{V}_logs.pb", "application/x-protobuf")
    _post(poster, f"{V}_traces.pb", "application/x-protobuf")
    session_id = "39462ba4-596f-4179-b12c-7841672472fa"
    (turn,) = session_turns(session_id)
    assert (turn.id, turn.status) == (f"{session_id}/f6bd60920aa0c0a89d7ab792ea82d474", "completed")
    assert _rows(turn) == [
        ("user", "Please run echo hello (protobuf)", [], ""),
        ("assistant", "Running it.", ["toolu_fake0006"], ""),
        ("tool", "", [], "toolu_fake0006"),
        ("assistant", HELLO, [], ""),
    ]
    assert models.Session.objects.get(pk=session_id).model == MODEL


def test_claude_code_raw_error_text_is_stored_nowhere(poster: OtlpPoster) -> None:
    sent = (FIXTURES / TRACES).read_text() + (FIXTURES / LOGS).read_text()
    # Claude Code sends them: the spans' and records' `error`, the spans' status message.
    assert API_ERROR_TEXT in sent and TOOL_ERROR_TEXT in sent
    assert json.loads((FIXTURES / TRACES).read_text())["resourceSpans"]
    for fixture in (TRACES, LOGS, f"{V}_logs_only.json"):
        _post(poster, fixture)
    stored = database_text()
    assert API_ERROR_TEXT not in stored and TOOL_ERROR_TEXT not in stored


@pytest.mark.parametrize("traces_first", [True, False], ids=["traces", "logs"])
def test_claude_code_side_request_is_counted_once(poster: OtlpPoster, traces_first: bool) -> None:
    # CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC unset: Claude Code first asks the model for
    # the session's title; that request's span is in the prompt's trace, its records
    # (query_source generate_session_title) have no trace context and no prompt.id.
    fixtures = [f"{V}_side_traces.json", f"{V}_side_logs.json"]
    for fixture in fixtures if traces_first else fixtures[::-1]:
        _post(poster, fixture)
    session_id = "9e85ea0c-3b95-47a1-bd78-d01021391f18"
    session = models.Session.objects.get(pk=session_id)
    assert (session.tokens_input, session.tokens_output) == (
        100 + 116 + 117 + 3 * CACHE,
        3 + 21 + 9,
    )
    (prompt,) = session_turns(session_id)  # the title request is the prompt's, not a turn
    assert prompt.id == f"{session_id}/dd7a1d2c9eff61a46acda2159acc19fb"
    # The title request (sent just before the prompt) lands once, as its usage alone: its
    # text, the title, is not the assistant's answer.
    assert _rows(prompt) == [
        ("assistant", "", [], ""),
        ("user", "Side requests check: run echo hello", [], ""),
        ("assistant", "Running it.", ["toolu_fake0045"], ""),
        ("tool", "", [], "toolu_fake0045"),
        ("assistant", HELLO, [], ""),
    ]
    assert _usages(prompt)[0] == (100 + CACHE, 3, 300, 20, MODEL, pytest.approx(0.00085))
    assert not models.Event.objects.filter(text__contains="Fake topic").exists()


@pytest.mark.parametrize("traces_first", [True, False], ids=["traces", "logs"])
def test_claude_code_steps_parallel_calls_and_a_refused_tool(
    poster: OtlpPoster, traces_first: bool
) -> None:
    fixtures = [f"{V}_steps_traces.json", f"{V}_steps_logs.json"]
    for fixture in fixtures if traces_first else fixtures[::-1]:
        _post(poster, fixture)
    (steps,) = session_turns("742a05e8-30f6-49cd-a506-dd0099e54ccd")  # two tool steps
    assert _rows(steps) == [
        ("user", "Please run two steps TWOSTEPS", [], ""),
        ("assistant", "Running it.", ["toolu_fake0001"], ""),
        ("tool", "", [], "toolu_fake0001"),
        ("assistant", "One more.", ["toolu_fake0004"], ""),
        ("tool", "", [], "toolu_fake0004"),
        ("assistant", HELLO, [], ""),
    ]
    assert len(_usages(steps)) == 3
    (parallel,) = session_turns("62dcb4a4-ab3d-45b4-83e3-0d9cb1fa9502")  # two calls in one response
    assert _rows(parallel) == [
        ("user", "Please run both PARALLEL", [], ""),
        ("assistant", "Running both.", ["toolu_fake0009", "toolu_fake0010"], ""),
        ("tool", "", [], "toolu_fake0009"),
        ("tool", "", [], "toolu_fake0010"),
        ("assistant", HELLO, [], ""),
    ]
    # Without --allowedTools a command that writes is refused (-p asks no one). Claude Code
    # sends no tool_decision nor tool_result for it: the tool span and its
    # blocked_on_user child (decision "reject") give the call and its refusal.
    session_id = "a833266e-f338-4225-80b9-540f998cce64"
    (refused,) = session_turns(session_id)
    assert _rows(refused) == [
        ("user", "Please make a file REJECT", [], ""),
        ("assistant", "Running it.", ["toolu_fake0001"], ""),
        ("tool", "", [], "toolu_fake0001"),
        ("assistant", "The check failed (exit code 3).", [], ""),
    ]
    assert _results(refused) == [
        {"tool_call_id": "toolu_fake0001", "name": "Bash", "error": "tool_rejected"}
    ]
    for session in models.Session.objects.all():
        assert (session.protocol_issue_count, session.orphan_result_count) == (0, 0)
