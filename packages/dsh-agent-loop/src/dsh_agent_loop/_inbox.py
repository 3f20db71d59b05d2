"""The inbox: messages sent to an agent, waiting for the turn or step they target."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dsh_agent import SendTarget
from dsh_llm import UserMessage

__all__ = ["Inbox", "InboxItem"]


@dataclass(frozen=True, slots=True)
class InboxItem:
    """One queued message, where it enters, and whether sending it asked for a turn."""

    message: UserMessage
    target: SendTarget
    wake: bool


class Inbox:
    """Queued messages in send order.

    A step claims every ``next-step`` item; the first step of a turn also claims the oldest
    ``next-turn`` item (one send, one turn). Claimed messages keep their send order.
    """

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: list[InboxItem] = []

    def put(self, items: Iterable[InboxItem]) -> None:
        """Queue ``items`` after the others."""
        self._items.extend(items)

    def claim(self, *, first_step: bool) -> list[UserMessage]:
        """Take what the next step runs with (see the class docstring)."""
        claimed: list[UserMessage] = []
        kept: list[InboxItem] = []
        took_turn_item = not first_step
        for item in self._items:
            if item.target == "next-step":
                claimed.append(item.message)
            elif not took_turn_item:
                claimed.append(item.message)
                took_turn_item = True
            else:
                kept.append(item)
        self._items = kept
        return claimed

    def has_step_items(self) -> bool:
        """Whether a ``next-step`` item waits (a steer or an inject)."""
        return any(item.target == "next-step" for item in self._items)

    def has_waking(self) -> bool:
        """Whether an item sent with ``wake`` waits: reason enough for another turn."""
        return any(item.wake for item in self._items)

    def clear(self) -> None:
        """Drop every queued message."""
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
