"""Who is calling which tool with what: ``ToolCall``, ``ToolCaller`` and ``ToolExecution``."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from dsh_llm import ToolCallBlock
from dsh_session import Session

__all__ = ["ToolCall", "ToolCaller", "ToolExecution", "ToolOutputListener", "freeze_json"]


@runtime_checkable
class ToolCaller(Protocol):
    """The agent on whose behalf a tool runs: its session log and its working directory.

    ``session`` is the agent's live log (``session.header.id`` is its session id; its events
    say what the session did and which permissions it logged, `dsh_session.logged_permissions`);
    ``cwd`` its session working directory (absolute), ``None`` when the session has none. A
    ``dsh_agent.Agent`` is one.
    """

    @property
    def session(self) -> Session:
        """The calling agent's session log."""
        ...

    @property
    def cwd(self) -> str | None:
        """The calling agent's session working directory, when it has one."""
        ...


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call as the model made it: the provider's call id, the tool name, the raw arguments.

    ``arguments`` is the JSON text exactly as the model produced it.
    """

    call_id: str
    name: str
    arguments: str

    @classmethod
    def from_block(cls, block: ToolCallBlock) -> ToolCall:
        """The call a ``tool-call`` content block describes."""
        return cls(call_id=block.id, name=block.name, arguments=block.arguments)


@dataclass(frozen=True, slots=True)
class ToolExecution:
    """One dispatched call, as the hooks and the tool body see it. Immutable.

    ``arguments`` is the parsed JSON object, deep-frozen (mappings are read-only, arrays are
    tuples); the validated parameter model is passed to the body separately. ``caller`` is the
    agent, or ``None`` when the call has none. Cancellation is asyncio's: the body runs in the
    caller's task, so cancelling that task interrupts it. ``on_output`` is whoever watches the
    call run (see `report_output`), ``None`` when nobody does.
    """

    call_id: str
    tool_name: str
    arguments: Mapping[str, Any]
    caller: ToolCaller | None = None
    on_output: ToolOutputListener | None = field(default=None, compare=False, repr=False)

    def report_output(self, text: str) -> None:
        """Tell the watcher output the body produced while running (a bash command's lines).

        For display only: the result is the record, and nothing told here is logged. Without a
        watcher it does nothing; a watcher that raises is ignored, so showing progress can
        never fail the call. Call it from the event loop's thread.
        """
        if self.on_output is not None and text:
            with contextlib.suppress(Exception):
                self.on_output(self, text)

    @property
    def session_id(self) -> str | None:
        """The caller's ``session.header.id``, ``None`` without a caller."""
        return self.caller.session.header.id if self.caller is not None else None


ToolOutputListener = Callable[[ToolExecution, str], None]
"""``(execution, text)``: output a running call reported (see `ToolExecution.report_output`)."""


def freeze_json(value: Any) -> Any:
    """A deep-frozen copy of parsed JSON: dicts become read-only mappings, lists become tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: freeze_json(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze_json(item) for item in value)
    return value
