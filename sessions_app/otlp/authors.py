"""Who an event of a trace is by (`Event.author`, shown beside it, never sent to a model).

A user message is by ``user``, as an import's and the runner's are. The rest is by the
agent whose span it came from: its ``gen_ai.agent.name``, else the nearest ancestor
span's (Strands, AutoGen and OpenLLMetry name the agent on its ``invoke_agent`` span
alone, not on the model and tool spans under it; in a team each agent's events are its
own), else the resource's ``service.name``, else ``agent``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

__all__ = ["USER", "agent_names", "author_of"]

USER = "user"
AGENT_NAME = "gen_ai.agent.name"


class _Span(Protocol):
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]


def agent_names(spans: Iterable[_Span]) -> dict[str, str]:
    """{span id: the name of the agent it runs under: its own, else its nearest ancestor's}
    for the spans of one trace that are under a named agent."""
    by_id = {span.span_id: span for span in spans}
    found: dict[str, str] = {}
    for span in by_id.values():
        chain: list[str] = []
        current: _Span | None = span
        name = ""
        while current is not None and current.span_id not in found and len(chain) < 256:
            chain.append(current.span_id)
            name = str(current.attributes.get(AGENT_NAME) or "")
            if name:
                break
            current = by_id.get(current.parent_span_id) if current.parent_span_id else None
        if not name and current is not None:
            name = found.get(current.span_id, "")
        for span_id in chain:  # each span of the walk runs under the same agent
            if name and span_id not in found:
                found[span_id] = name
            elif not name:
                break
    return found


def author_of(attrs: dict[str, Any], agent: str = "") -> str:
    """The author of a span's agent events: `agent` (`agent_names`), else its resource's
    service name, else ``agent``."""
    name = agent or attrs.get(AGENT_NAME) or attrs.get("resource.service.name")
    return str(name)[:255] if name else "agent"
