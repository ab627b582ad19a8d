"""Which traces are an agent's: only those land as sessions and turns.

An application instrumented with OpenTelemetry sends every trace it makes to the one
endpoint it is given: HTTP requests, database queries, a CLI's own tracing (Codex's
``trace_exporter``). Such a trace holds no span of an agent: it would land as a session
with one empty turn. A trace is an agent's when one of its spans carries an attribute of
the GenAI conventions or of a producer the mapping reads (`AGENT_KEYS`: names, or their
prefixes ending in a dot), or names a session (`mapping.SESSION_KEYS`). The spans of
other traces are kept without a session or turn (`landing.keep_unlanded`), so that a later
batch bringing the trace's agent spans lands it whole; the answer says so as a warning.
"""

from __future__ import annotations

from collections.abc import Sequence

from sessions_app.otlp.mapping import SESSION_KEYS, SpanLike
from sessions_app.otlp.messages import has_key_prefix

__all__ = ["AGENT_KEYS", "agent_trace"]

#: The GenAI conventions' names and those of the producers the mapping reads: OpenInference
#: (``openinference.span.kind``, ``llm.*``), OpenLLMetry (``traceloop.*``, ``llm.*``), the
#: Vercel AI SDK (``ai.*``), Google ADK (``gcp.vertex.agent.*``, ``adk.*``), Langfuse,
#: LangSmith, Claude Code (``prompt.id``) and Codex
#: (``conversation.id``); the GenAI span events the decoder keeps; the session keys.
AGENT_KEYS = (
    "gen_ai.",
    "span.events.gen_ai",
    "openinference.",
    "llm.",
    "traceloop.",
    "ai.",
    "gcp.vertex.agent.",
    "adk.",
    "langfuse.",
    "langsmith.",
    "prompt.id",
    "conversation.id",
    *SESSION_KEYS,
)


def agent_trace(spans: Sequence[SpanLike]) -> bool:
    """Whether one of `spans` (a trace's) is an agent's (the module docstring)."""
    return any(has_key_prefix(span.attributes, *AGENT_KEYS) for span in spans)
