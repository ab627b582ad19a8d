"""Benchmark registry for `manage.py bench NAME`.

A benchmark is a function taking keyword options (strings from `-o key=value`, or ints
such as `events`) and returning a flat dict of figures (names -> numbers or strings;
units in the names, e.g. `events_per_s`). Register one with `@register("name")`.
Benchmarks print figures; tests never assert timings (CONVENTIONS.md 14).
"""

from __future__ import annotations

import importlib
import pkgutil
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
    """Import every module of this package (each registers itself); return the registry.

    New benchmark modules need no entry here: dropping `xyz_bench.py` in this package
    with an `@register("xyz")` function is enough.
    """
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    return REGISTRY
