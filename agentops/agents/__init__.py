"""Built-in agents for the runtime (framework-free: nothing here imports Django).

Every module exposes a factory ``make_agent(*, todo_store) -> agent`` usable as
``AGENTOPS_AGENT`` (a dotted path). An agent is what `agentops.runtime.Runner` runs: a
callable ``agent(context: list[Event]) -> AsyncIterator[Event]`` (docs/runtime.md §3).

- `agentops.agents.demo`: a scripted agent that streams, plans with the todo tools and
  can be asked to fail, hang or stop mid-tool-call (no network).
- `agentops.agents.openai_compat`: any OpenAI-compatible chat-completions endpoint,
  streamed, with the todo tools (docs/runtime.md §7).
"""

from __future__ import annotations

from agentops.agents.tools import ToolRunner, session_id_of

__all__ = ["ToolRunner", "session_id_of"]
