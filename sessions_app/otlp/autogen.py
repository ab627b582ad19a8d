"""Microsoft AutoGen (``autogen-core`` / ``autogen-agentchat`` 0.7): its spans beside the
GenAI spans the mapping reads.

AutoGen sends, from its own code, an ``invoke_agent <name>`` span per agent run, an
``execute_tool <tool>`` span per tool run (``gen_ai.tool.call.id``, ``gen_ai.tool.name``;
no arguments nor result), a ``create_agent <name>`` span when an agent object is made,
and, when a team runs its agents, its agent runtime's messaging spans (``autogen
publish|send|process|create|ack <destination>``, ``messaging.operation``). Model calls are
spanned by the instrumentation of the model's client (e.g. ``chat`` spans of
``opentelemetry-instrumentation-openai-v2``).

A ``create_agent`` span is the root of a trace of its own (the agent is made outside
any run), and the runtime starts a new trace for most messages it delivers (its spans
link to the sender's instead of being its children). Such a trace, made only of these
spans, is no agent run: `bookkeeping_only` says so, and the receiver keeps its spans
without making a session or a turn of it (a later span of the trace that is a run's
makes it land). The run of an agent a team drives is a trace whose root is the
runtime's ``publish`` span: AutoGen leaves it unset when the run failed (the
``process`` and ``invoke_agent`` spans under it say so), so the turn's root is the
trace's first ``invoke_agent`` span (`run_root`): the turn ends, completes or fails with
the agent's run.

The runtime's spans carry the whole message they deliver as JSON in their ``message``
attribute (every chat message, tool call and result, the text of a tool's exception
handed back to the model), whatever the content settings: the mapping reads messages
from the GenAI spans only, and `without_runtime_message` drops that attribute before a
span is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessions_app.otlp.decode import SpanRecord
    from sessions_app.otlp.mapping import SpanLike

__all__ = ["bookkeeping_only", "run_root", "without_runtime_message"]

#: The runtime span's copy of the message it delivers (never kept).
RUNTIME_MESSAGE = "message"


def _runtime(span: SpanLike) -> bool:
    """An AutoGen agent runtime's messaging span."""
    return span.name.startswith("autogen ") and "messaging.operation" in span.attributes


def _bookkeeping(span: SpanLike) -> bool:
    return _runtime(span) or (
        span.attributes.get("gen_ai.operation.name") == "create_agent"
        and span.attributes.get("gen_ai.system") == "autogen"
    )


def bookkeeping_only(spans: Sequence[SpanLike]) -> bool:
    """Whether every one of `spans` (a trace's) is AutoGen's ``create_agent`` or agent
    runtime messaging span: no agent run, nothing to land (module docstring)."""
    return bool(spans) and all(_bookkeeping(span) for span in spans)


def run_root(spans: Sequence[SpanLike], roots: Sequence[SpanLike]) -> SpanLike | None:
    """The root of the turn of `spans`: the first of their `roots` (spans without a
    parent; None when none arrived yet), unless it is AutoGen's runtime span: then the
    first ``invoke_agent`` span, or that root while the trace holds none (a team's
    manager calling a model outside any agent run ends with its runtime span)."""
    root = min(roots, key=lambda s: s.start_at) if roots else None
    if root is None or not _runtime(root):
        return root
    runs = [
        span
        for span in spans
        if span.attributes.get("gen_ai.operation.name") == "invoke_agent"
        and span.attributes.get("gen_ai.system") == "autogen"
    ]
    return min(runs, key=lambda s: s.start_at) if runs else root


def without_runtime_message(attributes: dict[str, Any], record: SpanRecord) -> dict[str, Any]:
    """`attributes` (of `record`) without the ``message`` attribute when `record` is an
    AutoGen runtime's span (the module docstring); the same dict otherwise."""
    if RUNTIME_MESSAGE in attributes and _runtime(record):
        return {k: v for k, v in attributes.items() if k != RUNTIME_MESSAGE}
    return attributes
