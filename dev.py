#!/usr/bin/env python3
"""Set up and run agentops with nothing but Python installed.

    python3 dev.py serve   # venv + deps, SQLite database, demo sessions, admin account,
                           # then the dashboard on http://127.0.0.1:8000 (daphne;
                           # PORT=8001 python3 dev.py serve for another port)
    python3 dev.py test    # venv + deps (+ Debian's chromium when possible), whole test suite

Environment variables are passed through (see .env.example); extra arguments after
`test` go to pytest.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"


def run(*args: str | Path, env: dict[str, str] | None = None) -> None:
    print("+", " ".join(str(a) for a in args), flush=True)
    subprocess.run([str(a) for a in args], cwd=ROOT, check=True, env=env)


def ensure_venv() -> None:
    """Create .venv and install the project with its dev extras (pinned by constraints.txt)."""
    stamp = VENV / ".installed"
    sources = [ROOT / "pyproject.toml", ROOT / "constraints.txt"]
    newest = max(p.stat().st_mtime for p in sources if p.exists())
    if stamp.exists() and stamp.stat().st_mtime >= newest:
        return
    step("installing the Python packages into .venv (a minute or so the first time)")
    if not PY.exists():
        venv.create(VENV, with_pip=True)
    run(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    # Not quiet: pip says what it collects and installs, so a first run is never silent.
    run(
        PY, "-m", "pip", "install", "--progress-bar", "off", "-c", "constraints.txt", "-e", ".[dev]"
    )
    stamp.touch()


def step(what: str) -> None:
    """Say what `serve` / `test` is doing now (one line)."""
    print(f"==> {what}", flush=True)


def wait_for_port(port: int, server: subprocess.Popen[bytes], timeout: float = 60) -> bool:
    """True once 127.0.0.1:`port` accepts connections; False when `server` exited first or
    `timeout` seconds passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and server.poll() is None:
        with socket.socket() as probe:
            probe.settimeout(0.5)
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.2)
    return False


def ensure_chromium() -> None:
    """Install Debian's chromium for the browser tests when missing and we are root."""
    if shutil.which("chromium") or Path("/usr/bin/chromium").exists():
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        print("chromium not found and cannot be installed here: browser tests will be skipped")
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    run("apt-get", "update", "-qq", env=env)
    run("apt-get", "install", "-y", "-qq", "chromium", env=env)


def serve() -> None:
    ensure_venv()
    step("preparing the database (migrations, demo sessions, admin account)")
    run(PY, "manage.py", "migrate", "--no-input")
    run(PY, "manage.py", "load_demo", "--if-missing")
    run(PY, "manage.py", "ensure_local_admin")
    port = os.environ.get("PORT", "8000")
    # The server process keeps session demo-live running a slowly streaming turn (set
    # AGENTOPS_LIVE_DEMO=false to turn it off).
    os.environ.setdefault("AGENTOPS_LIVE_DEMO", "true")
    # ... and receives OTLP/gRPC on gRPC's usual port beside OTLP/HTTP (empty: none).
    os.environ.setdefault("AGENTOPS_OTLP_GRPC_ADDRESS", "127.0.0.1:4317")
    run(
        PY,
        "manage.py",
        "shell",
        "-c",
        "from sessions_app.live.demo_live import ensure_demo_live_session\n"
        "ensure_demo_live_session()",
    )
    if os.environ.get("AGENTOPS_WATCH_PATHS", "").strip():
        # The server process follows them in the background (agentops/asgi.py), so its
        # watchers see each line at once without a shared channel layer.
        step("watching transcripts: " + os.environ["AGENTOPS_WATCH_PATHS"])
    step(f"starting the server on port {port}")
    server = subprocess.Popen(
        [str(PY), "-m", "daphne", "-b", "127.0.0.1", "-p", port, "agentops.asgi:application"],
        cwd=ROOT,
    )
    try:
        # The address is printed once the server really listens, not before.
        if wait_for_port(int(port), server):
            print(f"\nagentops: http://127.0.0.1:{port}/  (Ctrl-C to stop)", flush=True)
            print(f"live demo: http://127.0.0.1:{port}/sessions/demo-live/", flush=True)
            if os.environ["AGENTOPS_OTLP_GRPC_ADDRESS"]:
                grpc = os.environ["AGENTOPS_OTLP_GRPC_ADDRESS"]
                print(f"OTLP: http://127.0.0.1:{port}/v1/traces, gRPC {grpc}", flush=True)
            print(flush=True)
        sys.exit(server.wait())
    except KeyboardInterrupt:
        server.terminate()
        sys.exit(server.wait())


def test(extra: list[str]) -> None:
    ensure_venv()
    ensure_chromium()
    (ROOT / ".local").mkdir(exist_ok=True)
    run(PY, "-m", "pytest", *extra)


def main() -> None:
    os.chdir(ROOT)
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "serve":
        serve()
    elif command == "test":
        test(sys.argv[2:])
    else:
        sys.exit("usage: python3 dev.py serve | python3 dev.py test [pytest args]")


if __name__ == "__main__":
    main()
