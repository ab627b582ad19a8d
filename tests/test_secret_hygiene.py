"""Secret hygiene: nothing credential-shaped or exception-borne reaches the database.

Every check dumps every row of every table (`dumpdata` of all apps) and searches it, so a
value cannot hide in a column the test forgot.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from agentops.runtime import Runner
from sessions_app.ingest import import_file
from sessions_app.ingest.redaction import redact_text, redact_value
from sessions_app.store import DjangoSessionService
from tests.runtime.helpers import ScriptedAgent, drain

SECURITY_FIXTURE = "openai-agents-sdk/run_state__security__v1_13_legacy_mount_credentials.json"
SENTINELS = (
    "RUNSTATE_ACCESS_SENTINEL_42",
    "RUNSTATE_SECRET_SENTINEL_42",
    "RUNSTATE_TOKEN_SENTINEL_42",
)


def dump_database() -> str:
    """Every row of every table of every installed app, as one JSON string."""
    out = io.StringIO()
    call_command("dumpdata", stdout=out, indent=None)
    return out.getvalue()


@pytest.mark.django_db
def test_security_fixture_stores_none_of_its_sentinels(corpus: Path) -> None:
    report = import_file(corpus / SECURITY_FIXTURE)
    assert report.status == "imported" and report.session_ids
    dump = dump_database()
    assert report.session_ids[0] in dump  # the dump does hold the imported rows
    for sentinel in SENTINELS:
        assert sentinel not in dump


def test_key_rules_alone_remove_every_sentinel_of_the_fixture(corpus: Path) -> None:
    """Whatever a parser keeps of the RunState, the rules drop the mount credentials."""
    data = json.loads((corpus / SECURITY_FIXTURE).read_text())
    text = json.dumps(redact_value(data))
    for sentinel in SENTINELS:
        assert sentinel not in text
    remote = redact_value(data)["sandbox"]["session_state"]["manifest"]["entries"]["remote"]
    assert remote["secret_access_key"] == "[REDACTED:aws_secret_access_key]"
    assert remote["session_token"] == "[REDACTED:aws_session_token]"
    assert remote["access_key_id"] == "[REDACTED:aws_access_key_id]"
    assert remote["bucket"] == "compat-bucket"  # ordinary values stay


AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
OPENAI_KEY = "sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789"
URL_PASSWORD = "s3cr3t-pw"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq9\n-----END RSA PRIVATE KEY-----"
STRUCTURED = "hunter2-structured"


def _claude_lines() -> list[dict[str, object]]:
    base = {"sessionId": "leaky", "version": "2.0.0", "cwd": "/work", "isSidechain": False}
    lines: list[dict[str, object]] = [
        {
            "type": "user",
            "uuid": "u1",
            "timestamp": "2025-01-01T00:00:01Z",
            "message": {"role": "user", "content": f"deploy with {OPENAI_KEY} please"},
        },
        {
            "type": "assistant",
            "uuid": "u2",
            "timestamp": "2025-01-01T00:00:02Z",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Using aws_access_key_id={AWS_ID}"},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Bash",
                        "input": {
                            "command": f"git clone https://bob:{URL_PASSWORD}@example.com/r.git",
                            "password": STRUCTURED,
                        },
                    },
                ],
            },
        },
        {
            "type": "user",
            "uuid": "u3",
            "timestamp": "2025-01-01T00:00:03Z",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": f'aws_secret_access_key = "{AWS_SECRET}"\n{GITHUB}\n{PEM}',
                    }
                ],
            },
        },
    ]
    return [{**base, **line} for line in lines]


@pytest.mark.django_db
def test_credentials_in_prompt_tool_arguments_and_results_are_redacted(tmp_path: Path) -> None:
    path = tmp_path / "leaky.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in _claude_lines()) + "\n")
    report = import_file(path)
    assert report.status == "imported" and report.stats["events"] == 3
    dump = dump_database()
    for secret in (AWS_ID, AWS_SECRET, OPENAI_KEY, URL_PASSWORD, GITHUB, STRUCTURED, "MIIEow"):
        assert secret not in dump, secret
    for kind in ("openai_api_key", "basic_auth_credentials", "password", "private_key"):
        assert f"[REDACTED:{kind}]" in dump, kind
    assert "git clone https://bob:" in dump  # the rest of the text survives


@pytest.mark.parametrize(
    "text",
    [
        "const token = crypto.randomBytes(32).toString('hex')",
        '"jsonwebtoken": "^9.0.2"',
        "input_tokens: 1234567",
        "see https://example.com/docs?page=2",
        "commit 1c2844a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6",
    ],
)
def test_ordinary_code_and_text_are_left_alone(text: str) -> None:
    assert redact_text(text) == text


def test_redaction_is_idempotent() -> None:
    once = redact_value({"token": "abc", "text": f"key {AWS_ID}"})
    assert redact_value(once) is once


@pytest.mark.django_db(transaction=True)
async def test_agent_exception_text_leaves_no_trace_in_any_table() -> None:
    """docs/runtime.md §6 at the Django store: the classifier never copies exception text."""
    secret = "password=hunter2 sk-live-0123456789abcdefghijklmnop"
    service = DjangoSessionService()
    session = await service.create_session("app", "u1", session_id="boom")
    runner = Runner(ScriptedAgent([RuntimeError(secret)]), service)
    _, error = await drain(runner, session.id, "please fail")
    assert isinstance(error, RuntimeError)
    from asgiref.sync import sync_to_async

    dump = await sync_to_async(dump_database)()
    assert '"failed"' in dump and "agent_error" in dump  # the failed turn is stored
    for fragment in ("hunter2", "sk-live", "password=", "RuntimeError"):
        assert fragment not in dump, fragment
