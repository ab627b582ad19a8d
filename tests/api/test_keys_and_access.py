"""API keys: who may read, who may write, which apps a key sees; keys stored hashed and
never logged; the api_key command."""

from __future__ import annotations

import logging

import pytest
from django.core.management import call_command
from django.test import override_settings

from sessions_app.api.keys import create_key, hash_secret
from sessions_app.models import ApiKey, Session
from tests.api.conftest import ApiClient

pytestmark = pytest.mark.django_db

WRITES: list[tuple[str, str, dict[str, object]]] = [
    ("post", "/sessions", {"app_name": "ops", "session_id": "s-new"}),
    ("post", "/sessions/s-1/events", {"events": [{"content": {"role": "user", "text": "x"}}]}),
    ("post", "/sessions/s-1/partials", {"events": [{"content": {"role": "assistant"}}]}),
    ("post", "/sessions/s-1/turns", {"turn_id": "t-9"}),
    ("post", "/turns/t-1/finalize", {"status": "completed"}),
    ("post", "/sessions/s-1/interrupt", {"reason": "canceled"}),
    ("post", "/sessions/s-1/tool-outcomes",
     {"event_id": 1, "call_id": "c", "outcome": "did_not_run", "reason": "r"}),
    ("post", "/sessions/s-1/lease", {"ttl_seconds": 5}),
    ("put", "/sessions/s-1/lease/l-1", {"ttl_seconds": 5}),
    ("put", "/sessions/s-1/todos", {"items": []}),
]  # fmt: skip


@pytest.fixture
def stored(writer: ApiClient) -> None:
    assert writer.post("/sessions", {"app_name": "ops", "session_id": "s-1"}).status_code == 201
    assert writer.post("/sessions/s-1/turns", {"turn_id": "t-1"}).status_code == 201
    assert writer.post("/sessions", {"app_name": "billing", "session_id": "s-2"}).status_code == 201
    assert writer.post("/sessions/s-2/turns", {"turn_id": "t-2"}).status_code == 201


def test_read_only_key_gets_403_on_every_write(stored: None, reader: ApiClient) -> None:
    for method, path, body in WRITES:
        response = getattr(reader, method)(path, body)
        assert response.status_code == 403, (method, path, response.content)
        assert response["Content-Type"] == "application/problem+json"
        assert "read-only" in response.json()["detail"]
    assert reader.get("/sessions/s-1/events").status_code == 200
    assert reader.delete("/sessions/s-1/events/1").status_code == 403


def test_key_limited_to_one_app_sees_no_other_app(stored: None, ops_only: ApiClient) -> None:
    for path in ["/sessions/s-2", "/sessions/s-2/events", "/sessions/s-2/turns",
                 "/turns/t-2", "/sessions/s-2/context", "/sessions/s-2/todos",
                 "/sessions/s-2/export"]:  # fmt: skip
        response = ops_only.get(path)
        assert response.status_code == 404, path
        assert response.json()["type"].endswith(("session-not-found", "turn-not-found"))
    assert ops_only.get("/sessions/s-1").status_code == 200
    refused = ops_only.post("/sessions", {"app_name": "billing", "session_id": "s-3"})
    assert refused.status_code == 403
    assert not Session.objects.filter(pk="s-3").exists()
    # Another app's existing id is not revealed by a create either.
    assert ops_only.post("/sessions", {"app_name": "ops", "session_id": "s-2"}).status_code == 404


def test_unknown_malformed_and_revoked_keys_get_401(stored: None) -> None:
    new = create_key("soon-revoked")
    for key in ["", "ao_nothing", "ao_12345678_wrong", new.key[:-1] + "x"]:
        response = ApiClient(key).get("/sessions/s-1")
        assert response.status_code == 401, key
        assert response.json()["title"] == "Unauthorized"
        assert response["WWW-Authenticate"].startswith("Bearer")
    assert ApiClient(new.key).get("/sessions/s-1").status_code == 200
    call_command("api_key", "revoke", new.row.prefix)
    assert ApiClient(new.key).get("/sessions/s-1").status_code == 401


def test_key_is_stored_hashed_and_shown_once(capsys: pytest.CaptureFixture[str]) -> None:
    call_command("api_key", "create", "ci", "--read-only", "--app", "ops", "--app", "web")
    key = capsys.readouterr().out.strip().splitlines()[-1]
    row = ApiKey.objects.get(name="ci")
    assert key.startswith(f"ao_{row.prefix}_") and row.read_only
    assert row.app_names == ["ops", "web"]
    assert row.secret_hash == hash_secret(key.split("_", 2)[2]) and key not in row.secret_hash
    call_command("api_key", "list")
    listed = capsys.readouterr().out
    assert row.prefix in listed and key not in listed
    call_command("api_key", "revoke", "ci")
    assert ApiKey.objects.get(name="ci").revoked_at is not None


@override_settings(DEBUG=True)
def test_keys_are_never_logged(stored: None, caplog: pytest.LogCaptureFixture) -> None:
    new = create_key("secretive", read_only=True)
    caplog.set_level(logging.DEBUG)
    client = ApiClient(new.key)
    client.post("/sessions", {"app_name": "ops"})  # 403
    client.get("/sessions/nope")  # 404
    client.post("/sessions/s-1/events", {"events": "bad"})  # 422
    other = ApiClient("")
    other.client.get("/api/v1/sessions/s-1", headers={"Authorization": f"Token {new.key}"})
    secret = new.key.split("_", 2)[2]
    assert caplog.records, "the 4xx answers are logged (path only)"
    assert not [r for r in caplog.records if secret in r.getMessage()]


def test_access_of_anonymous_is_problem_json(stored: None) -> None:
    response = ApiClient("").post("/sessions/s-1/turns", {"turn_id": "t-5"})
    assert response.status_code == 401
    assert set(response.json()) >= {"type", "title", "status", "detail", "instance"}
    assert response.json()["instance"] == "/api/v1/sessions/s-1/turns"
