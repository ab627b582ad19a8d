"""schemathesis against /api/v1/openapi.json on a live server: no 5xx, no answer that
breaks its own schema.

Bounded: AGENTOPS_FUZZ_EXAMPLES examples per operation and phase (default 5, a quick
run for CI; 40 gives about 1,700 cases in about 2 minutes on a developer machine).

Deterministic: a fixed seed and derandomized generation (which also keeps no example
database: a failure found by an earlier run on this machine is not replayed into this
one), one worker, so two runs send the same requests in the same order; each request may take up
to 60 s on a loaded machine before it counts as a failure. When it fails, the server's
log lines of 5xx answers and tracebacks are printed beside the summary.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sessions_app.api.keys import create_key
from tests.live.helpers import DaphneServer

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db(transaction=True)]

#: A server log line of a failure: a 5xx access line or an exception.
_SERVER_FAILURE = re.compile(r'" 5\d\d |Traceback|Error|Exception')

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
             "-n", str(EXAMPLES), "-w", "1", "--request-timeout", "60", "--seed", "1",
             "--generation-deterministic"],
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        server_log = server.log.read_text(errors="replace")
    summary = run.stdout[-1500:] + run.stderr[-500:]
    print(summary)  # the figures: cases generated and passed
    failures = [line for line in server_log.splitlines() if _SERVER_FAILURE.search(line)]
    assert run.returncode == 0, summary + "\nserver:\n" + "\n".join(failures[-40:])
    assert "passed" in summary
