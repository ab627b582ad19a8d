"""Durable facts -> model context: the default projector and its explanation (docs/runtime.md §4).

`explain_projection` is the one implementation of the default projection rules; the
default projector calls the same function with recording switched off, so what the
dashboard shows is, by construction, what an agent gets.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol, runtime_checkable

from agentops.runtime.errors import ToolExecutionUnknownError
from agentops.runtime.model import Content, Event, Role
from agentops.runtime.protocol import ToolProtocolIssue, _scan
from agentops.runtime.session import Turn, TurnStatus

__all__ = [
    "NOTICE_AUTHOR",
    "DefaultProjector",
    "EntryKind",
    "ProjectionEntry",
    "ProjectionExplanation",
    "ProjectionInput",
    "Projector",
    "ProjectorFunc",
    "as_projector",
    "explain_projection",
    "project_default",
    "projection_fails",
    "status_notice",
    "status_notice_text",
]

#: Author of the synthetic status notices (display only; never sent to a model).
NOTICE_AUTHOR = "runner"


@dataclass(frozen=True, slots=True)
class ProjectionInput:
    """Durable facts to project: a session's turns and its active events.

    `events` must be in conversation order (as `SessionService.list_events` returns them);
    `turns` in any order. Projectors must not mutate or store either.
    """

    turns: Sequence[Turn] = ()
    events: Sequence[Event] = ()


@runtime_checkable
class Projector(Protocol):
    """Turns durable facts into the context an agent gets (docs/runtime.md §4).

    Implementations must not mutate or persist the input. The runner validates the tool
    protocol of whatever a projector returns (docs/runtime.md §3 step 7), so a custom projector
    cannot smuggle unanswered calls past it; it stays responsible for the truth of any
    tool results it invents.
    """

    async def project(self, projection_input: ProjectionInput) -> Sequence[Event]:
        """The context for the next agent call, in order."""
        ...


class ProjectorFunc:
    """Adapts a function ``fn(ProjectionInput) -> Sequence[Event]`` (sync or async)."""

    def __init__(
        self,
        fn: Callable[[ProjectionInput], Sequence[Event] | Awaitable[Sequence[Event]]],
    ) -> None:
        self._fn = fn

    async def project(self, projection_input: ProjectionInput) -> Sequence[Event]:
        """Call the wrapped function, awaiting its result when it is awaitable."""
        result = self._fn(projection_input)
        if inspect.isawaitable(result):
            return await result
        return result


class EntryKind(StrEnum):
    """What the default projection did with one row of `ProjectionExplanation.entries`."""

    KEPT = "kept"
    """A stored event passed to the agent as stored."""
    DROPPED = "dropped"
    """A stored event of a running turn (another run owns it)."""
    CUT = "cut"
    """A stored event of a failed/interrupted turn at or after its first unanswered call."""
    NOTICE = "notice"
    """A synthetic status notice inserted after a failed/interrupted turn (never stored)."""


@dataclass(frozen=True, slots=True)
class ProjectionEntry:
    """One row of an explanation: a stored event, or an inserted notice.

    - `group`: index of the maximal contiguous run of events with one turn id.
    - `turn`: the turn record of that group; None for legacy events (no record).
    - `issue`: for CUT rows, the first tool-protocol issue of the group (the cut point).
    - `context_index`: position in the projected context (KEPT and NOTICE rows), else None.
    """

    event: Event
    kind: EntryKind
    group: int
    turn: Turn | None = None
    issue: ToolProtocolIssue | None = None
    context_index: int | None = None

    @property
    def reason(self) -> str:
        """A short human explanation of `kind` for display."""
        if self.kind is EntryKind.KEPT:
            return "legacy event, replayed" if self.turn is None else "replayed as stored"
        if self.kind is EntryKind.DROPPED:
            return "turn still running"
        if self.kind is EntryKind.CUT:
            assert self.issue is not None
            ids = ", ".join(call.id for call in self.issue.tool_calls)
            return f"cut: tool call(s) {ids} of event {self.issue.event_id} have no result"
        return "status notice (not stored)"


@dataclass(frozen=True, slots=True)
class ProjectionExplanation:
    """The default projection of some facts, with the reasons (docs/runtime.md §4).

    - `entries`: every input event in input order, each with its verdict, and each notice
      right after the events of the turn it describes.
    - `context`: the list the default projector produces before the final check.
    - `issues`: tool-protocol issues of `context` (positions are context indexes).
    - `error`: the `ToolExecutionUnknownError` for the first issue, or None. When set, the
      default projector raises it instead of returning `context`.
    """

    entries: tuple[ProjectionEntry, ...]
    context: tuple[Event, ...]
    issues: tuple[ToolProtocolIssue, ...] = ()
    error: ToolExecutionUnknownError | None = field(default=None)

    @property
    def ok(self) -> bool:
        """True when the projection is usable (no unanswered calls in the context)."""
        return self.error is None

    @property
    def notices(self) -> list[ProjectionEntry]:
        """The NOTICE rows, in order."""
        return [entry for entry in self.entries if entry.kind is EntryKind.NOTICE]


def status_notice_text(turn: Turn) -> str:
    """The text of the status notice for a failed or interrupted `turn` (docs/runtime.md §4).

    Names the status and reason and, when the turn has a failure, its code and stage —
    never its message (a message may hold text that must not reach a model).
    """
    reason = turn.reason.value or "no reason recorded"
    text = (
        f"[runner notice] The previous turn ({turn.id}) ended with status "
        f"{turn.status.value} ({reason}). Its incomplete or uncertain output must not be "
        "taken as completed: actions it started may or may not have happened. Check the "
        "current state before retrying."
    )
    if turn.failure is not None:
        stage = turn.failure.stage or "unknown"
        text += f" Failure code: {turn.failure.code}; stage: {stage}."
    return text


def status_notice(turn: Turn) -> Event:
    """The synthetic, never-stored notice event for `turn` (docs/runtime.md §4).

    Role user, author ``runner``, id 0, the turn's session and turn ids.
    """
    return Event(
        id=0,
        session_id=turn.session_id,
        turn_id=turn.id,
        author=NOTICE_AUTHOR,
        content=Content(role=Role.USER, text=status_notice_text(turn)),
    )


_COMPLETED = TurnStatus.COMPLETED
_RUNNING = TurnStatus.RUNNING


def _project(
    turns: Sequence[Turn], events: Sequence[Event], entries: list[ProjectionEntry] | None
) -> list[Event]:
    """The default projection rules; appends explanation rows to `entries` when given."""
    by_id = {turn.id: turn for turn in turns}
    context: list[Event] = []
    n = len(events)
    i = 0
    group = 0
    while i < n:
        turn_id = events[i].turn_id
        j = i + 1
        while j < n and events[j].turn_id == turn_id:
            j += 1
        turn = by_id.get(turn_id) if turn_id else None
        if turn is None or turn.status is _COMPLETED:
            if entries is not None:
                for k in range(i, j):
                    entries.append(
                        ProjectionEntry(events[k], EntryKind.KEPT, group, turn, None, len(context))
                    )
                    context.append(events[k])
            else:
                context.extend(events[i:j])
        elif turn.status is _RUNNING:
            if entries is not None:
                entries.extend(
                    ProjectionEntry(events[k], EntryKind.DROPPED, group, turn) for k in range(i, j)
                )
        else:
            issues = _scan(events, i, j)
            cut = issues[0].position if issues else j
            if entries is not None:
                for k in range(i, cut):
                    entries.append(
                        ProjectionEntry(events[k], EntryKind.KEPT, group, turn, None, len(context))
                    )
                    context.append(events[k])
                entries.extend(
                    ProjectionEntry(events[k], EntryKind.CUT, group, turn, issues[0])
                    for k in range(cut, j)
                )
                notice = status_notice(turn)
                entries.append(
                    ProjectionEntry(notice, EntryKind.NOTICE, group, turn, None, len(context))
                )
                context.append(notice)
            else:
                context.extend(events[i:cut])
                context.append(status_notice(turn))
        group += 1
        i = j
    return context


def explain_projection(turns: Sequence[Turn], events: Sequence[Event]) -> ProjectionExplanation:
    """Run the default projection and say, for every stored event, what happened to it.

    `events`: a session's active events in conversation order; `turns`: its turn
    records. Never raises for unanswered calls: they are reported in `issues`/`error`.
    Does not mutate its inputs. Implements docs/runtime.md §4 (shared with `project_default`).
    """
    entries: list[ProjectionEntry] = []
    context = _project(turns, events, entries)
    issues = _scan(context, 0, len(context))
    return ProjectionExplanation(
        entries=tuple(entries),
        context=tuple(context),
        issues=tuple(issues),
        error=issues[0].to_error() if issues else None,
    )


def project_default(projection_input: ProjectionInput) -> list[Event]:
    """The default projection (docs/runtime.md §4) as a new list.

    Per maximal contiguous run of events with one turn id: legacy (no record) and completed
    turns are replayed as stored; running turns are dropped; failed, interrupted and other
    turns keep the prefix before their first unanswered tool call and gain a status notice
    (`status_notice`). Raises `ToolExecutionUnknownError` when the result still has an
    unanswered call (a completed or legacy turn with a dangling call fails closed).
    """
    context = _project(projection_input.turns, projection_input.events, None)
    issues = _scan(context, 0, len(context))
    if issues:
        raise issues[0].to_error()
    return context


def projection_fails(statuses: Mapping[str, TurnStatus], events: Iterable[Event]) -> bool:
    """Whether `project_default` of `events` with turns of these `statuses` (turn id ->
    status) raises `ToolExecutionUnknownError`, reading `events` once: at a time it holds
    one run of a turn that is neither completed nor running (its kept prefix depends on
    the whole run) and the projected events since the last one that is not a tool result
    (the scan of docs/runtime.md §5 starts afresh at each such event). The same rules as
    `_project` and `_scan`, so the same verdict on any history."""
    tail: list[Event] = []
    run: list[Event] = []
    run_turn: str | None = None
    run_status: TurnStatus | None = None

    def push(event: Event) -> bool:
        nonlocal tail
        if event.content.role is not Role.TOOL and tail:
            if _scan(tail, 0, len(tail)):
                return True
            tail = []
        tail.append(event)
        return False

    def close_run() -> bool:
        if run_status is None or run_status in (_COMPLETED, _RUNNING) or not run:
            return False
        issues = _scan(run, 0, len(run))
        cut = issues[0].position if issues else len(run)
        if any(push(event) for event in run[:cut]):
            return True
        notice = Event(
            id=0,
            session_id=run[0].session_id,
            turn_id=run[0].turn_id,
            author=NOTICE_AUTHOR,
            content=Content(role=Role.USER, text=""),
        )
        return push(notice)

    for event in events:
        if event.turn_id != run_turn or run_turn is None:
            if close_run():
                return True
            run, run_turn = [], event.turn_id
            run_status = statuses.get(run_turn) if run_turn else None
        if run_status is None or run_status is _COMPLETED:
            if push(event):
                return True
        elif run_status is not _RUNNING:
            run.append(event)
    if close_run():
        return True
    return bool(tail) and bool(_scan(tail, 0, len(tail)))


class DefaultProjector:
    """The default durable-turn projector (docs/runtime.md §4) as a `Projector`."""

    async def project(self, projection_input: ProjectionInput) -> list[Event]:
        """`project_default(projection_input)`; raises `ToolExecutionUnknownError`."""
        return project_default(projection_input)


def as_projector(
    projector: Projector
    | Callable[[ProjectionInput], Sequence[Event] | Awaitable[Sequence[Event]]]
    | None,
) -> Projector:
    """Normalise a projector option: None -> `DefaultProjector`, a function -> `ProjectorFunc`."""
    if projector is None:
        return DefaultProjector()
    if isinstance(projector, Projector):
        return projector
    if callable(projector):
        return ProjectorFunc(projector)
    raise TypeError(f"not a projector: {type(projector).__name__}")
