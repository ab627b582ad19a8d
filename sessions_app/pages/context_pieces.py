"""The pieces of the context page's pass (`context_stream`): a run of rows kept while the
page may show it, the row counter that keeps the pieces a page shows, and the tool-protocol
check of the whole context fed piece by piece."""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentops.runtime.model import Event
from agentops.runtime.projection import ProjectionExplanation
from agentops.runtime.protocol import ToolProtocolIssue
from sessions_app.pages.context_rows import ContextRow, context_rows
from sessions_app.projector import ProductExplanation
from sessions_app.store.stream import inspect_stream, protocol_chunks

__all__ = ["EMPTY", "ContextCheck", "Piece", "Rows", "Window"]

EMPTY = ProjectionExplanation(entries=(), context=())


@dataclass
class Piece:
    """The inputs of one run of rows, kept only while the page may show it."""

    first_row: int
    count: int
    compacted: tuple[Event, ...] = ()
    product: ProductExplanation | None = None
    left: list[Event] = field(default_factory=list)

    def issue_ids(self) -> set[int]:
        if self.product is None:
            return set()
        return {e.issue.event_id for e in self.product.explanation.entries if e.issue is not None}

    def rows(
        self,
        compaction: Event | None,
        compacted_count: int,
        latest_turn_id: str,
        awaiting: frozenset[str],
    ) -> list[ContextRow]:
        if self.product is None:
            product = ProductExplanation(EMPTY, compacted=self.compacted, compaction=compaction)
            return context_rows(product, (), latest_turn_id)
        product = dataclasses.replace(self.product, compaction=compaction, awaiting_user=awaiting)
        return context_rows(product, self.left, latest_turn_id, compacted_count=compacted_count)


class Window(Sequence[ContextRow]):
    """All rows by length; only the kept ones can be read (what the paginator slices)."""

    def __init__(self, total: int, rows: dict[int, ContextRow]) -> None:
        self.total, self.kept = total, rows

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, index: Any) -> Any:
        # A row another pass builds reads None (`StreamedContext.base`).
        if isinstance(index, slice):
            return [self.kept.get(i) for i in range(*index.indices(self.total))]
        return self.kept.get(index)


class Rows:
    """Counts rows piece by piece and keeps the pieces a page may show: the first page,
    the requested one and the last (the page numbering of Django's `Paginator`), from
    row `base` on (the rows before it are another pass's)."""

    def __init__(self, per_page: int, wanted: int | None, base: int = 0) -> None:
        self.per_page, self.total = per_page, base
        self.ranges = [(0, per_page)]
        if wanted is not None and wanted >= 1:
            self.ranges.append(((wanted - 1) * per_page, wanted * per_page))
        self.kept: list[Piece] = []
        self.tail: deque[Piece] = deque()

    def add(self, piece: Piece) -> None:
        end = piece.first_row + piece.count
        if any(start < end and piece.first_row < stop for start, stop in self.ranges):
            self.kept.append(piece)
        self.tail.append(piece)
        while len(self.tail) > 1 and end - self.tail[1].first_row >= self.per_page:
            self.tail.popleft()
        self.total = end

    def built(
        self,
        compaction: Event | None,
        compacted: int,
        latest_turn_id: str,
        pending_of: Callable[[Collection[int]], frozenset[str]],
    ) -> dict[int, ContextRow]:
        """The rows of the kept pieces by row index; `pending_of(assistant ids)` gives
        the call ids awaiting a person among those of the issues the pieces cut at."""
        pieces = list({id(p): p for p in [*self.kept, *self.tail]}.values())
        awaiting = pending_of(sorted(set().union(*(p.issue_ids() for p in pieces))))
        rows: dict[int, ContextRow] = {}
        for piece in pieces:
            built = piece.rows(compaction, compacted, latest_turn_id, awaiting)
            rows.update(
                zip(range(piece.first_row, piece.first_row + piece.count), built, strict=True)
            )
        return rows


class ContextCheck:
    """The tool protocol of the whole context (docs/runtime.md §4 step 4), fed piece by
    piece and inspected as soon as a run of tool results cannot go on; keeps the first
    issue and the count."""

    def __init__(
        self, held: Sequence[Event], offset: int, first: ToolProtocolIssue | None, count: int
    ) -> None:
        self.held: list[Event] = list(held)
        self.offset = offset
        self.first, self.count = first, count

    def feed(self, events: Iterable[Event]) -> None:
        self.held.extend(events)
        cut = next(iter(protocol_chunks([self.held])), [])
        if len(cut) < len(self.held):
            self._inspect(cut)
            self.held = self.held[len(cut) :]

    def finish(self) -> None:
        self._inspect(self.held)
        self.held = []

    def _inspect(self, events: list[Event]) -> None:
        found = inspect_stream([events]).issues
        if found and self.first is None:
            self.first = dataclasses.replace(found[0], position=found[0].position + self.offset)
        self.count += len(found)
        self.offset += len(events)
