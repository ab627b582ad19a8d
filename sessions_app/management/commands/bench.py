"""`manage.py bench NAME [--json] [--events N] [-o key=value ...]`: run a benchmark."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from sessions_app.benchmarks import load_all


class Command(BaseCommand):
    help = "Run a registered benchmark and print its figures (a table, or JSON with --json)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("name", help="benchmark name (see sessions_app.benchmarks)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--events", type=int, help="size, for benchmarks that take one")
        parser.add_argument(
            "--quick", action="store_true", help="smaller sizes, for benchmarks that have them"
        )
        parser.add_argument(
            "-o",
            "--option",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="extra option passed to the benchmark (repeatable)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        registry = load_all()
        name = options["name"]
        if name not in registry:
            known = ", ".join(sorted(registry))
            raise CommandError(f"unknown benchmark {name!r} (known: {known})", returncode=2)
        kwargs: dict[str, Any] = {}
        for item in options["option"]:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise CommandError(f"-o {item!r}: expected KEY=VALUE", returncode=2)
            kwargs[key] = value
        if options["events"] is not None:
            kwargs["events"] = options["events"]
        if options["quick"]:
            kwargs["quick"] = True
        figures = registry[name](**kwargs)
        if options["json"]:
            self.stdout.write(json.dumps({"benchmark": name, **figures}))
            return
        width = max(len(k) for k in figures) if figures else 0
        self.stdout.write(f"bench {name}")
        for key, value in figures.items():
            shown = f"{value:,}" if isinstance(value, int) else str(value)
            self.stdout.write(f"  {key.ljust(width)}  {shown}")
