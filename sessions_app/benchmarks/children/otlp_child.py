"""`bench otlp`'s child: spans/s accepted by the OTLP/HTTP receiver, and the time from a
POST to a watcher of the session receiving the new event.

Usage: ``python -m sessions_app.benchmarks.children.otlp_child OPTIONS_JSON`` with
``DATABASE_URL`` set to a scratch SQLite database. It migrates, makes an API key and an
operator, starts a daphne subprocess on that database (in-memory channel layer: the
server that stores the spans broadcasts them) and measures:

- throughput: agent traces made with the OpenTelemetry SDK (GenAI conventions, content
  captured: a root ``invoke_agent`` span, `rounds_per_trace` ``chat`` + ``execute_tool``
  pairs and a final ``chat``; `TURNS` traces per conversation), encoded as the SDK's
  OTLP exporter encodes them, in bodies of `batch` spans (512: the BatchSpanProcessor's
  default). The subjects, interleaved round by round: protobuf (the exporter's default,
  and the target), protobuf gzip-compressed, JSON, each POSTed by one keep-alive httpx
  client one body at a time; and `writer_only`, the protobuf bodies decoded and stored
  in this process with the garbage collector tuned as the server's
  (`agentops.collector`; no HTTP, no broadcast: what the rest of the request costs is
  the difference). Bodies are made before the clock starts. Spans/s per round; the
  median and range are printed.
- latency: `watchers` real websocket clients (``websockets``, signed in as the operator)
  on one running turn's session; `samples` POSTs of one new ``chat`` span (protobuf),
  `pace` seconds apart; for each, the time from just before the POST to every watcher
  receiving a frame with a new event.

Prints one JSON object: ``{"throughput": {...}, "latency": {...}}``.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import django

from sessions_app.benchmarks.children.ingest_child import _percentile

_EVENT_ID = re.compile(r'data-event-id="(\d+)"')
SUBJECTS = ("protobuf", "protobuf_gzip", "json", "writer_only")
#: Turns (traces) per conversation: a batch of 512 spans touches 16 sessions.
TURNS = 4


def _message(role: str, **part: Any) -> dict[str, Any]:
    return {"role": role, "parts": [part]}


def agent_spans(traces: int, rounds_per_trace: int, conversation: str = "") -> list[Any]:
    """The finished spans of `traces` agent turns (see the module docstring)."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": "bench-otlp"}))
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = tracer_provider.get_tracer("bench.otlp")
    prefix = uuid.uuid4().hex[:8]
    for number in range(traces):
        root = tracer.start_span("invoke_agent bench", attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.conversation.id": conversation or f"bench-{prefix}-{number // TURNS}",
        })  # fmt: skip
        history = [_message("user", type="text", content=f"question {number}")]
        with trace.use_span(root, end_on_exit=True):
            for step in range(rounds_per_trace + 1):
                call_id = f"call_{number}_{step}"
                last = step == rounds_per_trace
                answer = (
                    _message("assistant", type="text", content=f"answer {number}")
                    if last
                    else _message(
                        "assistant", type="tool_call", id=call_id, name="lookup",
                        arguments={"step": step},
                    )
                )  # fmt: skip
                with tracer.start_as_current_span("chat bench-model", attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "bench-model",
                    "gen_ai.input.messages": json.dumps(history),
                    "gen_ai.output.messages": json.dumps([answer]),
                    "gen_ai.usage.input_tokens": 100 + step,
                    "gen_ai.usage.output_tokens": 20,
                }):  # fmt: skip
                    pass
                if last:
                    break
                with tracer.start_as_current_span("execute_tool lookup", attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.call.id": call_id,
                    "gen_ai.tool.name": "lookup",
                    "gen_ai.tool.call.arguments": json.dumps({"step": step}),
                    "gen_ai.tool.call.result": json.dumps({"found": step}),
                }):  # fmt: skip
                    pass
                history += [
                    answer,
                    _message(
                        "tool", type="tool_call_response", id=call_id, response={"found": step}
                    ),
                ]
    return list(exporter.get_finished_spans())


def encode(spans: Sequence[Any], subject: str) -> tuple[bytes, dict[str, str]]:
    """One body of `spans` in `subject`'s encoding, and its headers."""
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    message = encode_spans(spans)
    if subject == "json":
        document = json_format.MessageToDict(message, use_integers_for_enums=True)
        for resource in document.get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if span.get(key):
                            import base64

                            span[key] = base64.b64decode(span[key]).hex()
        return json.dumps(document).encode(), {"Content-Type": "application/json"}
    body = message.SerializeToString()
    headers = {"Content-Type": "application/x-protobuf"}
    if subject == "protobuf_gzip":
        return gzip.compress(body), {**headers, "Content-Encoding": "gzip"}
    return body, headers


def _bodies(spans: list[Any], batch: int, subject: str) -> list[tuple[bytes, dict[str, str]]]:
    return [encode(spans[i : i + batch], subject) for i in range(0, len(spans), batch)]


def _store_directly(bodies: list[tuple[bytes, dict[str, str]]]) -> None:
    """The `writer_only` subject: each protobuf body decoded and stored in this process
    (`decode` + `writer.store_spans`), without HTTP, the key check or the broadcast."""
    from agentops.collector import tune_collector
    from sessions_app.api.models import ApiKey
    from sessions_app.otlp.decode import PROTOBUF, decode_request, spans_of
    from sessions_app.otlp.writer import store_spans

    key = ApiKey.objects.get(name="bench-otlp")
    tune_collector()  # as the server runs it (`agentops.asgi`), or its gen-2 scans count
    for body, _headers in bodies:
        records, _bad = spans_of(decode_request(body, PROTOBUF))
        store_spans(records, key)


def _throughput(client: Any, options: dict[str, Any]) -> dict[str, Any]:
    per_trace = 2 * int(options["rounds_per_trace"]) + 2
    traces = max(1, int(options["spans"]) // per_trace)
    rates: dict[str, list[float]] = {subject: [] for subject in SUBJECTS}
    for _ in range(int(options["rounds"])):
        for subject in SUBJECTS:
            spans = agent_spans(traces, int(options["rounds_per_trace"]))
            encoding = "protobuf" if subject == "writer_only" else subject
            bodies = _bodies(spans, int(options["batch"]), encoding)
            start = time.perf_counter()
            if subject == "writer_only":
                _store_directly(bodies)
            for body, headers in bodies if subject != "writer_only" else []:
                response = client.post("/v1/traces", content=body, headers=headers)
                response.raise_for_status()
            rates[subject].append(len(spans) / (time.perf_counter() - start))
    figures: dict[str, Any] = {"spans_per_round": traces * per_trace}
    for subject, values in rates.items():
        figures[f"{subject}_spans_per_s"] = round(statistics.median(values))
        figures[f"{subject}_spans_per_s_range"] = f"{min(values):,.0f}-{max(values):,.0f}"
    return figures


async def _latency(
    url: str, key: str, cookie: str, watchers: int, samples: int, pace: float
) -> dict[str, Any]:
    import httpx
    import websockets
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

    from sessions_app.benchmarks.children.otlp_child import agent_spans as make

    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/x-protobuf"}
    # A running turn: its first chat span (its root never arrives) names the session.
    first = [s for s in make(1, 0, "bench-live") if s.name.startswith("chat")]
    session_id = f"otlp-{first[0].context.trace_id:032x}"
    parent = SpanContext(first[0].context.trace_id, first[0].context.span_id, False,
                         TraceFlags(1))  # fmt: skip
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        (await client.post("/v1/traces", content=encode(first, "protobuf")[0])).raise_for_status()
        ws_url = f"ws://{url.removeprefix('http://')}/ws/sessions/{session_id}/?after=0"
        ws_headers = {"Cookie": cookie, "Origin": url}
        sockets = [
            await websockets.connect(ws_url, additional_headers=ws_headers) for _ in range(watchers)
        ]
        seen: list[set[int]] = [set() for _ in sockets]
        arrivals: list[list[tuple[int, float]]] = [[] for _ in sockets]

        async def listen(index: int, ws: Any) -> None:
            async for message in ws:
                text = message if isinstance(message, str) else message.decode()
                for found in _EVENT_ID.findall(text):
                    if int(found) not in seen[index]:
                        seen[index].add(int(found))
                        arrivals[index].append((int(found), time.perf_counter()))

        listeners = [asyncio.create_task(listen(i, ws)) for i, ws in enumerate(sockets)]
        await asyncio.sleep(0.5)  # the first span's replayed events arrive first
        delays: list[float] = []
        context = set_span_in_context(NonRecordingSpan(parent))
        tracer = _one_span_tracer()
        for index in range(samples):
            span = tracer.start_span("chat bench-model", context=context, attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.output.messages": json.dumps(
                    [_message("assistant", type="text", content=f"live {index}")]
                ),
            })  # fmt: skip
            span.end()
            body = encode([span], "protobuf")[0]
            marks = [len(a) for a in arrivals]
            start = time.perf_counter()
            (await client.post("/v1/traces", content=body)).raise_for_status()
            deadline = start + 5
            while time.perf_counter() < deadline and any(
                len(a) == m for a, m in zip(arrivals, marks, strict=True)
            ):
                await asyncio.sleep(0.001)
            delays += [(a[m][1] - start) * 1000 for a, m in zip(arrivals, marks, strict=True)
                       if len(a) > m]  # fmt: skip
            await asyncio.sleep(pace)
        for task in listeners:
            task.cancel()
        for ws in sockets:
            await ws.close()
    return {
        "p50_ms": round(_percentile(delays, 0.5), 1),
        "p95_ms": round(_percentile(delays, 0.95), 1),
        "max_ms": round(max(delays), 1),
        "delivered": len(delays),
        "expected": samples * watchers,
    }


def _one_span_tracer() -> Any:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider(resource=Resource.create({"service.name": "bench-otlp"}))
    return provider.get_tracer("bench.otlp.live")


def measure(url: str, key: str, cookie: str, options: dict[str, Any]) -> dict[str, Any]:
    """Throughput and latency figures (see the module)."""
    import httpx

    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        throughput = _throughput(client, options)
    latency = {
        f"w{count}": asyncio.run(
            _latency(url, key, cookie, count, int(options["samples"]), float(options["pace"]))
        )
        for count in options["watchers"]
    }
    return {"throughput": throughput, "latency": latency}


def main(argv: Sequence[str] | None = None) -> None:
    """Set Django up, migrate, start daphne, print `measure` as one JSON line; argv:
    ``[OPTIONS_JSON]``."""
    (raw,) = sys.argv[1:] if argv is None else argv
    options = json.loads(raw)
    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from sessions_app.api.keys import create_key
    from sessions_app.benchmarks.http_server import operator_cookie, serve_this_database

    call_command("migrate", verbosity=0)
    key = create_key("bench-otlp").key
    cookie = operator_cookie("bench-operator")
    log = Path(settings.BASE_DIR) / ".local" / "bench-otlp-daphne.log"
    with serve_this_database(log, AGENTOPS_OTLP_SPANS_PER_SECOND="0") as url:
        print(json.dumps(measure(url, key, cookie, options)))


if __name__ == "__main__":
    main()
