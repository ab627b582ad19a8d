"""`bench import`: the whole import (read, parse, redact, resume status, write) against a
raw executemany of the same rows, and the import's peak memory.

What is measured, honestly:
- a synthetic Claude Code JSONL of `events` events (turns of: user prompt, assistant
  message split over two lines (text, then tool_use), tool result, final answer; one
  session), or with ``-o format=codex_cli`` a Codex CLI rollout of as many (turns of:
  prompt, reasoning and token count, shell call, its output, answer), is written to a
  temp dir;
- a subprocess (`children.import_child`) with `DATABASE_URL` pointing at a new SQLite file
  in that temp dir (never the dev database) runs `migrate`, then, `rounds` times and
  alternating: `import_file` (the real import, production settings: WAL,
  synchronous=NORMAL, its chunked commits and the pauses it makes for other writers),
  and, as the upper limit, the very same rows it wrote in every table it wrote (session,
  turns, events, imported-file record), already serialised, inserted with the `sqlite3`
  module's `executemany` on the same connection (same pragmas and search triggers), one
  transaction: no parsing, no adapting, no ORM;
- the import's peak memory: the child's peak resident size (`VmHWM`, reset before the
  first import) above its resident size before that import.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sessions_app.benchmarks import Figures, register, run_django_child
from sessions_app.benchmarks.children import import_child


def write_synthetic_claude(path: Path, events: int) -> int:
    """Write a Claude Code JSONL with about `events` events (multiple of 4); return the count.

    Timestamps start at 2025-01-01T00:00:00Z, one second apart.
    """
    base = datetime(2025, 1, 1, tzinfo=UTC)
    turns = max(1, events // 4)
    n = 0

    def stamp() -> str:
        nonlocal n
        n += 1
        return (base + timedelta(seconds=n)).isoformat().replace("+00:00", "Z")

    common = {
        "sessionId": "bench-session",
        "version": "2.0.0",
        "cwd": "/work",
        "isSidechain": False,
    }
    with path.open("w", encoding="utf-8") as out:
        for t in range(turns):
            call_id = f"toolu_bench_{t:06d}"
            msg = f"msg_bench_{t:06d}"
            lines: list[dict[str, Any]] = [
                {
                    "type": "user",
                    "uuid": f"u{t}a",
                    "timestamp": stamp(),
                    "message": {"role": "user", "content": f"Step {t}: check file {t}.py"},
                },
                {
                    "type": "assistant",
                    "uuid": f"u{t}b",
                    "timestamp": stamp(),
                    "message": {
                        "id": msg,
                        "role": "assistant",
                        "model": "bench",
                        "content": [{"type": "text", "text": f"Reading {t}.py"}],
                        "usage": {"input_tokens": 100 + t % 50, "output_tokens": 20},
                    },
                },
                {
                    "type": "assistant",
                    "uuid": f"u{t}c",
                    "timestamp": stamp(),
                    "message": {
                        "id": msg,
                        "role": "assistant",
                        "model": "bench",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": call_id,
                                "name": "Read",
                                "input": {"file_path": f"/work/{t}.py"},
                            }
                        ],
                        "stop_reason": "tool_use",
                        "usage": {"input_tokens": 100 + t % 50, "output_tokens": 40},
                    },
                },
                {
                    "type": "user",
                    "uuid": f"u{t}d",
                    "timestamp": stamp(),
                    "message": {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": call_id,
                                "content": f"def f{t}():\n    return {t}\n",
                            }
                        ],
                    },
                },
                {
                    "type": "assistant",
                    "uuid": f"u{t}e",
                    "timestamp": stamp(),
                    "message": {
                        "id": f"{msg}_b",
                        "role": "assistant",
                        "model": "bench",
                        "content": [{"type": "text", "text": f"`f{t}` returns {t}."}],
                        "stop_reason": "end_turn",
                        "usage": {"input_tokens": 160, "output_tokens": 12},
                    },
                },
            ]
            for line in lines:
                out.write(json.dumps({**common, **line}) + "\n")
    return turns * 4


def write_synthetic_codex(path: Path, events: int) -> int:
    """Write a Codex CLI rollout with about `events` events (multiple of 4); return the
    count. Each turn: a turn_context naming the model, the user's prompt, reasoning, a
    token count, a shell `function_call`, its output, the answer (the reasoning and the
    token count join the call's event). Times as `write_synthetic_claude`'s."""
    base = datetime(2025, 1, 1, tzinfo=UTC)
    turns = max(1, events // 4)
    n = 0

    def line(kind: str, **payload: Any) -> str:
        nonlocal n
        n += 1
        stamp = (base + timedelta(seconds=n)).isoformat().replace("+00:00", "Z")
        return json.dumps({"timestamp": stamp, "type": kind, "payload": payload}) + "\n"

    def message(role: str, kind: str, text: str) -> str:
        content = [{"type": kind, "text": text}]
        return line("response_item", type="message", role=role, content=content)

    with path.open("w", encoding="utf-8") as out:
        out.write(line("session_meta", id="bench-session", cwd="/work", cli_version="0.40.0"))
        for t in range(turns):
            call_id = f"call_bench_{t:06d}"
            usage = {"input_tokens": 100 + t % 50, "output_tokens": 40, "total_tokens": 0}
            arguments = json.dumps({"command": ["bash", "-lc", f"cat {t}.py"], "workdir": "."})
            output = json.dumps({"output": f"def f{t}():\n    return {t}\n", "exit_code": 0})
            out.write(line("turn_context", cwd="/work", model="bench", effort="high"))
            out.write(message("user", "input_text", f"Step {t}: check file {t}.py"))
            summary = [{"type": "summary_text", "text": f"**Reading {t}.py**"}]
            out.write(line("response_item", type="reasoning", summary=summary))
            out.write(line("event_msg", type="token_count", info={"last_token_usage": usage}))
            out.write(
                line(
                    "response_item",
                    type="function_call",
                    name="shell",
                    arguments=arguments,
                    call_id=call_id,
                )
            )
            out.write(
                line("response_item", type="function_call_output", call_id=call_id, output=output)
            )
            out.write(message("assistant", "output_text", f"`f{t}` returns {t}."))
    return turns * 4


#: The synthetic file `bench import` writes, by `format` option.
SYNTHETIC = {"claude_code": write_synthetic_claude, "codex_cli": write_synthetic_codex}


def _median(values: list[float]) -> float:
    return statistics.median(values)


@register("import")
def bench_import(
    events: int = 50_000, rounds: int = 3, format: str = "claude_code", **_: Any
) -> Figures:
    """Import ~`events` synthetic events into a temp SQLite file, against a raw
    executemany of the same rows, `rounds` interleaved rounds; see the module doc.
    `format`: the synthetic file's, a key of `SYNTHETIC` (``-o format=codex_cli``: a
    Codex CLI rollout).

    Returns, beside the sizes: `import_vs_raw_executemany` (median over rounds of the
    raw insert's time over the import's: the import's rate as a fraction of the raw
    one; target >= 0.5) with its range, `peak_rss_vs_session_bytes` (the import's peak
    resident memory above the process's before it, over the largest session's size in
    the file: the file is one session, so its size; target < 3), and the times (median,
    range). Raises RuntimeError when the subprocess fails.
    """
    with tempfile.TemporaryDirectory(prefix="agentops-bench-") as tmp:
        tmpdir = Path(tmp)
        if format not in SYNTHETIC:
            raise ValueError(f"format {format!r}: expected one of {', '.join(SYNTHETIC)}")
        source = tmpdir / "bench-session.jsonl"
        expected = SYNTHETIC[format](source, int(events))
        db = tmpdir / "bench.sqlite3"
        child = run_django_child(import_child.__name__, [str(source), str(int(rounds))], db)
        session_bytes = source.stat().st_size
    ratios = [raw / ours for ours, raw in zip(child["import_s"], child["raw_s"], strict=True)]
    stored = child["stats"]["events"]
    import_s = _median(child["import_s"])
    return {
        "format": format,
        "events": stored,
        "expected_events": expected,
        "rounds": int(rounds),
        "session_mb": round(session_bytes / 1e6, 2),
        "rows_per_table": child["rows"],
        "import_s_median": round(import_s, 3),
        "import_s_range": [round(min(child["import_s"]), 3), round(max(child["import_s"]), 3)],
        "raw_executemany_s_median": round(_median(child["raw_s"]), 3),
        "raw_executemany_s_range": [round(min(child["raw_s"]), 3), round(max(child["raw_s"]), 3)],
        "events_per_s": round(stored / import_s) if import_s else 0,
        "import_vs_raw_executemany": round(_median(ratios), 3),
        "import_vs_raw_executemany_range": [round(min(ratios), 3), round(max(ratios), 3)],
        "peak_rss_mb": round(child["peak_rss_bytes"] / 1e6, 1),
        "peak_rss_vs_session_bytes": round(child["peak_rss_bytes"] / session_bytes, 2),
    }
