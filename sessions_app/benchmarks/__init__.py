"""Benchmark registry for `manage.py bench NAME`.

A benchmark is a function taking keyword options (strings from `-o key=value`, or ints
such as `events`) and returning a flat dict of figures (names -> numbers or strings;
units in the names, e.g. `events_per_s`). Register one with `@register("name")`.
Benchmarks print figures; tests never assert timings (CONVENTIONS.md 14).
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Figures = dict[str, Any]
Benchmark = Callable[..., Figures]

REGISTRY: dict[str, Benchmark] = {}


def register(name: str) -> Callable[[Benchmark], Benchmark]:
    """Decorator: make `fn` available as `manage.py bench <name>`."""

    def decorate(fn: Benchmark) -> Benchmark:
        REGISTRY[name] = fn
        return fn

    return decorate


def load_all() -> dict[str, Benchmark]:
    """Import every module of this package (each registers itself); return the registry.

    New benchmark modules need no entry here: dropping `xyz_bench.py` in this package
    with an `@register("xyz")` function is enough.
    """
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    return REGISTRY


def run_json_process(argv: list[str], env: dict[str, str], what: str) -> dict[str, Any]:
    """Run `argv` in the project directory with environment `env`; return the JSON object
    it printed on its last line of output.

    Raises RuntimeError naming `what`, with the end of its stderr, when it fails.
    """
    from django.conf import settings

    proc = subprocess.run(
        argv, cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed: {proc.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def run_django_child(
    module: str, args: list[str], database: Path, env_extra: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run ``python -m <module> <args>`` (a module of `children`, which sets Django up
    itself) in a subprocess whose Django uses the SQLite file `database`, never the dev
    database (`env_extra` adds to or overrides its environment); return the JSON object it
    printed last.

    Raises RuntimeError with the end of its stderr when the subprocess fails.
    """
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}"}
    env.setdefault("DJANGO_SETTINGS_MODULE", "agentops.settings")
    env.update(env_extra or {})
    return run_json_process([sys.executable, "-m", module, *args], env, f"benchmark {module}")
