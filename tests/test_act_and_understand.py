"""Operators act and understand: decisions on calls awaiting a person, outcomes beside their
calls on the timeline, plain-word labels, the composer only where the agent may run, an
honest context page, argument previews and readable tool output."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from django.test import Client
from django.urls import reverse

from agentops.runtime import Runner
from agentops.runtime.failures import GENERIC_FAILURE_CODES
from agentops.runtime.model import Content, Event, Role
from agentops.runtime.session import FailureStage, TurnReason, TurnStatus
from sessions_app import models
from sessions_app.labels import CODES, REASONS, STAGES, STATUSES, label_for
from sessions_app.outcomes import OutcomeRejectedError, record_tool_outcome
from sessions_app.pages.calls import argument_preview, output_text, state_changes
from sessions_app.projector import ProductProjector
from sessions_app.store import DjangoSessionService, refresh_resume_status
from tests.factories import make_session

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def _pending_session(source: str = "runtime", pending: bool = True) -> models.Event:
    session = models.Session.objects.create(
        id="s-wait", app_name="ops", user_id="u", created_at=T0, updated_at=T0,
        source_format=source,
    )  # fmt: skip
    models.Turn.objects.create(
        id="t-1", session=session, status="completed", started_at=T0, finished_at=T0
    )
    models.Event.objects.create(
        session=session, turn_id="t-1", role="user", author="user", text="refund it",
        created_at=T0, updated_at=T0,
    )  # fmt: skip
    call = models.Event.objects.create(
        session=session, turn_id="t-1", role="assistant", author="agent", created_at=T0,
        updated_at=T0, pending_call_ids=["call-refund"] if pending else [],
        tool_calls=[{"id": "call-refund", "name": "refund", "arguments": {"order": "88231"}}],
    )  # fmt: skip
    refresh_resume_status(session.id)
    return call


def _decide(client: Client, call: models.Event, outcome: str, **extra: str) -> str:
    response = client.post(
        reverse("sessions:tool_outcome_create", args=["s-wait"]),
        {"event_id": call.id, "call_id": "call-refund", "outcome": outcome, **extra},
    )
    assert response.status_code == 302
    return str(response["Location"])


def _events_html(client: Client) -> str:
    return client.get(
        reverse("sessions:turn_events", args=["s-wait", "t-1"]), headers={"HX-Request": "true"}
    ).content.decode()


def _run_once() -> list[Event]:
    async def agent(context: list[Event]):  # type: ignore[no-untyped-def]
        yield Event(author="agent", content=Content(role=Role.ASSISTANT, text=f"{len(context)}"))

    async def run() -> list[Event]:
        runner = Runner(agent, DjangoSessionService(), projector=ProductProjector())
        return [event async for event in runner.run("s-wait", "go on")]

    return asyncio.run(run())


@pytest.mark.django_db(transaction=True)
def test_an_admin_approves_a_pending_call_from_the_timeline_and_the_next_turn_runs(
    admin_client: Client,
) -> None:
    # An imported session: the decision is only recorded, and a runner of its own goes on
    # (the dashboard's agent continuing its own session: tests/live/test_approve_continues.py).
    call = _pending_session(source="openai_agents")
    html = _events_html(admin_client)
    assert "awaiting the user" in html and 'value="approved"' in html
    assert "nothing continues here" in html
    location = _decide(admin_client, call, "approved", reason="go ahead", return_to="timeline")
    assert location.endswith(f"/sessions/s-wait/#event-{call.id}")
    record = models.ToolOutcome.objects.get()
    assert (record.outcome, record.reason, record.recorded_by) == (
        "approved", "go ahead", models.ToolOutcome.objects.get().recorded_by
    )  # fmt: skip
    html = _events_html(admin_client)
    assert 'id="outcome-' in html and "Approved" in html and "admin" in html
    assert "no result" not in html and 'value="approved"' not in html
    assert models.Session.objects.get(pk="s-wait").cannot_resume is False
    context = admin_client.get(reverse("sessions:context", args=["s-wait"])).content.decode()
    assert "recorded tool outcome" in context
    events = _run_once()
    assert events[-1].content.text  # the agent ran: the decision closed the call
    assert models.Turn.objects.filter(session_id="s-wait").count() == 2


def test_a_rejection_reaches_the_context_as_an_error_result(admin_client: Client) -> None:
    call = _pending_session(source="openai_agents")
    _decide(admin_client, call, "rejected", reason="wrong account")
    context = admin_client.get(reverse("sessions:context", args=["s-wait"])).content.decode()
    assert "The person rejected this tool call" in context and "wrong account" in context


def test_a_decision_needs_a_call_awaiting_a_person_and_an_admin(
    admin_client: Client, operator_client: Client
) -> None:
    call = _pending_session(pending=False)
    with pytest.raises(OutcomeRejectedError, match="does not await a person"):
        record_tool_outcome(
            call.session, event_id=call.id, call_id="call-refund", outcome="approved",
            result=None, reason="", user=None,
        )  # fmt: skip
    response = operator_client.post(
        reverse("sessions:tool_outcome_create", args=["s-wait"]),
        {"event_id": call.id, "call_id": "call-refund", "outcome": "approved"},
    )
    assert response.status_code == 403
    assert not models.ToolOutcome.objects.exists()
    # An unanswered call that awaits no one: no Approve form, a "no result" frame.
    html = _events_html(admin_client)
    assert "no result" in html and 'value="approved"' not in html


def test_a_recorded_outcome_shows_beside_its_call_on_the_timeline(admin_client: Client) -> None:
    call = _pending_session(pending=False)
    admin_client.post(
        reverse("sessions:tool_outcome_create", args=["s-wait"]),
        {"event_id": call.id, "call_id": "call-refund", "outcome": "did_not_run",
         "reason": "the payment API was down"},
    )  # fmt: skip
    html = _events_html(admin_client)
    assert "did not run (recorded)" in html and "the payment API was down" in html
    assert "is-unanswered" not in html


def test_every_runtime_word_has_a_plain_label() -> None:
    for status in TurnStatus:
        assert STATUSES[status].text and STATUSES[status].help
    for reason in TurnReason:
        assert reason in REASONS
    for stage in FailureStage:
        assert STAGES[stage].text
    for code in [*GENERIC_FAILURE_CODES.values(), "execution_error", "tool_execution_unknown"]:
        assert CODES[code].text and CODES[code].text != code
    assert label_for("code", "my_custom.code").text == "My custom code"


def test_pages_show_labels_not_raw_words(admin_client: Client) -> None:
    _pending_session()
    models.Turn.objects.filter(pk="t-1").update(status="interrupted", reason="consumer_stopped")
    page = admin_client.get(reverse("sessions:detail", args=["s-wait"])).content.decode()
    assert ">Reader stopped</a>" in page and 'title="Whoever read' in page
    assert ">consumer_stopped<" not in page
    assert 'href="/docs/concepts.md#turn-reasons"' in page


def test_the_composer_is_offered_only_where_the_agent_may_run(admin_client: Client) -> None:
    _pending_session(source="claude_code")
    page = admin_client.get(reverse("sessions:detail", args=["s-wait"])).content.decode()
    assert 'id="run-form"' not in page and "agent only runs sessions it created" in page
    response = admin_client.post(
        reverse("sessions:run_turn", args=["s-wait"]), {"message": "please keep me"}
    )
    assert response.status_code == 302
    assert models.Turn.objects.count() == 1  # nothing ran
    page = admin_client.get(reverse("sessions:detail", args=["s-wait"])).content.decode()
    assert "<pre>please keep me</pre>" in page  # shown once, not lost
    # A runtime session that cannot resume: refused, the text offered again in the form
    # once the session may run (post/redirect/get).
    models.Session.objects.filter(pk="s-wait").update(source_format="runtime")
    admin_client.post(reverse("sessions:run_turn", args=["s-wait"]), {"message": "again"})
    assert models.Turn.objects.count() == 1
    models.Session.objects.filter(pk="s-wait").update(cannot_resume=False)
    page = admin_client.get(reverse("sessions:detail", args=["s-wait"])).content.decode()
    assert ">again</textarea>" in page


def test_htmx_refusal_answers_409_so_the_form_keeps_its_text(admin_client: Client) -> None:
    _pending_session()
    response = admin_client.post(
        reverse("sessions:run_turn", args=["s-wait"]),
        {"message": "hi"},
        headers={"HX-Request": "true"},
    )
    assert (
        response.status_code == 409
        and b"Approve or reject a call awaiting a person" in response.content
    )


def test_a_failing_projection_says_no_entry_would_be_sent(admin_client: Client) -> None:
    _pending_session(pending=False)
    page = admin_client.get(reverse("sessions:context", args=["s-wait"])).content.decode()
    assert "would not be sent: the run refuses this history" in page
    rows = page.split('<ol class="projection">')[1]
    assert ">sent<" not in rows and rows.count("would not be sent: the run refuses") == 2


def test_the_context_page_estimates_tokens_and_marks_new_entries(admin_client: Client) -> None:
    _pending_session(pending=False)
    session = models.Session.objects.get(pk="s-wait")
    later = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
    models.Turn.objects.create(
        id="t-2", session=session, status="completed", started_at=later, finished_at=later
    )
    models.Event.objects.create(
        session=session, turn_id="t-2", role="user", author="user", text="x" * 400,
        created_at=later, updated_at=later,
    )  # fmt: skip
    admin_client.post(
        reverse("sessions:tool_outcome_create", args=["s-wait"]),
        {"event_id": models.Event.objects.get(role="assistant").id, "call_id": "call-refund",
         "outcome": "did_not_run", "reason": "down"},
    )  # fmt: skip
    page = admin_client.get(reverse("sessions:context", args=["s-wait"])).content.decode()
    assert "≈ characters ÷ 4 (no tokenizer installed)" in page
    assert page.count('class="badge kind-new"') == 2  # the legend and the one new entry
    assert "1 entry new since the latest turn" in page
    assert '<strong id="total-tokens">' in page


def test_argument_previews_and_command_output() -> None:
    assert argument_preview({"command": ["bash", "-lc", "ls -la src"]}) == "ls -la src"
    assert argument_preview('{"file_path": "/a/b.py", "x": 1}') == "/a/b.py"
    assert argument_preview({"other": "first string"}) == "first string"
    assert len(argument_preview({"query": "q" * 500})) == 100
    assert argument_preview({"n": 1}) == ""
    wrapped = '{"output":"a\\nb\\n","metadata":{"exit_code":0}}'
    assert output_text(wrapped) == 'a\nb\n\n\n{"metadata": {"exit_code": 0}}'
    assert output_text('"line 1\\nline 2"') == "line 1\nline 2"
    assert output_text("plain") is None and output_text({"a": 1}) is None
    assert [(c.key, c.value) for c in state_changes({"cart": [1], "gone": None})] == [
        ("cart", "[\n  1\n]"),
        ("gone", "null"),
    ]


def test_the_live_demo_keeps_a_bounded_history() -> None:
    from datetime import timedelta

    from sessions_app.live.demo_live import ensure_demo_live_session, prune_demo_turns

    ensure_demo_live_session("demo-x")
    for n in range(6):
        at = T0 + timedelta(minutes=n)
        status = "running" if n == 5 else "completed"
        models.Turn.objects.create(id=f"d-{n}", session_id="demo-x", status=status, started_at=at)
        models.Event.objects.create(
            session_id="demo-x", turn_id=f"d-{n}", role="user", author="user", text=str(n),
            created_at=at, updated_at=at,
        )  # fmt: skip
    assert prune_demo_turns("demo-x", keep=3) == 3
    assert sorted(models.Turn.objects.values_list("id", flat=True)) == ["d-3", "d-4", "d-5"]
    assert models.Event.objects.filter(session_id="demo-x").count() == 3
    assert prune_demo_turns("demo-x", keep=3) == 0


def test_a_stopped_turn_leaves_its_streaming_text_with_a_note() -> None:
    from sessions_app.live import render

    opened = render.partial_frame(
        {"turn_id": "t-9", "delta": "Half a sent", "role": "assistant"}, 3, opens=True
    )
    assert 'id="stream-state-t-9"' in opened
    turn = {
        "id": "t-9", "session_id": "s-1", "status": "interrupted", "reason": "canceled",
        "started_at": T0.isoformat(), "finished_at": T0.isoformat(), "session_turn_count": 1,
        "failure_code": "", "failure_stage": "", "failure_message": "", "status_note": "",
        "stopped_by": "ada (page)", "event_count": 0,
    }  # fmt: skip
    frame = render.turn_frame(turn, 3)
    assert "cut by the stop: this text was not stored" in frame
    assert 'id="live-stream-t-9" hx-swap-oob="true"></div>' not in frame  # not cleared


def test_todo_history_marks_what_a_change_did() -> None:
    from todos_app.templatetags.todos import todo_diff

    before = [{"content": "a", "status": "pending"}, {"content": "b", "status": "pending"}]
    after = [{"content": "a", "status": "completed"}, {"content": "c", "status": "pending"}]
    diff = todo_diff(before, after)
    assert [row["mark"] for row in diff["before"]] == ["", "removed"]
    assert [row["mark"] for row in diff["after"]] == ["changed", "added"]


def test_list_and_todo_panel_show_plain_words(admin_client: Client) -> None:
    _pending_session()
    models.Turn.objects.filter(pk="t-1").update(status="interrupted", reason="consumer_stopped")
    listing = admin_client.get(reverse("sessions:list")).content.decode()
    assert 'data-word="interrupted">Stopped early</a>' in listing
    assert '<option value="interrupted" >Stopped early</option>' in listing
    assert ">interrupted<" not in listing
    make_session("s-todo", todos=[{"content": "Fix it", "status": "in_progress"}])
    panel = admin_client.get(reverse("todos:page", args=["s-todo"])).content.decode()
    assert 'data-word="in_progress">In progress</span>' in panel
    assert '<option value="in_progress" selected>In progress</option>' in panel
    assert ">in_progress<" not in panel


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("runtime", "the agent's turn continues at once with the decisions"),
        ("openai_agents", "the dashboard's agent does not run this session"),
    ],
)
def test_the_context_page_says_what_a_decision_will_start(
    admin_client: Client, source: str, said: str
) -> None:
    _pending_session(source=source)
    page = admin_client.get(reverse("sessions:context", args=["s-wait"])).content.decode()
    assert "Awaiting the user" in page and said in page
