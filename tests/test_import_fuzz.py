"""Mutated transcripts never give a traceback or a partial write.

A seeded mutator takes each real corpus file and each format fixture, cuts it to a small
size (so 2,000+ imports run in CI time), then changes one to three values (a type swap,
a huge or non-finite number, an unknown role or status, a dropped key, a NUL) and imports
the result. Every import must either succeed or be refused with one line
(`ImportRefusedError` / `UnknownFormatError`), and a refused file must leave no row.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from sessions_app.ingest import ImportRefusedError, UnknownFormatError, import_file
from sessions_app.models import Event, ImportedFile, Session, Turn

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent / "fixtures"
CASES_PER_SOURCE = 160
NASTY: list[Any] = [
    None,
    0,
    -1,
    10**30,
    1e300,
    float("inf"),
    float("nan"),
    "",
    "x",
    "9999-99-99T99:99:99Z",
    "\u0000",
    True,
    [],
    {},
    [1, "a", None],
    {"type": "image", "source": "not-an-object"},
    "robot",
    "unknown_status",
    42,
    "42",
    {"nested": {"deeper": [{"type": "function_call"}]}},
]


class _Rollback(Exception):
    pass


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _nodes(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _nodes(child, (*path, index))


def _mutate(rng: random.Random, document: dict[str, Any]) -> dict[str, Any]:
    """`document` (a one-key wrapper) with one to three values replaced or dropped."""
    nodes = [n for n in _nodes(document) if len(n[0]) > 1]
    for _ in range(rng.randint(1, 3)):
        if not nodes:
            break
        path, _value = rng.choice(nodes)
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        key = path[-1]
        if isinstance(parent, dict) and rng.random() < 0.2:
            parent.pop(key, None)
        else:
            parent[key] = copy.deepcopy(rng.choice(NASTY))
        nodes = [n for n in _nodes(document) if len(n[0]) > 1]
    return document


def _small(document: Any) -> Any:
    """The document with long lists cut to 12 items (keeps the imports fast)."""
    if isinstance(document, dict):
        return {k: _small(v) for k, v in document.items()}
    if isinstance(document, list):
        return [_small(v) for v in document[:12]]
    return document


def _sources(corpus: Path) -> list[Path]:
    found = sorted(p for p in corpus.rglob("*") if p.suffix in (".json", ".jsonl"))
    return found + sorted((FIXTURES / "formats").glob("*.json"))


def _mutated_text(rng: random.Random, source: Path) -> str:
    text = source.read_text(encoding="utf-8")
    if source.suffix == ".jsonl":
        lines = [json.loads(line) for line in text.splitlines()[:25] if line.strip()]
        index = rng.randrange(len(lines))
        lines[index] = _mutate(rng, {"line": [lines[index]]})["line"][0]
        out = "\n".join(json.dumps(line) for line in lines)
    else:
        out = json.dumps(_mutate(rng, {"doc": [_small(json.loads(text))]})["doc"][0])
    if rng.random() < 0.05:
        out = out.replace("0", "1e400", 1)
    return out


def _counts() -> tuple[int, int, int, int]:
    return (
        Session.objects.count(),
        Turn.objects.count(),
        Event.objects.count(),
        ImportedFile.objects.count(),
    )


def _check_one(path: Path) -> str:
    before = _counts()
    try:
        with transaction.atomic():
            import_file(path, replace=True)
            raise _Rollback
    except _Rollback:
        return "imported"
    except (ImportRefusedError, UnknownFormatError) as exc:
        message = str(exc)
        assert "\n" not in message and message.startswith(str(path)), message
        assert _counts() == before, f"refused file left rows: {message}"
        return "refused"


def test_mutated_corpus_files_import_or_are_refused_in_one_line(
    corpus: Path, tmp_path: Path
) -> None:
    rng = random.Random(20261201)
    outcomes = {"imported": 0, "refused": 0}
    cases = 0
    for source in _sources(corpus):
        target = tmp_path / source.name
        for _ in range(CASES_PER_SOURCE):
            target.write_text(_mutated_text(rng, source), encoding="utf-8")
            outcomes[_check_one(target)] += 1
            cases += 1
    # Both outcomes occur: the mutator neither breaks everything nor nothing.
    assert cases >= 2000
    assert outcomes["imported"] > 100 and outcomes["refused"] > 100, outcomes
    print(f"fuzz: {cases} cases, {outcomes}")


def test_mutated_adk_databases_import_or_are_refused(tmp_path: Path) -> None:
    rng = random.Random(7)
    for name in ("adk_v0.db", "adk_v1.db"):
        data = bytearray((FIXTURES / "adk" / name).read_bytes())
        for _ in range(40):
            copy = bytearray(data)
            for _flip in range(rng.randint(1, 8)):
                copy[rng.randrange(100, len(copy))] = rng.randrange(256)
            target = tmp_path / name
            target.write_bytes(bytes(copy))
            _check_one(target)
