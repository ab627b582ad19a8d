"""Benchmarks over real HTTP: daphne serving a scratch SQLite database in a subprocess,
and timed GETs with the standard library's client (`bench big`, `bench page`)."""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for(port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    """Return once `port` accepts connections; RuntimeError when `server` exits first or
    after 60 s."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"daphne exited: {log.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("daphne did not start within 60 s")


@contextmanager
def serve(database: Path, log: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """daphne serving the project on the SQLite file `database` (no live demo, the
    in-memory channel layer), output to `log`; yields (port, process) once it answers,
    and stops it afterwards."""
    env = {"DATABASE_URL": f"sqlite:///{database}", "REDIS_URL": ""}
    with _daphne(env, log) as served:
        yield served


@contextmanager
def serve_this_database(log: Path, **env: str) -> Iterator[str]:
    """daphne serving the project on this process's database (its environment, plus
    `env`; no live demo), output to `log`; yields its URL once it answers."""
    with serve_this_database_process(log, **env) as (url, _pid):
        yield url


@contextmanager
def serve_this_database_process(log: Path, **env: str) -> Iterator[tuple[str, int]]:
    """`serve_this_database`, yielding (its URL, the server's process id)."""
    with _daphne(env, log) as (port, server):
        yield f"http://127.0.0.1:{port}", server.pid


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system) process `pid` has used so far, from /proc (Linux);
    None where there is none. A figure the machine's other load hardly moves."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def _daphne(env: dict[str, str], log: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    port = free_port()
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "agentops.settings",
        "AGENTOPS_LIVE_DEMO": "false",
        "PORT": str(port),
        **env,
    }
    environment.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    argv = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
    with log.open("wb") as out:
        server = subprocess.Popen(
            [*argv, "agentops.asgi:application"],
            cwd=settings.BASE_DIR,
            env=environment,
            stdout=out,
            stderr=out,
        )
    try:
        wait_for(port, server, log)
        yield port, server
    finally:
        server.terminate()
        server.wait(timeout=30)


def operator_cookie(username: str) -> str:
    """A signed-in operator's session cookie (``name=value``), the user made now."""
    from django.contrib.auth.models import Group, User
    from django.test import Client

    from sessions_app.roles import OPERATORS

    user = User.objects.create_user(username, password=f"pw-{username}")
    user.groups.add(Group.objects.get_or_create(name=OPERATORS)[0])
    web = Client()
    web.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={web.cookies[settings.SESSION_COOKIE_NAME].value}"


def get(port: int, path: str, cookie: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """GET `path` on a new connection; read the body in 64 KiB pieces, keeping none of
    it. Returns status, first_byte_ms, total_ms and bytes."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
    started = time.perf_counter()
    connection.request("GET", path, headers={"Cookie": cookie, **(headers or {})})
    response = connection.getresponse()
    first = response.read1(65536)
    first_byte = time.perf_counter()
    size = len(first)
    while chunk := response.read1(65536):
        size += len(chunk)
    done = time.perf_counter()
    connection.close()
    return {
        "status": response.status,
        "first_byte_ms": round((first_byte - started) * 1000, 1),
        "total_ms": round((done - started) * 1000, 1),
        "bytes": size,
    }


def context_ready_after(port: int, path: str, cookie: str) -> float:
    """Seconds until `path` no longer answers the context page's "working it out" page
    (its background pass, `sessions_app.pages.context_background`), asking once a second."""
    started = time.perf_counter()
    while True:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
        connection.request("GET", path, headers={"Cookie": cookie})
        body = connection.getresponse().read()
        connection.close()
        if b'id="context-pending"' not in body:
            return round(time.perf_counter() - started, 1)
        time.sleep(1)
