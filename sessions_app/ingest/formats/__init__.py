"""One parser module per transcript format, registered here in detection order.

Each module defines one `FORMAT` (`sessions_app.ingest.registry`). Detection asks the
JSON Lines formats record by record (Codex before Claude Code: a rollout record is the
more specific shape), and the whole-document formats in the order below: the agentops
export and the Agents SDK RunState name themselves (`schema`, `$schemaVersion`), an ADK
session is an object with `events`, an Anthropic Messages list holds block types only
Anthropic writes, a Responses-API list holds typed items, and a chat message list is the
loosest shape, so it comes last. The ADK session database (SQLite) is found by its file
header before any text is read.
"""

from __future__ import annotations

from sessions_app.ingest.formats import (
    adk_database,
    agentops_export,
    anthropic_messages,
    claude_code,
    codex_cli,
    google_adk,
    openai_agents,
    openai_chat,
    openai_responses,
)
from sessions_app.ingest.registry import register

for _module in (
    codex_cli,
    claude_code,
    agentops_export,
    openai_agents,
    google_adk,
    anthropic_messages,
    openai_responses,
    openai_chat,
    adk_database,
):
    register(_module.FORMAT)
