"""Benchmark registry for `manage.py bench NAME`.

A benchmark is a function taking keyword options (strings from `-o key=value`, or ints
such as `events`) and returning a flat dict of figures (names -> numbers or strings;
units in the names, e.g. `events_per_s`). Register one with `@register("name")`.
Benchmarks print figures; tests never assert timings (CONVENTIONS.md 14).
"""

from __future__ import annotations

from collections.abc import Callable
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
    """Import the benchmark modules (which register themselves) and return the registry."""
    from sessions_app.benchmarks import import_bench, page_bench  # noqa: F401

    return REGISTRY
