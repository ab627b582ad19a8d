"""The next-context page computed in one streaming pass, holding one page of rows.

`explain_product_projection` and `context_rows` need the whole history in memory, and
the page renders only `per_page` of its rows. The rules they apply are local:

- the default projection (docs/runtime.md §4) decides per group, a maximal run of events
  with one turn id;
- recorded outcomes and the tool-protocol inspection (docs/runtime.md §5) look only at an
  assistant event and the run of tool events right after it.

So the live history (state-only events set aside) is cut into *pieces* right before an
event that is not a tool result and starts another turn; each piece is projected and
explained alone with the same functions, its groups, context indexes and positions are
shifted by what came before, and the final check (the tool protocol of the whole
context) runs as a streaming pass over the context (`store.stream.protocol_chunks`).
Rows are counted per piece and built (`context_rows`, Markdown rendered) only for the
pieces the page shows. `stream_context` gives the same rows, counts, issues and error as
the whole computation (a property test compares both); a piece is at least a whole turn,
so one enormous turn is still held whole.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page, Paginator

from agentops.runtime.errors import ToolExecutionUnknownError
from agentops.runtime.model import Event, Role
from agentops.runtime.projection import ProjectionExplanation, explain_projection
from agentops.runtime.protocol import OrphanResult, ToolProtocolIssue, inspect_orphan_results
from agentops.runtime.session import Turn
from sessions_app.pages.context_rows import (
    ContextRow,
    context_rows,
    estimate_tokens,
    mark_refused,
)
from sessions_app.projector import (
    ProductExplanation,
    RecordedOutcome,
    apply_tool_outcomes,
    is_state_only,
)
from sessions_app.store.stream import inspect_stream, protocol_chunks

__all__ = ["StreamedContext", "Tally", "stream_context"]

_EMPTY = ProjectionExplanation(entries=(), context=())


@dataclass(frozen=True, slots=True)
class Tally:
    """A count standing where the page reads only a length (``|length``, truthiness)."""

    count: int

    def __len__(self) -> int:
        return self.count


@dataclass(frozen=True, slots=True)
class StreamedExplanation:
    """What the page reads of a `ProjectionExplanation`: sizes, issues, error."""

    context: Tally
    notices: Tally
    issues: tuple[ToolProtocolIssue, ...]
    error: ToolExecutionUnknownError | None


@dataclass(frozen=True, slots=True)
class StreamedContext:
    """What the page reads of a `ProductExplanation`, and the page of rows shown."""

    explanation: StreamedExplanation
    compacted: Tally
    compaction: Event | None
    orphans: tuple[OrphanResult, ...]
    page: Page[ContextRow]
    tokens: int = 0
    """Estimated tokens of everything the context would send (`context_rows.TOKENIZER`)."""
    new_count: int = 0
    """Stored events of the latest turn (new since it started)."""
    latest_turn: Turn | None = None


@dataclass
class _Piece:
    """The inputs of one run of rows, kept only while the page may show it."""

    first_row: int
    count: int
    compacted: tuple[Event, ...] = ()
    product: ProductExplanation | None = None
    left: list[Event] = field(default_factory=list)

    def rows(
        self, compaction: Event | None, compacted_count: int, latest_turn_id: str
    ) -> list[ContextRow]:
        if self.product is None:
            product = ProductExplanation(_EMPTY, compacted=self.compacted, compaction=compaction)
            return context_rows(product, (), latest_turn_id)
        product = dataclasses.replace(self.product, compaction=compaction)
        return context_rows(product, self.left, latest_turn_id, compacted_count=compacted_count)


class _Window(Sequence[ContextRow]):
    """All rows by length; only the kept ones can be read (what the paginator slices)."""

    def __init__(self, total: int, rows: dict[int, ContextRow]) -> None:
        self.total, self.kept = total, rows

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self.kept[i] for i in range(*index.indices(self.total))]
        return self.kept[index]


class _Rows:
    """Counts rows piece by piece and keeps the pieces a page may show: the first page,
    the requested one and the last (the page numbering of Django's `Paginator`)."""

    def __init__(self, per_page: int, wanted: int | None) -> None:
        self.per_page, self.total = per_page, 0
        self.ranges = [(0, per_page)]
        if wanted is not None and wanted >= 1:
            self.ranges.append(((wanted - 1) * per_page, wanted * per_page))
        self.kept: list[_Piece] = []
        self.tail: deque[_Piece] = deque()

    def add(self, piece: _Piece) -> None:
        end = piece.first_row + piece.count
        if any(start < end and piece.first_row < stop for start, stop in self.ranges):
            self.kept.append(piece)
        self.tail.append(piece)
        while len(self.tail) > 1 and end - self.tail[1].first_row >= self.per_page:
            self.tail.popleft()
        self.total = end

    def page(
        self, number: str | None, compaction: Event | None, compacted: int, latest_turn_id: str
    ) -> Page[Any]:
        rows: dict[int, ContextRow] = {}
        for piece in {id(p): p for p in [*self.kept, *self.tail]}.values():
            built = piece.rows(compaction, compacted, latest_turn_id)
            rows.update(
                zip(range(piece.first_row, piece.first_row + piece.count), built, strict=True)
            )
        paginator = Paginator(_Window(self.total, rows), self.per_page)
        return paginator.get_page(number or paginator.num_pages)


class _ContextCheck:
    """The tool protocol of the whole context (docs/runtime.md §4 step 4), fed piece by
    piece and inspected as soon as a run of tool results cannot go on."""

    def __init__(self) -> None:
        self.held: list[Event] = []
        self.offset = 0
        self.found: list[ToolProtocolIssue] = []

    def feed(self, events: Iterable[Event]) -> None:
        self.held.extend(events)
        cut = next(iter(protocol_chunks([self.held])), [])
        if len(cut) < len(self.held):
            self._inspect(cut)
            self.held = self.held[len(cut) :]

    def issues(self) -> list[ToolProtocolIssue]:
        self._inspect(self.held)
        self.held = []
        return self.found

    def _inspect(self, events: list[Event]) -> None:
        found = inspect_stream([events])
        self.found.extend(
            dataclasses.replace(issue, position=issue.position + self.offset)
            for issue in found.issues
        )
        self.offset += len(events)


def _page_number(number: str | None) -> int | None:
    try:
        return int(number) if number else None
    except ValueError:
        return None


class _Queue:
    """Events in id order, taken from the front by id (`below`)."""

    def __init__(self, events: Iterable[Event]) -> None:
        self.events = iter(events)
        self.head = next(self.events, None)

    def below(self, limit: int | None) -> list[Event]:
        """The events not taken yet with id < `limit` (all of them for None)."""
        taken = []
        while self.head is not None and (limit is None or self.head.id < limit):
            taken.append(self.head)
            self.head = next(self.events, None)
        return taken


def _batches(events: Iterable[Event], size: int = 512) -> Iterator[list[Event]]:
    batch: list[Event] = []
    for event in events:
        batch.append(event)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _live_pieces(
    projected: Iterable[Event], outcomes: Mapping[tuple[int, str], RecordedOutcome]
) -> Iterator[list[Event]]:
    """The live history without state-only events, recorded outcomes applied
    (`apply_tool_outcomes`, on pieces cut before a non-tool event: it looks only at a
    call's run of tool results), in pieces cut right before an
    event that is not a tool result and has another turn id than the one before it: so
    no group (docs/runtime.md §4) and no tool run (§5) is split."""
    held: list[Event] = []
    for chunk in protocol_chunks(_batches(projected)):
        for event in apply_tool_outcomes(chunk, outcomes):
            role = event.content.role
            if held and role is not Role.TOOL and event.turn_id != held[-1].turn_id:
                yield held
                held = []
            held.append(event)
    if held:
        yield held


def _shifted(explanation: ProjectionExplanation, groups: int, context: int, events: int) -> Any:
    issues: dict[int, ToolProtocolIssue] = {}
    entries = []
    for entry in explanation.entries:
        issue = entry.issue
        if issue is not None:
            issue = issues.setdefault(
                id(issue), dataclasses.replace(issue, position=issue.position + events)
            )
        index = entry.context_index
        entries.append(
            dataclasses.replace(
                entry,
                group=entry.group + groups,
                issue=issue,
                context_index=None if index is None else index + context,
            )
        )
    return dataclasses.replace(explanation, entries=tuple(entries), issues=(), error=None)


def stream_context(
    turns: Mapping[str, Turn],
    events: Iterable[Event],
    archived: Iterable[Event],
    outcomes: Mapping[tuple[int, str], RecordedOutcome],
    *,
    live_start: int,
    per_page: int,
    page: str | None,
    awaiting_user: frozenset[str] = frozenset(),
) -> StreamedContext:
    """The context page of a session in one pass: `events` its active events and
    `archived` its archived, not deleted ones (both in id order, read lazily), `turns` its
    turn records by id, `outcomes` its recorded outcomes, `live_start` the id of its last
    compaction event (0: none), `page` the page asked for (None: the last),
    `awaiting_user` the ids of calls the source marks as waiting for a person. Equal to
    `context_rows(explain_product_projection(...), archived)` paginated by `per_page`."""
    rows = _Rows(per_page, _page_number(page))
    latest = max(turns.values(), key=lambda turn: (turn.started_at, turn.id), default=None)
    latest_turn_id = latest.id if latest is not None else ""
    check = _ContextCheck()
    compacted: list[Event] = []
    compacted_count = 0
    orphans: list[OrphanResult] = []
    compaction: Event | None = None
    state: list[Event] = []
    abandoned = _Queue(archived)
    counts = {"groups": 0, "context": 0, "events": 0, "notices": 0, "tokens": 0, "new": 0}

    def flush_compacted() -> None:
        nonlocal compacted
        if compacted:
            rows.add(_Piece(rows.total, len(compacted), compacted=tuple(compacted)))
            compacted = []

    def projected() -> Iterator[Event]:
        # Compacted events come first; state-only ones are set aside (never projected).
        nonlocal compacted_count, compaction
        for event in events:
            if event.id < live_start:
                compacted.append(event)
                compacted_count += 1
                if len(compacted) == per_page:
                    flush_compacted()
                continue
            flush_compacted()
            if compaction is None and live_start:
                compaction = event
            if is_state_only(event):
                state.append(event)
            else:
                yield event
        flush_compacted()

    for piece in _live_pieces(projected(), outcomes):
        ids = [turn for turn in {event.turn_id for event in piece} if turn in turns]
        explanation = explain_projection([turns[turn] for turn in sorted(ids)], piece)
        shifted = _shifted(explanation, counts["groups"], counts["context"], counts["events"])
        piece_orphans = inspect_orphan_results(piece)
        orphans.extend(
            dataclasses.replace(o, position=o.position + counts["events"]) for o in piece_orphans
        )
        check.feed(explanation.context)
        counts["tokens"] += sum(estimate_tokens(event) for event in explanation.context)
        counts["new"] += sum(
            1 for event in piece if latest_turn_id and event.turn_id == latest_turn_id
        )
        # A stored event not sent goes before the first stored event after it.
        last_id = max(event.id for event in piece)
        piece_state = [event for event in state if event.id < last_id]
        state = state[len(piece_state) :]
        left = abandoned.below(last_id)
        product = ProductExplanation(
            explanation=shifted,
            orphans=tuple(piece_orphans),
            state_only=tuple(piece_state),
            awaiting_user=awaiting_user,
        )
        count = len(shifted.entries) + len(left) + len(piece_state)
        rows.add(_Piece(rows.total, count, product=product, left=left))
        counts["groups"] += explanation.entries[-1].group + 1 if explanation.entries else 0
        counts["context"] += len(explanation.context)
        counts["events"] += len(piece)
        counts["notices"] += len(explanation.notices)
    rest = abandoned.below(None)
    if rest or state:
        product = ProductExplanation(explanation=_EMPTY, state_only=tuple(state))
        rows.add(_Piece(rows.total, len(rest) + len(state), product=product, left=rest))
    issues = check.issues()
    shown = rows.page(page, compaction, compacted_count, latest_turn_id)
    if issues:
        mark_refused(list(shown))  # the run refuses the history: no row would be sent
    return StreamedContext(
        explanation=StreamedExplanation(
            context=Tally(counts["context"]),
            notices=Tally(counts["notices"]),
            issues=tuple(issues),
            error=issues[0].to_error() if issues else None,
        ),
        compacted=Tally(compacted_count),
        compaction=compaction,
        orphans=tuple(orphans),
        page=shown,
        tokens=counts["tokens"],
        new_count=counts["new"],
        latest_turn=turns.get(latest_turn_id),
    )
