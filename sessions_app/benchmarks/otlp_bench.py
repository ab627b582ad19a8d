"""`bench otlp`: spans/s accepted by the OTLP/HTTP receiver (protobuf, batches of 512; the
protobuf-gzip and JSON encodings, and the writer alone without HTTP or broadcast,
interleaved beside it), and the time from a POST of one span to the session's websocket
watchers receiving its event.

What is measured (`children.otlp_child`): a daphne subprocess on a scratch SQLite file
(never the dev database) with the in-memory channel layer and no per-key rate limit; one
keep-alive HTTP client POSTing one body at a time (no concurrency); agent traces made by
the OpenTelemetry SDK with the GenAI conventions and content captured (8 spans a trace by
default: each trace is a turn with tool calls, results, usage), encoded before the clock
starts. Every span is kept and its trace's turn rebuilt, events stored and broadcast:
the whole receiver. Latency: real websocket clients signed in as an operator, one new
``chat`` span of a running turn per POST, `pace_ms` apart.
Target (the issue): at least 10,000 spans/s (protobuf, batches of 512) on this machine.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from sessions_app.benchmarks import Figures, register, run_django_child
from sessions_app.benchmarks.children import otlp_child


@register("otlp")
def bench_otlp(
    *,
    events: str | int = 8192,
    rounds: str | int = 3,
    batch: str | int = 512,
    rounds_per_trace: str | int = 3,
    watchers: str = "1,10",
    samples: str | int = 30,
    pace_ms: str | int = 20,
) -> Figures:
    """Figures: ``<subject>_spans_per_s`` (median over `rounds`) and its ``_range`` for the
    subjects protobuf, protobuf_gzip, json and writer_only; ``w<n>_p50_ms``, ``w<n>_p95_ms``,
    ``w<n>_max_ms`` and ``w<n>_delivered`` / ``w<n>_expected`` per watcher count.
    `events`: spans per subject and round (``--events``); `rounds_per_trace`: chat and
    tool span pairs per trace."""
    options = {
        "spans": int(events),
        "rounds": int(rounds),
        "batch": int(batch),
        "rounds_per_trace": int(rounds_per_trace),
        "watchers": [int(n) for n in str(watchers).split(",") if n.strip()],
        "samples": int(samples),
        "pace": int(pace_ms) / 1000,
    }
    with tempfile.TemporaryDirectory(prefix="agentops-bench-otlp-") as tmp:
        result = run_django_child(
            otlp_child.__name__,
            [json.dumps(options)],
            Path(tmp) / "bench.sqlite3",
            {"AGENTOPS_LIVE_DEMO": "false", "LOG_LEVEL": "WARNING", "REDIS_URL": ""},
        )
    figures: Figures = {"batch_spans": int(batch), **result["throughput"]}
    for watchers_key, values in result["latency"].items():
        for name, value in values.items():
            figures[f"{watchers_key}_{name}"] = value
    return figures
