"""The session prefix: request-only messages in front of the whole derived history, composed
once per loop instance and logged only as the ``messagePrefix`` of a ``request/header``."""

from __future__ import annotations

from collections.abc import Sequence

from dsh_agent import Agent, Extensions, SessionPrefixListener
from dsh_llm import MESSAGE_ADAPTER, AssistantMessage, Message, ToolResultMessage, UserMessage

__all__ = ["compose_prefix"]

_MESSAGE_TYPES = (UserMessage, AssistantMessage, ToolResultMessage)


async def _waterfall(
    listeners: Sequence[SessionPrefixListener], index: int, agent: Agent
) -> Sequence[Message]:
    if index == len(listeners):
        return ()

    async def next_() -> Sequence[Message]:
        return await _waterfall(listeners, index + 1, agent)

    composed = await listeners[index](agent, next_)
    if not isinstance(composed, list | tuple):
        raise TypeError(
            f"session_prefix listener {listeners[index]!r} returned "
            f"{type(composed).__name__}, not a sequence of messages"
        )
    return composed


async def compose_prefix(extensions: Extensions, agent: Agent) -> tuple[Message, ...]:
    """Run the ``session_prefix`` waterfall once and return its product, deep-copied (each
    message re-validated from its wire form, so no listener keeps a handle on it).

    Raises ``TypeError`` when a listener returns anything but messages.
    """
    composed = await _waterfall(list(extensions.session_prefix), 0, agent)
    for message in composed:
        if not isinstance(message, _MESSAGE_TYPES):
            raise TypeError(f"the session prefix holds {type(message).__name__}, not a message")
    return tuple(MESSAGE_ADAPTER.validate_python(message.to_wire()) for message in composed)
