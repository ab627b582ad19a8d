"""Sub-agent sessions linked to their parent, whatever order their files arrive in.

A sub-agent's session (`Session.parent_session_id`, set by its parser) names the call
that started it (`parent_call_id`) once the parent's transcript says which: Claude Code
writes the sub-agent's `agentId` into the Task call's result (`toolUseResult.agentId`),
which the parent's tool event keeps in `raw`. `link_subagents` runs after every import,
so a sub-agent imported before its parent links when the parent arrives, and the stored
links are the same in any order of files.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q

from sessions_app.models import Event, Session

#: How a sub-agent's session id extends its parent's (`claude_tree.subagent_session_id`).
AGENT_INFIX = ".agent-"


def _call_for(parent_id: str, agent_id: str) -> str:
    """The id of the parent's call whose result names `agent_id`, or ""."""
    found = (
        Event.objects.filter(
            session_id=parent_id, role=Event.Role.TOOL, raw__toolUseResult__agentId=agent_id
        )
        .order_by("id")
        .values_list("tool_call_id", flat=True)
        .first()
    )
    return found or ""


def link_subagents(session_ids: Iterable[str]) -> int:
    """Fill `parent_call_id` of the sub-agents among, or of, `session_ids` whose parent's
    transcript names their call; returns how many were linked. Call it inside the import's
    transaction. One query, plus two per sub-agent still without a call."""
    ids = list(session_ids)
    if not ids:
        return 0
    pending = Session.objects.filter(
        Q(id__in=ids) | Q(parent_session_id__in=ids), parent_call_id=""
    ).exclude(parent_session_id="")
    linked = 0
    for session_id, parent_id in pending.values_list("id", "parent_session_id"):
        agent_id = session_id.removeprefix(parent_id + AGENT_INFIX)
        if agent_id == session_id:
            continue
        call_id = _call_for(parent_id, agent_id)
        if call_id:
            linked += Session.objects.filter(pk=session_id).update(parent_call_id=call_id)
    return linked
