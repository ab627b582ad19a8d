"""Todo tools: a per-session task list under session-state key ``todos`` (docs/runtime.md §7).

Four tools (`todos_list`, `todos_write`, `todos_update`, `todos_clear`) operate on a
`TodoStore`, which serialises read-modify-write of one session's list. Each tool has a
JSON-schema description (`TODO_TOOL_SPECS`) for function calling. Tool errors are
`TodoToolError`s with a clear message meant for the model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "SUMMARY_END_MARKER",
    "SUMMARY_START_MARKER",
    "TODOS_STATE_KEY",
    "TODO_TOOL_SPECS",
    "TodoCallContext",
    "TodoIndexError",
    "TodoItem",
    "TodoShapeError",
    "TodoStore",
    "TodoToolError",
    "TodoTools",
    "ToolSpec",
    "coerce_todos",
    "dump_todos",
    "render_todos_for_summary",
]

#: The session-state key shared with compaction consumers (docs/runtime.md §7).
TODOS_STATE_KEY = "todos"
SUMMARY_START_MARKER = "<todos>"
SUMMARY_END_MARKER = "</todos>"

T = TypeVar("T")


class TodoToolError(ValueError):
    """A tool call the model must fix; the message says how."""


class TodoIndexError(TodoToolError, IndexError):
    """`index` is outside ``[0, length)``."""

    def __init__(self, index: int, length: int) -> None:
        self.index = index
        self.length = length
        super().__init__(f"todo index {index} is out of range [0, {length})")


class TodoShapeError(TodoToolError, TypeError):
    """The stored ``todos`` value is neither missing nor a list; `type_name` names its type."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name
        super().__init__(
            f"session state {TODOS_STATE_KEY!r} holds a {type_name}, expected a list of todo items"
        )


class TodoItem(BaseModel):
    """One task (docs/runtime.md §7).

    `content`: the task in imperative form ("Run the tests"). `status`: normally
    ``pending``, ``in_progress`` or ``completed``; other strings are kept as given.
    `active_form`: present-continuous form shown while in progress ("Running the tests");
    omitted from the stored dict when empty.
    """

    model_config = ConfigDict(frozen=True)

    content: str = Field(default="", description="The task, imperative form.")
    status: str = Field(default="pending", description="One of pending, in_progress, completed.")
    active_form: str = Field(
        default="", description="Present continuous form shown while in progress."
    )

    def to_state(self) -> dict[str, str]:
        """The dict stored under ``todos`` (``active_form`` omitted when empty)."""
        data = {"content": self.content, "status": self.status}
        if self.active_form:
            data["active_form"] = self.active_form
        return data


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def coerce_todos(value: Any) -> list[TodoItem]:
    """Read a stored ``todos`` value (docs/runtime.md §7).

    None/missing -> []; a list (or tuple) of mappings -> items, with non-string fields
    read as "" and non-mapping entries skipped; anything else raises `TodoShapeError`
    naming the type.
    """
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise TodoShapeError(type(value).__name__)
    return [
        TodoItem(
            content=_text(entry.get("content")),
            status=_text(entry.get("status")),
            active_form=_text(entry.get("active_form")),
        )
        for entry in value
        if isinstance(entry, Mapping)
    ]


def dump_todos(items: Sequence[TodoItem]) -> list[dict[str, str]]:
    """The JSON value to store under ``todos`` for `items`."""
    return [item.to_state() for item in items]


def render_todos_for_summary(items: Sequence[TodoItem]) -> str:
    """The todo block of a compaction summariser prompt (docs/runtime.md §7), or "" when
    there is nothing to restore.

    One line per item (``- [status] content``, runs of whitespace in the content
    collapsed to one space so an item never spans lines) between `SUMMARY_START_MARKER`
    and `SUMMARY_END_MARKER`, followed by the instruction to restore the list with the
    tools. Items whose content is empty (or only whitespace) are left out; when no item
    is left (an empty list included) the whole block is omitted: "" is returned.
    """
    rendered = [
        f"- [{item.status}] {content}"
        for item in items
        if (content := " ".join(item.content.split()))
    ]
    if not rendered:
        return ""
    lines = [SUMMARY_START_MARKER, *rendered]
    lines.append(SUMMARY_END_MARKER)
    lines.append(
        "When you resume, restore this task list with todos_write and keep it current "
        "with todos_update."
    )
    return "\n".join(lines)


class TodoCallContext(BaseModel):
    """Where a todo change comes from, for stores that keep an audit (optional).

    `tool`: the tool name (set by `TodoTools`). `turn_id`: the running turn's id ("" when
    unknown). `event_id`: the stored assistant event holding the tool call (None when
    unknown). Stores without an audit ignore it.
    """

    model_config = ConfigDict(frozen=True)

    tool: str = ""
    turn_id: str = ""
    event_id: int | None = None


@runtime_checkable
class TodoStore(Protocol):
    """Serialised access to one session's ``todos`` list (docs/runtime.md §7).

    `modify_todos` runs read-modify-write so that concurrent updates never lose one (an
    in-process lock; across processes a row lock or compare-and-swap). Both methods raise
    `TodoShapeError` when the stored value has an unusable shape and
    `SessionNotFoundError` for an unknown session.
    """

    async def read_todos(self, session_id: str) -> list[TodoItem]:
        """The current list (coerced with `coerce_todos`)."""
        ...

    async def modify_todos(
        self,
        session_id: str,
        change: Callable[[list[TodoItem]], tuple[list[TodoItem], T]],
        *,
        context: TodoCallContext | None = None,
    ) -> T:
        """Apply ``change(current) -> (new_list, result)`` atomically; store, return result.

        If `change` raises, nothing is stored and the error propagates. `context` says
        which tool call made the change (audit); stores may ignore it.
        """
        ...


class ToolSpec(BaseModel):
    """A function-calling description: name, description, JSON-schema `parameters`."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]

    def as_function(self) -> dict[str, Any]:
        """``{"name", "description", "parameters"}`` as most provider APIs expect it."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


class _NoArgs(BaseModel):
    model_config = ConfigDict(title="NoArguments")


class _WriteArgs(BaseModel):
    model_config = ConfigDict(title="TodosWriteArguments")
    todos: list[TodoItem] = Field(
        default_factory=list, description="The complete new list; replaces the old one."
    )


class _UpdateArgs(BaseModel):
    model_config = ConfigDict(title="TodosUpdateArguments")
    index: int = Field(description="0-based position of the item to change.")
    status: str = Field(default="", description="New status; empty keeps the current one.")
    content: str = Field(default="", description="New content; empty keeps the current one.")
    active_form: str = Field(
        default="", description="New active form; empty keeps the current one."
    )


#: The four tools' descriptions, by name (docs/runtime.md §7).
TODO_TOOL_SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            name="todos_list",
            description="Read your task list for this session. Returns {todos: [...]}.",
            parameters=_NoArgs.model_json_schema(),
        ),
        ToolSpec(
            name="todos_write",
            description=(
                "Replace your whole task list (there is no append: send every item). "
                "Returns {count}."
            ),
            parameters=_WriteArgs.model_json_schema(),
        ),
        ToolSpec(
            name="todos_update",
            description=(
                "Change one item by 0-based index; non-empty fields overwrite, empty ones "
                "keep the current value. Returns {ok: true}."
            ),
            parameters=_UpdateArgs.model_json_schema(),
        ),
        ToolSpec(
            name="todos_clear",
            description="Empty your task list. Returns {ok: true}.",
            parameters=_NoArgs.model_json_schema(),
        ),
    )
}


def _index_of(arguments: Mapping[str, Any]) -> int:
    index = arguments.get("index")
    if isinstance(index, float) and index.is_integer():
        index = int(index)
    if isinstance(index, bool) or not isinstance(index, int):
        raise TodoToolError(f"todos_update needs an integer 'index', got {type(index).__name__}")
    return index


class _Tool(Protocol):
    def __call__(
        self,
        session_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        context: TodoCallContext | None = None,
    ) -> Awaitable[dict[str, Any]]: ...


def _context(context: TodoCallContext | None, tool: str) -> TodoCallContext:
    return (context or TodoCallContext()).model_copy(update={"tool": tool})


class TodoTools:
    """The four todo tools bound to a `TodoStore` (docs/runtime.md §7).

    Each method takes the session id (the agent's own session: every agent has its own
    list) and the decoded JSON arguments, and returns the JSON-ready result. Errors are
    `TodoToolError`s to report back to the model as a handled tool error.
    """

    def __init__(self, store: TodoStore) -> None:
        self.store = store
        self._tools: dict[str, _Tool] = {
            "todos_list": self.todos_list,
            "todos_write": self.todos_write,
            "todos_update": self.todos_update,
            "todos_clear": self.todos_clear,
        }

    @property
    def specs(self) -> list[ToolSpec]:
        """The descriptions of the registered tools."""
        return [TODO_TOOL_SPECS[name] for name in self._tools]

    async def call(
        self,
        name: str,
        session_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        context: TodoCallContext | None = None,
    ) -> dict[str, Any]:
        """Dispatch tool `name`; unknown name -> `TodoToolError`.

        `context` (optional: turn and event ids of the call) is passed to the store for
        its audit, with `tool` set to `name`.
        """
        tool = self._tools.get(name)
        if tool is None:
            raise TodoToolError(f"unknown todo tool {name!r}")
        return await tool(session_id, arguments or {}, context=context)

    async def todos_list(
        self,
        session_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        context: TodoCallContext | None = None,
    ) -> dict[str, Any]:
        """``{"todos": [item dicts]}``."""
        return {"todos": dump_todos(await self.store.read_todos(session_id))}

    async def todos_write(
        self,
        session_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        context: TodoCallContext | None = None,
    ) -> dict[str, Any]:
        """Replace the list with ``arguments["todos"]`` (missing -> []); ``{"count": n}``.

        Items are coerced like stored values; a non-list `todos` raises `TodoShapeError`.
        """
        items = coerce_todos((arguments or {}).get("todos"))

        def change(_current: list[TodoItem]) -> tuple[list[TodoItem], int]:
            return items, len(items)

        return {
            "count": await self.store.modify_todos(
                session_id, change, context=_context(context, "todos_write")
            )
        }

    async def todos_update(
        self,
        session_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        context: TodoCallContext | None = None,
    ) -> dict[str, Any]:
        """Patch item ``arguments["index"]``; non-empty string fields overwrite; ``{"ok": true}``.

        Raises `TodoIndexError` naming the index and ``[0, n)`` when out of range.
        """
        arguments = arguments or {}
        index = _index_of(arguments)
        patch = {
            key: value
            for key in ("status", "content", "active_form")
            if isinstance(value := arguments.get(key), str) and value
        }

        def change(current: list[TodoItem]) -> tuple[list[TodoItem], None]:
            if not 0 <= index < len(current):
                raise TodoIndexError(index, len(current))
            updated = list(current)
            updated[index] = current[index].model_copy(update=patch)
            return updated, None

        await self.store.modify_todos(session_id, change, context=_context(context, "todos_update"))
        return {"ok": True}

    async def todos_clear(
        self,
        session_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        context: TodoCallContext | None = None,
    ) -> dict[str, Any]:
        """Set ``todos`` to an empty list (the key stays); ``{"ok": true}``."""

        def change(_current: list[TodoItem]) -> tuple[list[TodoItem], None]:
            return [], None

        await self.store.modify_todos(session_id, change, context=_context(context, "todos_clear"))
        return {"ok": True}
