"""The apps depend one way: todos_app may import sessions_app, never the reverse.

sessions_app reaches the todo list only through the signals in `sessions_app.signals`
(receivers connected by todos_app) and the dotted path settings.AGENTOPS_TODO_STORE.
"""

from __future__ import annotations

import ast
from pathlib import Path

import sessions_app

SESSIONS_APP = Path(sessions_app.__file__).parent
# Calls that import a module named by a string argument.
_DYNAMIC_IMPORTS = {"import_module", "import_string", "__import__"}


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module name) of every import in `tree`, at any depth (functions included),
    and of every dynamic import whose module is a string literal."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if (
                name in _DYNAMIC_IMPORTS
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
            ):
                found.append((node.lineno, first.value))
    return found


def test_no_module_of_sessions_app_imports_todos_app() -> None:
    offenders = [
        f"{path.relative_to(SESSIONS_APP.parent)}:{line}: {module}"
        for path in sorted(SESSIONS_APP.rglob("*.py"))
        for line, module in _imported_modules(ast.parse(path.read_text(), str(path)))
        if module == "todos_app" or module.startswith("todos_app.")
    ]
    assert offenders == []


def test_the_check_sees_imports_inside_functions() -> None:
    source = (
        "def f():\n"
        "    from todos_app.models import TodoList\n"
        "    import todos_app.store\n"
        "    return import_module('todos_app.services')\n"
    )
    modules = {module for _line, module in _imported_modules(ast.parse(source))}
    assert modules == {"todos_app.models", "todos_app.store", "todos_app.services"}


def test_every_module_stays_readable_in_one_sitting() -> None:
    """No module of the project's packages (migrations aside) over 450 lines; under 135
    lines of hand-written JavaScript for the live page (htmx's extension does the rest;
    120 until the page learnt to follow a session that moved, an OTLP trace named by its
    conversation, whose socket is refused at the handshake)."""
    root = Path(sessions_app.__file__).resolve().parent.parent
    too_long = [
        f"{path.relative_to(root)}: {count}"
        for package in ("agentops", "sessions_app", "todos_app")
        for path in sorted((root / package).rglob("*.py"))
        if "migrations" not in path.parts
        and (count := len(path.read_text(encoding="utf-8").splitlines())) > 450
    ]
    assert too_long == []
    assert len((root / "static" / "live.js").read_text(encoding="utf-8").splitlines()) < 135
