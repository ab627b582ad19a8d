"""schemathesis against /api/v1/openapi.json on a live server: no 5xx, no answer that
breaks its own schema.

Bounded: AGENTOPS_FUZZ_EXAMPLES examples per operation and phase (default 5, a quick
run for CI; 40 gives about 1,700 cases in about 2 minutes on a developer machine).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sessions_app.api.keys import create_key
from tests.live.helpers import DaphneServer

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db(transaction=True)]

EXAMPLES = int(os.environ.get("AGENTOPS_FUZZ_EXAMPLES", "5"))


def test_api_answers_match_its_schema_and_never_fail() -> None:
    cli = shutil.which("schemathesis") or str(
        Path(os.sys.executable).with_name("schemathesis")  # type: ignore[attr-defined]
    )
    key = create_key("fuzz").key
    with DaphneServer() as server:
        run = subprocess.run(
            [cli, "run", f"{server.url}/api/v1/openapi.json",
             "-H", f"Authorization: Bearer {key}",
             "-c", "not_a_server_error,response_schema_conformance",
             "-n", str(EXAMPLES), "-w", "1", "--request-timeout", "40", "--seed", "1"],
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
    summary = run.stdout[-1500:]
    print(summary)  # the figures: cases generated and passed
    assert run.returncode == 0, summary
    assert "passed" in summary
