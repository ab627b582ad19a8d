"""What one watcher is sent: its position in the session and the frames a batch of group
messages (`fanout.Batch`) or a catch-up from the database makes for it.

A watcher's position is the highest stored event id it was sent (`sent_id`; live events at
or below it are duplicates and dropped), per turn the last stored event id it was sent (a
fragment older than that is stale and dropped), and the turns whose streaming box it was
sent. In a batch served when the process fell behind (`Batch.behind`), consecutive
fragments of one turn become one frame with their text joined, and fragments followed in
the batch by a stored event of their turn are not sent (that event's frame clears the box
they would stream into): a process that fell behind sends fewer, fuller frames, never other
text. Whatever the batch, its frames go to the watcher in one websocket message
(`messages`).
Frames depend only on the message and the watcher's position, so the batch keeps each one
made (`Batch.frame`) for every watcher at the same position: once per process in the
usual case.
"""

from __future__ import annotations

from typing import Any

from sessions_app.live import render
from sessions_app.live.fanout import Batch
from sessions_app.live.payloads import CANCEL, EVENT, OUTCOME, PARTIAL, TODOS, TURN
from sessions_app.models import Turn

RUNNING = Turn.Status.RUNNING


class WatcherFrames:
    """The position of one watcher of `session_id` and the frames it is sent."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.sent_id = 0
        self.turn_last_id: dict[str, int] = {}
        self.streaming: set[str] = set()

    # -- a catch-up from the database ----------------------------------------------------

    def catch_up(
        self, after: int, turns: list[dict[str, Any]], events: list[dict[str, Any]]
    ) -> list[str]:
        """Frames resending from `after`: `turns`, then `events` (payloads read from the
        database), then hello. The page skips what it shows already; live messages with
        ids at or below the last one sent are dropped after it."""
        self.sent_id = after
        frames = [self.turn_frame(turn) for turn in turns]
        frames.extend(frame for event in events if (frame := self.event_frame(event)))
        frames.append(render.hello_frame(self.sent_id))
        return frames

    def event_frame(self, event: dict[str, Any]) -> str | None:
        """The frame of an EventPayload, or None for an event already sent."""
        if not self._sends_event(event):
            return None
        return render.event_frame(event)

    def turn_frame(self, turn: dict[str, Any]) -> str:
        """The frame of a TurnPayload."""
        self._turn_changed(turn)
        return render.turn_frame(turn, self.sent_id)

    def error_frame(self, error: str) -> str:
        """A frame from the client that is not the protocol."""
        return render.error_frame(error, self.sent_id)

    # -- live messages -------------------------------------------------------------------

    def messages(self, batch: Batch) -> list[str]:
        """The websocket messages `batch` means for this watcher: its frames joined in one
        (the page handles each frame's state in turn), or none. One send per watcher per
        batch, however many messages queued up: a send costs the server far more than the
        bytes it carries (a write and two changes to the event loop's registrations in
        daphne's Twisted, per socket)."""
        frames = self.frames(batch)
        return ["".join(frames)] if frames else []

    def frames(self, batch: Batch) -> list[str]:
        """The frames `batch` means for this watcher, in order (module docstring)."""
        frames: list[str] = []
        run: list[int] = []  # indexes of consecutive fragments of one turn, to be joined
        for index, message in enumerate(batch.messages):
            kind = message.get("type")
            if kind == PARTIAL:
                partial = message["partial"]
                turn_id = partial.get("turn_id") or ""
                if partial.get("after_id", 0) < self.turn_last_id.get(turn_id, 0):
                    continue  # its complete event was already sent
                if batch.behind and batch.superseded(index):
                    continue
                if (
                    batch.behind
                    and run
                    and batch.messages[run[0]]["partial"].get("turn_id") == partial.get("turn_id")
                ):
                    run.append(index)
                    continue
                self._end_run(batch, run, frames)
                run = [index]
                continue
            self._end_run(batch, run, frames)
            run = []
            frame = self._frame(batch, index, message)
            if frame is not None:
                frames.append(frame)
        self._end_run(batch, run, frames)
        return frames

    def _frame(self, batch: Batch, index: int, message: dict[str, Any]) -> str | None:
        kind = message.get("type")
        if kind == EVENT:
            event = message["event"]
            if not self._sends_event(event):
                return None
            return batch.frame((index,), lambda: render.event_frame(event))
        last_id = self.sent_id
        if kind == TURN:
            turn = message["turn"]
            self._turn_changed(turn)
            return batch.frame((index, last_id), lambda: render.turn_frame(turn, last_id))
        if kind == OUTCOME:
            outcome = message["outcome"]
            return batch.frame((index, last_id), lambda: render.outcome_frame(outcome, last_id))
        if kind == CANCEL:
            turn_id = message.get("turn_id", "")
            return batch.frame((index, last_id), lambda: render.cancel_frame(turn_id, last_id))
        if kind == TODOS:
            version = message.get("version")
            return batch.frame(
                (index, last_id), lambda: render.todos_frame(self.session_id, version, last_id)
            )
        return None  # a type this watcher does not know (a newer sender)

    def _end_run(self, batch: Batch, run: list[int], frames: list[str]) -> None:
        """The frame of fragments `run` (indexes into the batch) of one turn."""
        if not run:
            return
        first = batch.messages[run[0]]["partial"]
        turn_id = first.get("turn_id") or ""
        opens = turn_id not in self.streaming
        self.streaming.add(turn_id)
        last_id = self.sent_id

        def make() -> str:
            partial = first
            if len(run) > 1:
                parts = [batch.messages[i]["partial"] for i in run]
                delta = "".join(part.get("delta") or "" for part in parts)
                partial = {**first, "delta": delta, "after_id": parts[-1].get("after_id", 0)}
            return render.partial_frame(partial, last_id, opens=opens)

        frames.append(batch.frame((run[0], run[-1], last_id, opens), make))

    def _sends_event(self, event: dict[str, Any]) -> bool:
        if event["id"] <= self.sent_id:
            return False
        self.sent_id = event["id"]
        turn_id = event.get("turn_id")
        if turn_id:
            self.turn_last_id[turn_id] = event["id"]
            self.streaming.discard(turn_id)
        return True

    def _turn_changed(self, turn: dict[str, Any]) -> None:
        if turn["status"] != RUNNING:
            self.streaming.discard(turn["id"])
