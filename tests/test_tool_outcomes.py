"""Recording the outcome of an unknown tool execution (issue: operators and admins, item 3).

A completed turn with an unanswered call makes the next run fail closed; an admin records
"did not run"; the context page then projects, the next run goes ahead, and the stored
events are byte-for-byte unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agentops.runtime import Runner, ToolExecutionUnknownError
from agentops.runtime.model import Content, Event, Role
from sessions_app import models
from sessions_app.models import ToolOutcome
from sessions_app.projector import ProductProjector
from sessions_app.store import DjangoSessionService, refresh_resume_status

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def _session_with_dangling_call() -> models.Event:
    session = models.Session.objects.create(
        id="s-dangle", app_name="ops", user_id="u", created_at=T0, updated_at=T0
    )
    models.Turn.objects.create(
        id="t-1", session=session, status="completed", started_at=T0, finished_at=T0
    )
    models.Event.objects.create(
        session=session, turn_id="t-1", role="user", author="user", text="deploy it",
        created_at=T0, updated_at=T0,
    )  # fmt: skip
    call = models.Event.objects.create(
        session=session, turn_id="t-1", role="assistant", author="agent", created_at=T0,
        updated_at=T0, tool_calls=[{"id": "call-deploy", "name": "deploy", "arguments": {}}],
    )  # fmt: skip
    refresh_resume_status(session.id)
    return call


def _stored_rows() -> list[Mapping[str, Any]]:
    return list(models.Event.objects.filter(turn_id="t-1").order_by("id").values())


async def _echo_agent(context: list[Event]) -> AsyncIterator[Event]:
    yield Event(author="agent", content=Content(role=Role.ASSISTANT, text=f"saw {len(context)}"))


def _run_once() -> list[Event]:
    async def run() -> list[Event]:
        runner = Runner(_echo_agent, DjangoSessionService(), projector=ProductProjector())
        return [event async for event in runner.run("s-dangle", "status?")]

    return asyncio.run(run())


@pytest.mark.django_db(transaction=True)
def test_did_not_run_outcome_lets_the_session_resume_without_rewriting_history(
    admin_client: Client,
) -> None:
    call = _session_with_dangling_call()
    before = _stored_rows()
    with pytest.raises(ToolExecutionUnknownError) as refused:
        _run_once()
    assert [c.id for c in refused.value.tool_calls] == ["call-deploy"]
    assert models.Session.objects.get(pk="s-dangle").cannot_resume

    response = admin_client.post(
        reverse("sessions:tool_outcome_create", args=["s-dangle"]),
        {"event_id": call.id, "call_id": "call-deploy", "outcome": "did_not_run",
         "reason": "deploy log shows no run at 09:00"},
    )  # fmt: skip
    assert response.status_code == 302
    record = ToolOutcome.objects.get()
    assert record.recorded_by is not None
    assert (record.outcome, record.recorded_by.username) == ("did_not_run", "ada-admin")
    session = models.Session.objects.get(pk="s-dangle")
    assert (session.cannot_resume, session.protocol_issue_count) == (False, 0)

    context = admin_client.get(reverse("sessions:context", args=["s-dangle"])).content.decode()
    assert "Projection fails" not in context
    assert "recorded outcome" in context and "deploy log shows no run" in context

    yielded = _run_once()
    # the agent saw: user + assistant + synthetic outcome (not stored) + the new user message
    assert [e.content.text for e in yielded] == ["saw 4"] and yielded[0].id > 0
    assert _stored_rows() == before
    assert models.Turn.objects.filter(session_id="s-dangle", status="completed").count() == 2


@pytest.mark.django_db
def test_ran_outcome_gives_the_recorded_result_to_the_projection(admin_client: Client) -> None:
    call = _session_with_dangling_call()
    admin_client.post(
        reverse("sessions:tool_outcome_create", args=["s-dangle"]),
        {"event_id": call.id, "call_id": "call-deploy", "outcome": "ran",
         "result": '{"deployed": "v2.4"}', "reason": "release page lists v2.4"},
    )  # fmt: skip
    assert ToolOutcome.objects.get().result == {"deployed": "v2.4"}
    page = admin_client.get(reverse("sessions:protocol", args=["s-dangle"])).content.decode()
    assert "Ran, with this result" in page and "release page lists v2.4" in page
    assert "closed by recorded outcomes" in page


@pytest.mark.django_db
def test_outcome_for_an_answered_or_unknown_call_is_refused(admin_client: Client) -> None:
    call = _session_with_dangling_call()
    url = reverse("sessions:tool_outcome_create", args=["s-dangle"])
    for data in (
        {"event_id": call.id, "call_id": "nope", "outcome": "did_not_run", "reason": "x"},
        {"event_id": call.id, "call_id": "call-deploy", "outcome": "did_not_run", "reason": " "},
        {"event_id": call.id, "call_id": "call-deploy", "outcome": "maybe", "reason": "x"},
    ):
        response = admin_client.post(url, data, follow=True)
        assert "Not recorded:" in response.content.decode()
    assert not ToolOutcome.objects.exists()
    ok = {"event_id": call.id, "call_id": "call-deploy", "outcome": "did_not_run", "reason": "x"}
    admin_client.post(url, ok)
    again = admin_client.post(url, ok, follow=True).content.decode()
    assert "is not an unanswered tool call" in again or "already recorded" in again
    assert ToolOutcome.objects.count() == 1


@pytest.mark.django_db
def test_operator_sees_no_form_and_gets_403(operator_client: Client) -> None:
    call = _session_with_dangling_call()
    page = operator_client.get(reverse("sessions:protocol", args=["s-dangle"])).content.decode()
    assert "Record what happened" not in page
    response = operator_client.post(
        reverse("sessions:tool_outcome_create", args=["s-dangle"]),
        {"event_id": call.id, "call_id": "call-deploy", "outcome": "did_not_run", "reason": "x"},
    )
    assert response.status_code == 403
    assert not ToolOutcome.objects.exists()


@pytest.mark.django_db
def test_outsider_gets_404(outsider_client: Client) -> None:
    _session_with_dangling_call()
    url = reverse("sessions:tool_outcome_create", args=["s-dangle"])
    assert outsider_client.post(url, {}).status_code == 404


@pytest.mark.django_db
def test_get_is_not_allowed(admin_client: Client) -> None:
    _session_with_dangling_call()
    url = reverse("sessions:tool_outcome_create", args=["s-dangle"])
    assert admin_client.get(url).status_code == 405


@pytest.mark.django_db
def test_ran_without_a_result_is_refused(admin_client: Client) -> None:
    call = _session_with_dangling_call()
    response = admin_client.post(
        reverse("sessions:tool_outcome_create", args=["s-dangle"]),
        {"event_id": call.id, "call_id": "call-deploy", "outcome": "ran", "result": "",
         "reason": "it ran"},
        follow=True,
    )  # fmt: skip
    assert "needs the result the tool returned" in response.content.decode()
    assert not ToolOutcome.objects.exists()
