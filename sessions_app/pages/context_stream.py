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

The pass can also start where an earlier one stopped: its state right after a piece
(`Resume`: counts, the first issue of the context so far, the context's tail not yet
inspected) is all that the rows and totals of later pieces depend on, so a pass over
the events after `Resume.upto` gives the same page as one over every event
(`context_window` keeps such a state per session; a property test compares both).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page, Paginator

from agentops.runtime.errors import ToolExecutionUnknownError
from agentops.runtime.model import Event, Role
from agentops.runtime.projection import ProjectionExplanation, explain_projection
from agentops.runtime.protocol import ToolProtocolIssue, inspect_orphan_results
from agentops.runtime.session import Turn, TurnStatus
from sessions_app.pages.context_pieces import EMPTY, ContextCheck, Piece, Rows, Window
from sessions_app.pages.context_rows import ContextRow, estimate_tokens, mark_refused
from sessions_app.projector import (
    ProductExplanation,
    RecordedOutcome,
    apply_tool_outcomes,
    is_state_only,
)
from sessions_app.store.stream import protocol_chunks

__all__ = ["Resume", "StreamedContext", "Tally", "Window", "stream_context"]


@dataclass(frozen=True, slots=True)
class Tally:
    """A count standing where the page reads only a length (``|length``, truthiness)."""

    count: int

    def __len__(self) -> int:
        return self.count


@dataclass(frozen=True, slots=True)
class Resume:
    """The pass's state right after a piece: what the rows and totals of the pieces
    after it depend on. `upto` is the last stored event id the pass covered (0: none),
    `rows` the rows before, `groups`, `context`, `events` what `_shifted` adds,
    `compacted` the compacted events, `orphans` the orphan results so far, `issue` the
    first tool-protocol issue of the context so far and `issues` their number,
    `offset` the context events inspected, `held` those not inspected yet (a run of tool
    results may still answer them), `tokens`, `notices` what the page totals."""

    upto: int = 0
    rows: int = 0
    groups: int = 0
    context: int = 0
    events: int = 0
    notices: int = 0
    tokens: int = 0
    compacted: int = 0
    orphans: int = 0
    issues: int = 0
    issue: ToolProtocolIssue | None = None
    offset: int = 0
    held: tuple[Event, ...] = ()
    new: int = 0
    latest: str = ""
    """`new` events so far of turn `latest`, the latest turn then (a later one has none)."""


@dataclass(frozen=True, slots=True)
class StreamedExplanation:
    """What the page reads of a `ProjectionExplanation`: sizes, the first issue, error."""

    context: Tally
    notices: Tally
    issues: tuple[ToolProtocolIssue, ...]
    """The first tool-protocol issue of the context (the error's), or none."""
    error: ToolExecutionUnknownError | None
    issue_count: int = 0


@dataclass(frozen=True, slots=True)
class StreamedContext:
    """What the page reads of a `ProductExplanation`, and the page of rows shown."""

    explanation: StreamedExplanation
    compacted: Tally
    compaction: Event | None
    orphans: Tally
    page: Page[ContextRow]
    tokens: int = 0
    """Estimated tokens of everything the context would send (`context_rows.TOKENIZER`)."""
    new_count: int = 0
    """Stored events of the latest turn (new since it started)."""
    latest_turn: Turn | None = None
    checkpoints: tuple[Resume, ...] = ()
    """States after pieces before which the pass could resume (`checkpoint`), oldest
    first: the newest ones, back to one at least `margin` pages before the end."""
    start: Resume | None = None
    """The state the pass started from (None: the first event)."""
    rows: Mapping[int, ContextRow] = field(default_factory=dict)
    """The rows built, by row index (those of `page` among them)."""

    @property
    def base(self) -> int:
        """The first row this pass built: the rows before it are not in `rows`."""
        return self.start.rows if self.start is not None else 0


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
    projected: Iterable[Event],
    outcomes: Mapping[tuple[int, str], RecordedOutcome],
    batch: int = 512,
) -> Iterator[list[Event]]:
    """The live history without state-only events, recorded outcomes applied
    (`apply_tool_outcomes`, on pieces cut before a non-tool event: it looks only at a
    call's run of tool results), in pieces cut right before an
    event that is not a tool result and has another turn id than the one before it: so
    no group (docs/runtime.md §4) and no tool run (§5) is split."""
    held: list[Event] = []
    for chunk in protocol_chunks(_batches(projected, batch)):
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


_COUNTS = ("groups", "context", "events", "notices", "tokens", "orphans")


class _Enough(Exception):
    """Raised inside the pass once the rows up to `stop_row` are counted."""


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
    start: Resume | None = None,
    compaction: Event | None = None,
    checkpoint: Callable[[Sequence[Event]], bool] | None = None,
    pending_of: Callable[[Collection[int]], frozenset[str]] | None = None,
    stop_row: int | None = None,
    margin: int = 2,
) -> StreamedContext:
    """The context page of a session in one pass: `events` its active events and
    `archived` its archived, not deleted ones (both in id order, read lazily), `turns` its
    turn records by id, `outcomes` its recorded outcomes, `live_start` the id of its last
    compaction event (0: none), `page` the page asked for (None: the last),
    `awaiting_user` the ids of calls the source marks as waiting for a person. Equal to
    `context_rows(explain_product_projection(...), archived)` paginated by `per_page`.

    From `start` (a `Resume` of an earlier pass; then `events`, `archived`, `turns` and
    `outcomes` need only be those after `start.upto`, and `compaction` is that event):
    the same page, counts and error. `checkpoint(piece)` says whether the pass may
    resume after that piece (it is asked of each piece in order, and a false answer
    holds for every later one); the states after the pieces before the last one are
    returned, back to one at least `margin + 1` pages before the end.
    `pending_of(assistant ids)` gives the awaiting call ids instead of `awaiting_user`.
    With `stop_row`, the pass stops once that many rows are counted (the rows before it
    are built; the totals are then partial)."""
    start = start or Resume()
    pending = pending_of or (lambda _ids: awaiting_user)
    rows = Rows(per_page, _page_number(page), start.rows)
    latest = max(turns.values(), key=lambda turn: (turn.started_at, turn.id), default=None)
    latest_turn_id = latest.id if latest is not None else ""
    check = ContextCheck(start.held, start.offset, start.issue, start.issues)
    compacted: list[Event] = []
    compacted_count = start.compacted
    counts = {name: getattr(start, name) for name in _COUNTS}
    counts["new"] = start.new if start.latest == latest_turn_id else 0
    state: list[Event] = []
    abandoned = _Queue(archived)
    found_compaction = compaction
    saved: deque[Resume] = deque()
    candidate: Resume | None = None
    may_checkpoint = checkpoint is not None

    def flush_compacted() -> None:
        nonlocal compacted
        if compacted:
            rows.add(Piece(rows.total, len(compacted), compacted=tuple(compacted)))
            compacted = []
            if stop_row is not None and rows.total >= stop_row:
                raise _Enough

    def projected() -> Iterator[Event]:
        # Compacted events come first; state-only ones are set aside (never projected).
        nonlocal compacted_count, found_compaction
        for event in events:
            if event.id < live_start:
                compacted.append(event)
                compacted_count += 1
                if len(compacted) == per_page:
                    flush_compacted()
                continue
            flush_compacted()
            if found_compaction is None and live_start:
                found_compaction = event
            if is_state_only(event):
                state.append(event)
            else:
                yield event
        flush_compacted()

    try:
        # A pass that stops reads ahead at most a page.
        batch = 512 if stop_row is None else max(1, min(512, per_page))
        for piece in _live_pieces(projected(), outcomes, batch):
            if candidate is not None:  # a piece follows: that one is complete
                first = turns.get(piece[0].turn_id)
                if first is None or first.status is not TurnStatus.RUNNING:
                    # The context goes on with a non-tool event (this piece's first, or
                    # its turn's notice): what is held can be inspected now, not kept.
                    check.finish()
                    candidate = dataclasses.replace(
                        candidate, issues=check.count, issue=check.first, offset=check.offset,
                        held=(),
                    )  # fmt: skip
                saved.append(candidate)
                candidate = None
                while len(saved) > 1 and saved[1].rows <= rows.total - (margin + 1) * per_page:
                    saved.popleft()  # a later one is far enough from the end
            ids = [turn for turn in {event.turn_id for event in piece} if turn in turns]
            explanation = explain_projection([turns[turn] for turn in sorted(ids)], piece)
            shifted = _shifted(explanation, counts["groups"], counts["context"], counts["events"])
            piece_orphans = inspect_orphan_results(piece)
            counts["orphans"] += len(piece_orphans)
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
            rows.add(Piece(rows.total, count, product=product, left=left))
            counts["groups"] += explanation.entries[-1].group + 1 if explanation.entries else 0
            counts["context"] += len(explanation.context)
            counts["events"] += len(piece)
            counts["notices"] += len(explanation.notices)
            if stop_row is not None and rows.total >= stop_row:
                raise _Enough
            may_checkpoint = may_checkpoint and checkpoint is not None and checkpoint(piece)
            if may_checkpoint:
                candidate = Resume(
                    last_id, rows.total, **{name: counts[name] for name in _COUNTS},
                    compacted=compacted_count, issues=check.count, issue=check.first,
                    offset=check.offset, held=tuple(check.held), new=counts["new"],
                    latest=latest_turn_id,
                )  # fmt: skip
        rest = abandoned.below(None)
        if rest or state:
            product = ProductExplanation(explanation=EMPTY, state_only=tuple(state))
            rows.add(Piece(rows.total, len(rest) + len(state), product=product, left=rest))
        check.finish()
    except _Enough:
        pass
    built = rows.built(found_compaction, compacted_count, latest_turn_id, pending)
    paginator = Paginator(Window(rows.total, built), per_page)
    shown = paginator.get_page(page or paginator.num_pages)
    issue = check.first
    if issue is not None and shown.start_index() - 1 >= start.rows:
        mark_refused(list(shown))  # the run refuses the history: no row would be sent
    return StreamedContext(
        explanation=StreamedExplanation(
            context=Tally(counts["context"]),
            notices=Tally(counts["notices"]),
            issues=(issue,) if issue is not None else (),
            error=issue.to_error() if issue is not None else None,
            issue_count=check.count,
        ),
        compacted=Tally(compacted_count),
        compaction=found_compaction,
        orphans=Tally(counts["orphans"]),
        page=shown,
        tokens=counts["tokens"],
        new_count=counts["new"],
        latest_turn=turns.get(latest_turn_id),
        checkpoints=tuple(saved),
        start=start if start.upto else None,
        rows=built,
    )
