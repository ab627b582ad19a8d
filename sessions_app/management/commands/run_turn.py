"""`manage.py run_turn SESSION_ID "message" [--agent dotted.path] [--to URL --api-key KEY]`:
run one turn.

With `--to`, the turn runs here but records into the dashboard at URL through its HTTP API
(`agentops.client.RemoteSessionService`, docs/interfaces.md), as any remote runner would;
the agent's todo tools then keep the list through the API too (`RemoteTodoStore`).

Runs the turn through the Runner on the database (docs/runtime.md §3) and prints what it yields as
it comes: partial text inline, each stored event with its id, then the turn's final status
(status, reason, failure code/stage). Watchers see it live, like a turn started from the
page (with the Redis channel layer, on every server process). Exit status 0 when the turn
completed, 1 otherwise (failed or interrupted), 2 for an unknown session or agent.

Runs of one session are serialised across processes by the run lock (docs/runtime.md §2):
while another process runs a turn of the session (the page, another `run_turn`), this one
says so and waits for it to end. Ctrl-C stops the turn (interrupted/canceled, attributed
to the OS user: "<user> (manage.py run_turn)").
"""

from __future__ import annotations

import asyncio
import getpass
from argparse import ArgumentParser
from importlib import import_module
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from agentops.client import RemoteSessionService, RemoteTodoStore, StoreUnreachableError
from agentops.runtime import Runner
from agentops.runtime.errors import SessionNotFoundError
from agentops.runtime.model import Event
from agentops.runtime.session import TurnStatus
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
        parser.add_argument("--to", default="", help="record through the HTTP API at this URL")
        parser.add_argument("--api-key", default="", help="API key for --to")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["to"] and not options["api_key"]:
            raise CommandError("--to needs --api-key", returncode=2)
        remote = RemoteSessionService(options["to"], options["api_key"]) if options["to"] else None
        try:
            agent = (
                _remote_agent(options["agent"], remote)
                if remote
                else live.get_agent(options["agent"])
            )
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

        if remote is not None:
            asyncio.run(self._run_remote(remote, options, agent, show))
            return
        try:
            # A turn whose process died is recorded abandoned now, not waited for.
            asyncio.run(live.recover_dead_turns(options["session_id"]))
        except SessionNotFoundError:
            raise CommandError(f"no session {options['session_id']!r}", returncode=2) from None
        self._say_if_busy(options["session_id"])
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
        except KeyboardInterrupt:
            error_name = "KeyboardInterrupt"
            Turn.objects.filter(pk__in=turn_ids, stopped_by="").update(
                stopped_by=f"{_os_user()} (manage.py run_turn)"
            )
        except Exception as caught:
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

    async def _run_remote(
        self, service: RemoteSessionService, options: dict[str, Any], agent: Any, show: Any
    ) -> None:
        """Run the turn recording through the API at `--to`; print its final status."""
        async with service:
            turn_ids: list[str] = []
            try:
                async for event in Runner(agent, service).run(
                    options["session_id"], options["message"]
                ):
                    if event.turn_id and event.turn_id not in turn_ids:
                        turn_ids.append(event.turn_id)
                    if event.partial:
                        await service.publish_partial(event)
                    show(event)
            except SessionNotFoundError:
                raise CommandError(f"no session {options['session_id']!r}", returncode=2) from None
            except StoreUnreachableError as down:
                raise CommandError(str(down), returncode=2) from None
            except Exception:  # the turn's outcome is recorded; report it below
                pass
            turns = await service.list_turns(options["session_id"])
        if not turns:
            raise CommandError("no turn was recorded", returncode=1)
        turn = turns[-1]
        status = f"turn {turn.id}: {turn.status.value}"
        if turn.reason:
            status += f" ({turn.reason.value})"
        if turn.failure is not None:
            status += f" failure {turn.failure.code} at stage {turn.failure.stage or '-'}"
        self.stdout.write(status)
        if turn.status is not TurnStatus.COMPLETED:
            raise CommandError("the turn did not complete", returncode=1)

    def _say_if_busy(self, session_id: str) -> None:
        """Tell the user when another process runs a turn of the session: the run waits for
        it (the run lock), it does not break in."""
        busy = (
            Turn.objects.filter(session_id=session_id, status=Turn.Status.RUNNING)
            .values_list("id", "owner_host", "owner_pid")
            .first()
        )
        if busy is None:
            return
        turn_id, host, pid = busy
        where = f" (pid {pid} on {host})" if pid else ""
        self.stdout.write(f"Waiting for turn {turn_id}{where} to end: one run at a time.")
        self.stdout.flush()


def _remote_agent(path: str, service: RemoteSessionService) -> Any:
    """The agent of factory `path` (default AGENTOPS_AGENT) keeping its todo list through
    the API (`RemoteTodoStore`)."""
    dotted = path or settings.AGENTOPS_AGENT
    module_name, _, attr = dotted.rpartition(".")
    if not module_name:
        raise ImportError(f"{dotted!r} is not a dotted path")
    return getattr(import_module(module_name), attr)(todo_store=RemoteTodoStore(service.http))


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "someone"
