"""The runtime is framework-free: importing it must not import Django (DESIGN.md)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import agentops.runtime


def test_runtime_modules_do_not_import_django() -> None:
    names = [
        f"agentops.runtime.{info.name}" for info in pkgutil.iter_modules(agentops.runtime.__path__)
    ]
    assert "agentops.runtime.runner" in names
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}: importlib.import_module(name)\n"
        "leaked = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "assert not leaked, leaked\n"
    )
    root = Path(agentops.runtime.__file__).resolve().parents[2]
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr
