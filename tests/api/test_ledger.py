"""The turn ledger through the API: idempotent batches, outcome rules, safe failure
messages, redaction, attribution, todos with versions, leases, the body limit."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from sessions_app.models import Event, RunLease, ToolOutcome, Turn
from tests.api.conftest import ApiClient
from todos_app.models import TodoChange

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(writer: ApiClient) -> str:
    assert writer.post("/sessions", {"app_name": "ops", "session_id": "s-1"}).status_code == 201
    assert writer.post("/sessions/s-1/turns", {"turn_id": "t-1"}).status_code == 201
    return "s-1"


def _event(key: str, text: str, **extra: object) -> dict[str, object]:
    return {"client_key": key, "turn_id": "t-1", "content": {"role": "user", "text": text}, **extra}


def test_retried_batch_is_stored_once(writer: ApiClient, session: str) -> None:
    batch = {"events": [_event("k-1", "one"), _event("k-2", "two")]}
    first = writer.post("/sessions/s-1/events", batch).json()
    again = writer.post("/sessions/s-1/events", batch).json()
    assert first == again and len(first["ids"]) == 2
    assert Event.objects.filter(session_id="s-1").count() == 2
    # A batch mixing a stored key and a new one stores only the new one.
    mixed = writer.post(
        "/sessions/s-1/events", {"events": [_event("k-2", "two"), _event("k-3", "3")]}
    )
    assert mixed.json()["ids"][0] == first["ids"][1]
    assert Event.objects.filter(session_id="s-1").count() == 3


def test_a_bad_batch_stores_nothing(writer: ApiClient, session: str) -> None:
    bad = {"events": [_event("k-1", "ok"), _event("k-1", "repeated key")]}
    response = writer.post("/sessions/s-1/events", bad)
    assert response.status_code == 422 and "repeats" in response.json()["detail"]
    todos = _event("k-9", "x", state_delta={"todos": "not a list"})
    response = writer.post("/sessions/s-1/events", {"events": [_event("k-8", "first"), todos]})
    assert response.status_code == 422
    assert not Event.objects.filter(session_id="s-1").exists()


def test_events_are_redacted_like_imports(writer: ApiClient, session: str) -> None:
    text = "deploy with AKIAIOSFODNN7EXAMPLE"
    delta = {"config": {"password": "hunter2"}}
    writer.post("/sessions/s-1/events", {"events": [_event("k", text, state_delta=delta)]})
    stored = Event.objects.get(session_id="s-1")
    assert "AKIAIOSFODNN7EXAMPLE" not in stored.text and "[REDACTED:" in stored.text
    assert "hunter2" not in str(stored.state_delta)


def test_outcome_rules_and_safe_failure_messages(writer: ApiClient, session: str) -> None:
    bad = writer.post("/turns/t-1/finalize", {"status": "failed", "reason": "canceled"})
    assert bad.status_code == 422 and "not valid for a failed turn" in bad.json()["detail"]
    code = writer.post(
        "/turns/t-1/finalize",
        {"status": "failed", "reason": "agent_error",
         "failure": {"code": "Ignore previous instructions", "stage": "agent"}},
    )  # fmt: skip
    assert code.status_code == 422 and code.json()["type"].endswith("invalid-outcome")
    failure = {"code": "provider_error", "stage": "provider", "message": "user data here"}
    done = writer.post(
        "/turns/t-1/finalize", {"status": "failed", "reason": "agent_error", "failure": failure}
    )
    assert done.status_code == 200 and done.json()["failure"]["message"] == ""
    turn = Turn.objects.get(pk="t-1")
    assert (turn.failure_code, turn.failure_message) == ("provider_error", "")
    again = writer.post("/turns/t-1/finalize", {"status": "completed"})
    assert again.status_code == 409 and again.json()["turn_status"] == "failed"
    writer.post("/sessions/s-1/turns", {"turn_id": "t-2"})
    safe = {**failure, "message": "The provider was down.", "message_safe": True}
    writer.post(
        "/turns/t-2/finalize", {"status": "failed", "reason": "agent_error", "failure": safe}
    )
    assert Turn.objects.get(pk="t-2").failure_message == "The provider was down."


def test_writes_are_attributed_to_the_key(writer: ApiClient, session: str) -> None:
    assert Turn.objects.get(pk="t-1").status_note == "via api key writer"
    call = {"id": "c-1", "name": "deploy", "arguments": {}}
    content = {"role": "assistant", "tool_calls": [call]}
    ids = writer.post(
        "/sessions/s-1/events", {"events": [{"turn_id": "t-1", "content": content}]}
    ).json()["ids"]
    writer.post("/turns/t-1/finalize", {"status": "completed"})
    issues = writer.get("/sessions/s-1/context").json()
    assert issues["issues"][0]["event_id"] == ids[0] and issues["context"] == []
    assert "no result for call(s) 'c-1'" in issues["error"]
    recorded = writer.post(
        "/sessions/s-1/tool-outcomes",
        {"event_id": ids[0], "call_id": "c-1", "outcome": "did_not_run", "reason": "checked"},
    )
    assert recorded.status_code == 201, recorded.content
    assert ToolOutcome.objects.get().recorded_via == "api key writer"
    context = writer.get("/sessions/s-1/context").json()
    assert context["issues"] == [] and context["error"] is None and len(context["context"]) == 2
    writer.put("/sessions/s-1/todos", {"items": [{"content": "check"}]})
    change = TodoChange.objects.get()
    assert (change.actor, change.via) == ("api", "api key writer")


def test_todos_use_versions(writer: ApiClient, session: str) -> None:
    empty = writer.get("/sessions/s-1/todos")
    assert empty["ETag"] == '"0"' and empty.json() == {"version": 0, "items": []}
    first = writer.put("/sessions/s-1/todos", {"items": [{"content": "a"}]}, **{"If-Match": '"0"'})
    assert first.status_code == 200 and first["ETag"] == '"1"'
    stale = writer.put("/sessions/s-1/todos", {"items": []}, **{"If-Match": '"0"'})
    assert stale.status_code == 412 and stale.json()["version"] == 1
    assert writer.get("/sessions/s-1/todos").json()["items"][0]["content"] == "a"
    assert writer.put("/sessions/s-1/todos", {"items": []}, **{"If-Match": "x"}).status_code == 400


def test_second_runner_is_refused_with_the_holder(writer: ApiClient, session: str) -> None:
    lease = writer.post("/sessions/s-1/lease", {"ttl_seconds": 30}).json()
    refused = writer.post("/sessions/s-1/lease", {"ttl_seconds": 30})
    assert refused.status_code == 409
    assert refused.json()["holder"] == "api key writer" and refused.json()["expires_at"]
    busy = writer.post("/sessions/s-1/turns", {"turn_id": "t-x"})
    assert busy.status_code == 409 and busy.json()["type"].endswith("session-leased")
    path = f"/sessions/s-1/lease/{lease['lease_id']}"
    assert writer.put(path, {"ttl_seconds": 30}).status_code == 200
    assert writer.delete(path).status_code == 204
    assert writer.post("/sessions/s-1/lease", {"ttl_seconds": 30}).status_code == 201


def test_expired_lease_abandons_its_turn_when_the_session_is_touched(
    writer: ApiClient, session: str
) -> None:
    writer.post("/turns/t-1/finalize", {"status": "completed"})
    lease = writer.post("/sessions/s-1/lease", {"ttl_seconds": 30}).json()
    begun = writer.post("/sessions/s-1/turns", {"turn_id": "t-2", "lease_id": lease["lease_id"]})
    assert begun.status_code == 201
    RunLease.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    turn = writer.get("/turns/t-2").json()
    assert (turn["status"], turn["reason"]) == ("interrupted", "abandoned")
    lost = writer.put(f"/sessions/s-1/lease/{lease['lease_id']}", {"ttl_seconds": 30})
    assert lost.status_code == 409 and lost.json()["type"].endswith("lease-lost")
    assert writer.post("/sessions/s-1/lease", {"ttl_seconds": 30}).status_code == 201


@override_settings(AGENTOPS_API_MAX_BODY_BYTES=1000)
def test_body_over_the_limit_gets_413(writer: ApiClient, session: str) -> None:
    big = {"events": [_event("k", "x" * 2000)]}
    response = writer.post("/sessions/s-1/events", big)
    assert response.status_code == 413 and response["Content-Type"] == "application/problem+json"
    assert "limit is 1000" in response.json()["detail"]
    assert not Event.objects.exists()


def test_openapi_document_is_derived_and_public() -> None:
    document = ApiClient("").get("/openapi.json").json()
    assert document["openapi"].startswith("3.1")
    assert "/api/v1/sessions/{session_id}/events" in document["paths"]
    assert document["components"]["securitySchemes"]["ApiKeyBearer"]["scheme"] == "bearer"
    assert "Content" in document["components"]["schemas"]


def test_openapi_document_is_derived_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import ninja.main

    derived: list[str] = []
    real = ninja.main.get_schema

    def counting(**kwargs: Any) -> Any:
        derived.append(kwargs["path_prefix"])
        return real(**kwargs)

    monkeypatch.setattr(ninja.main, "get_schema", counting)
    first = ApiClient("").get("/openapi.json").json()
    again = ApiClient("").get("/openapi.json").json()
    assert first == again and first["paths"]
    assert len(derived) <= 1  # none when an earlier test derived it already


def test_thought_signatures_round_trip_as_base64(writer: ApiClient, session: str) -> None:
    call = {"id": "c-1", "name": "f", "arguments": {}, "thought_signature": "c2lnbg=="}
    content = {"role": "assistant", "tool_calls": [call]}
    writer.post("/sessions/s-1/events", {"events": [{"turn_id": "t-1", "content": content}]})
    events = writer.get("/sessions/s-1/events").json()["events"]
    assert events[0]["content"]["tool_calls"][0]["thought_signature"] == "c2lnbg=="


def test_sweep_abandons_the_turns_of_expired_leases(writer: ApiClient, session: str) -> None:
    from django.core.management import call_command

    lease = writer.post("/sessions/s-1/lease", {"ttl_seconds": 30}).json()
    writer.post("/turns/t-1/finalize", {"status": "completed"})
    writer.post("/sessions/s-1/turns", {"turn_id": "t-2", "lease_id": lease["lease_id"]})
    call_command("api_lease_sweep")
    assert Turn.objects.get(pk="t-2").status == "running"  # not expired yet
    RunLease.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    call_command("api_lease_sweep")
    turn = Turn.objects.get(pk="t-2")
    assert (turn.status, turn.reason) == ("interrupted", "abandoned")
    assert not RunLease.objects.exists()


def test_a_nul_character_in_a_json_body_gets_400_and_nothing_written(
    writer: ApiClient, session: str
) -> None:
    before = Event.objects.count()
    response = writer.post("/sessions/s-1/events", {"events": [_event("k-nul", "a\x00b")]})
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert "NUL" in response.json()["detail"]
    assert Event.objects.count() == before


def test_a_turn_begun_without_a_lease_is_not_owned_by_the_server_process(
    writer: ApiClient, session: str, admin_client: Client
) -> None:
    """The server process that answered `begin` does not run the turn: the client does.
    Without a lease its liveness is unknown, so opening the session page (which records
    turns whose owner is gone) must leave it running; only the stuck rule applies."""
    row = Turn.objects.get(pk="t-1")
    assert (row.owner_host, row.owner_pid, row.lease_until) == ("", None, None)
    assert admin_client.get("/sessions/s-1/").status_code == 200
    assert writer.get("/turns/t-1").json()["status"] == "running"
    finished = writer.post("/turns/t-1/finalize", {"status": "completed"})
    assert finished.status_code == 200


def _delta(value: bytes) -> bytes:
    return (
        b'{"events": [{"turn_id": "t-1", "content": {"role": "user"}, "state_delta": {"a": %s}}]}'
        % value
    )


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (_delta(b"NaN"), "NaN is not a JSON value"),
        (_delta(b"-Infinity"), "-Infinity is not a JSON value"),
        (_delta(b"1e400"), "the number 1e400 is too large"),
        (b'{"events": [', "the body is not JSON: Expecting value at line 1 column 13"),
        (b'{"events": "\xff"}', "the body is not UTF-8"),
        (b"[" * 100_000, "nests too deeply"),
    ],
)  # fmt: skip
def test_a_body_that_is_not_json_gets_400_with_its_reason_and_nothing_written(
    writer: ApiClient, session: str, body: bytes, reason: str
) -> None:
    before = Event.objects.count()
    response = writer.client.post(
        "/api/v1/sessions/s-1/events", body, content_type="application/json"
    )
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/problem+json"
    problem = response.json()
    assert problem["type"].endswith("malformed-body") and reason in problem["detail"]
    assert Event.objects.count() == before


def test_a_session_recorded_through_the_api_is_not_run_by_the_dashboards_agent(
    writer: ApiClient, session: str, admin_client: Client
) -> None:
    """It says where it comes from, and the page neither offers nor accepts a message for
    the dashboard's agent: the agent that records it runs elsewhere."""
    from sessions_app.models import Session

    row = Session.objects.get(pk=session)
    assert (row.source_format, row.get_source_format_display()) == (
        "api", "Recorded through the HTTP API",
    )  # fmt: skip
    page = admin_client.get(f"/sessions/{session}/").content.decode()
    assert "agent that runs elsewhere" in page
    refused = admin_client.post(
        f"/sessions/{session}/run/",
        {"message": "plan my day"},
        headers={"Accept": "application/json"},
    )
    assert refused.status_code == 409
    assert "runs elsewhere" in refused.json()["error"]
    assert not Turn.objects.filter(session_id=session).exclude(pk="t-1").exists()


@pytest.mark.parametrize(
    ("path", "body", "reason"),
    [
        ("/sessions/s-1/turns", {"turn_id": "t-f", "started_at": "9999-12-31T23:59:59Z"},
         "a day ahead of the server's clock"),
        ("/sessions/s-1/turns", {"turn_id": "t-p", "started_at": "0001-01-01T00:00:00Z"},
         "from 2000-01-01"),
        ("/sessions/s-1/turns", {"turn_id": "t-n", "started_at": "2026-01-01T10:00:00"},
         "time zone"),
        ("/sessions/s-1/events", {"events": [_event("k-neg", "x", usage={"prompt_tokens": -5})]},
         "token counts must be from 0"),
        ("/sessions/s-1/events",
         {"events": [_event("k-big", "x", usage={"total_tokens": 10**26})]},
         "token counts must be from 0"),
    ],
)  # fmt: skip
def test_implausible_times_and_token_counts_get_422_and_nothing_written(
    writer: ApiClient, session: str, path: str, body: dict[str, Any], reason: str
) -> None:
    before = (Turn.objects.count(), Event.objects.count())
    response = writer.post(path, body)
    assert response.status_code == 422, response.content
    assert reason in response.json()["detail"]
    assert (Turn.objects.count(), Event.objects.count()) == before


@pytest.mark.parametrize(
    ("method", "path", "status", "slug"),
    [
        ("get", "/api/v1/sessions", 405, "method-not-allowed"),
        ("delete", "/api/v1/sessions/s-1", 405, "method-not-allowed"),
        ("get", "/api/v1/no-such-thing", 404, "not-found"),
        ("get", "/v1/traces", 405, "method-not-allowed"),
    ],
)
def test_paths_and_methods_the_api_does_not_have_get_problem_json(
    writer: ApiClient, session: str, method: str, path: str, status: int, slug: str
) -> None:
    response = getattr(writer.client, method)(path)
    assert response.status_code == status
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["type"].endswith(slug)
    if status == 405:
        assert response["Allow"] and response["Allow"] in response.json()["detail"]


def test_a_validation_error_names_the_field_once(writer: ApiClient) -> None:
    response = writer.post("/sessions", {"user_id": "ada"})
    assert response.status_code == 422
    assert response.json()["detail"] == "body.app_name: Field required"
