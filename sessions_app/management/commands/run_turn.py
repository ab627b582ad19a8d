"""`manage.py run_turn SESSION_ID "message" [--agent dotted.path]`: run one turn.

Runs the turn through the Runner on the database (docs/runtime.md §3) and prints what it yields as
it comes: partial text inline, each stored event with its id, then the turn's final status
(status, reason, failure code/stage). Watchers see it live, like a turn started from the
page (with the Redis channel layer, on every server process). Exit status 0 when the turn
completed, 1 otherwise (failed or interrupted), 2 for an unknown session or agent.
"""

from __future__ import annotations

import asyncio
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from agentops.runtime.errors import SessionNotFoundError
from agentops.runtime.model import Event
from sessions_app import live
from sessions_app.models import Turn


class Command(BaseCommand):
    help = "Run one turn of a session with the configured agent and print its events."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("session_id")
        parser.add_argument("message")
        parser.add_argument(
            "--agent", default="", help="dotted path of an agent factory (default AGENTOPS_AGENT)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            agent = live.get_agent(options["agent"])
        except (ImportError, AttributeError, ValueError) as bad:
            raise CommandError(f"cannot load the agent: {bad}", returncode=2) from None
        streaming = False
        turn_ids: list[str] = []

        def show(event: Event) -> None:
            nonlocal streaming
            if event.turn_id and event.turn_id not in turn_ids:
                turn_ids.append(event.turn_id)
            if event.partial:
                self.stdout.write(event.content.text, ending="")
                self.stdout.flush()
                streaming = True
                return
            if streaming:
                self.stdout.write("")
                streaming = False
            content = event.content
            line = f"[event {event.id}] {content.role.value}"
            if event.author:
                line += f" ({event.author})"
            if content.text:
                line += f": {content.text}"
            for call in content.tool_calls:
                line += f"\n    call {call.id} {call.name}({call.arguments})"
            if content.tool_response is not None:
                response = content.tool_response
                value = response.error if response.is_error else response.result
                kind = "error" if response.is_error else "result"
                line += f"\n    {kind} for {response.tool_call_id}: {value}"
            self.stdout.write(line)

        service = live.LiveSessionService()
        service.on_begin = lambda turn: turn_ids.append(turn.id)
        error_name = ""
        try:
            asyncio.run(
                live.run_turn(
                    options["session_id"],
                    options["message"],
                    agent=agent,
                    service=service,
                    on_event=show,
                )
            )
        except SessionNotFoundError:
            raise CommandError(f"no session {options['session_id']!r}", returncode=2) from None
        except (Exception, KeyboardInterrupt) as caught:
            error_name = type(caught).__name__
        if streaming:
            self.stdout.write("")
        turn = Turn.objects.filter(pk__in=turn_ids).order_by("-started_at").first()
        if turn is None:
            raise CommandError(f"no turn was recorded ({error_name or 'no error'})", returncode=1)
        status = f"turn {turn.id}: {turn.status}"
        if turn.reason:
            status += f" ({turn.reason})"
        if turn.failure_code:
            status += f" failure {turn.failure_code} at stage {turn.failure_stage or '-'}"
            if turn.failure_message:
                status += f": {turn.failure_message}"
        self.stdout.write(status)
        if turn.status != Turn.Status.COMPLETED:
            raise CommandError("the turn did not complete", returncode=1)
