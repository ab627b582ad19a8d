"""The rows of the next-context page: the product projection (`sessions_app.projector`)
with the compacted part, the abandoned branch and orphan results marked (presentation
only; the rules are the runtime's and the projector's).

Each row carries a token estimate (`TOKENIZER`: no tokenizer is installed, so it is the
documented heuristic of about four characters per token of the event's JSON content) and
whether it is new since the latest turn started (what the previous turn was not sent).
When the projection fails, no row would be sent: the run refuses the history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentops.runtime.model import Event
from agentops.runtime.projection import EntryKind
from sessions_app.pages.presenters import RuntimeEventView, runtime_event
from sessions_app.projector import COMPACTION_AUTHOR, OUTCOME_AUTHOR, ProductExplanation

#: How token counts are estimated (named on the page).
TOKENIZER = "≈ characters ÷ 4 (no tokenizer installed)"
#: What the page shows for each kind of row (the kind itself is the CSS class).
VERDICTS = {
    "kept": "sent",
    "notice": "note added",
    "dropped": "not sent",
    "cut": "left out",
    "compacted": "summarised",
    "state": "not sent",
    "abandoned": "not sent",
    "refused": "would not be sent",
}
#: The label of every row when the projection fails.
REFUSED_LABEL = "would not be sent: the run refuses this history"

#: The label of an orphan result, wherever it is shown.
ORPHAN_LABEL = "orphan result: answers no tool call; providers reject a history holding it"


@dataclass
class ContextRow:
    """One row: `kind` (kept, dropped, cut, notice, compacted, state or abandoned), why it is
    there (`label`), its place in the context (`context_index`, 0-based, or None) and
    whether it is an orphan result the context would send."""

    kind: str
    label: str
    view: RuntimeEventView
    context_index: int | None = None
    orphan: bool = False
    tokens: int = 0
    new: bool = False

    @property
    def verdict(self) -> str:
        """The plain word for `kind` shown on the row's badge."""
        return VERDICTS.get(self.kind, self.kind)


def estimate_tokens(event: Event) -> int:
    """Estimated tokens of `event`'s content (`TOKENIZER`): its JSON, without empty
    fields, in characters divided by four, rounded up."""
    return -(-len(event.content.model_dump_json(exclude_defaults=True)) // 4)


def compaction_facts(raw: Any) -> dict[str, Any]:
    """The facts of a compaction event's `raw` ({"compaction": {...}}), or {}."""
    facts = raw.get("compaction") if isinstance(raw, dict) else None
    return facts if isinstance(facts, dict) else {}


def context_rows(
    product: ProductExplanation,
    abandoned: Sequence[Event],
    latest_turn_id: str = "",
    *,
    compacted_count: int | None = None,
) -> list[ContextRow]:
    """Every row of the page in conversation order: the compacted events (greyed), then
    the runtime's explanation of the live history, with the stored events of abandoned
    branches and the state-only events (never sent) placed by id among them. Each row
    carries its token estimate; rows of `latest_turn_id` are marked new.
    `compacted_count` (default: `len(product.compacted)`) is the number of compacted
    events the compaction summary names, for a piece of the page built alone
    (`context_stream`). When the whole projection fails, `mark_refused` relabels them."""
    rows = _rows(product, abandoned, compacted_count)
    for row in rows:
        row.tokens = estimate_tokens(row.view.event)
        row.new = bool(latest_turn_id) and row.view.event.turn_id == latest_turn_id
    return rows


def mark_refused(rows: Sequence[ContextRow]) -> None:
    """Say on every row that would have been sent that it is not: the run refuses the
    history (`REFUSED_LABEL`)."""
    for row in rows:
        if row.kind in {"kept", "notice"}:
            row.label, row.context_index = f"{REFUSED_LABEL} ({row.label})", None
            row.kind = "refused"


def _rows(
    product: ProductExplanation, abandoned: Sequence[Event], compacted_count: int | None
) -> list[ContextRow]:
    rows: list[ContextRow] = []
    if compacted_count is None:
        compacted_count = len(product.compacted)
    compaction_id = product.compaction.id if product.compaction else 0
    for event in product.compacted:
        rows.append(
            ContextRow(
                kind="compacted",
                label=f"compacted: summarised by the compaction at event {compaction_id}, not sent",
                view=runtime_event(event),
            )
        )
    orphan_ids = {orphan.event_id for orphan in product.orphans if orphan.event_id}
    state_ids = {event.id for event in product.state_only}
    left = sorted([*abandoned, *product.state_only], key=lambda event: event.id)
    for entry in product.explanation.entries:
        event = entry.event
        while left and event.id and left[0].id < event.id:
            rows.append(_not_sent(left.pop(0), state_ids))
        label = entry.reason
        if entry.kind is EntryKind.KEPT and entry.turn is None:
            label = "no turn record: sent as stored"
        if event.id == 0 and event.author == OUTCOME_AUTHOR:
            label = "recorded tool outcome (not stored; closes the call)"
        elif event.author == COMPACTION_AUTHOR and entry.kind is EntryKind.KEPT:
            label = (
                f"compaction summary: the agent resumes from here ({compacted_count} "
                "earlier events were summarised)"
            )
        if entry.kind is EntryKind.CUT and entry.issue is not None:
            waiting = [c.id for c in entry.issue.tool_calls if c.id in product.awaiting_user]
            if waiting:
                label = f"{label}; awaiting the user: {', '.join(waiting)}"
        orphan = event.id in orphan_ids
        rows.append(
            ContextRow(
                kind=entry.kind.value,
                label=f"{label}; {ORPHAN_LABEL}" if orphan else label,
                view=runtime_event(event),
                context_index=entry.context_index,
                orphan=orphan,
            )
        )
    rows.extend(_not_sent(event, state_ids) for event in left)
    return rows


def _not_sent(event: Event, state_ids: set[int]) -> ContextRow:
    """The row of a stored event the context leaves out: a state change, or an event of
    an abandoned branch."""
    if event.id in state_ids:
        return ContextRow(
            kind="state", label="state change only (nothing to send)", view=runtime_event(event)
        )
    return ContextRow(
        kind="abandoned",
        label="abandoned branch: the conversation was rewound past it; not sent",
        view=runtime_event(event),
    )
