"""The loop's extension points: ordered, disposable registrations of listeners.

Each point is a :class:`Listeners` list; ``add(listener)`` returns a ``dsh_tools.Disposer``
(call it, or leave its ``with`` block, to withdraw the listener). Listeners may be plain or
``async`` functions. How each point combines its listeners:

- ``session_start(agent, source)``: every listener in order, once the agent is set up and before
  it can run (``source`` is ``"startup"`` or ``"resume"``).
- ``session_prefix(agent, next)``: a waterfall. Each listener returns the prefix messages;
  ``await next()`` gives what the later listeners compose, so the canonical contribution
  ``[mine, *await next()]`` puts contributions on the wire in registration order. Composed once
  per loop instance, before its first pre-step.
- ``pre_step(step, decision)``: in order, each sees the decision so far (first an
  :class:`Enter` of the claimed messages) and may return another ``Enter`` (rewritten
  messages) or a :class:`Reject` (the turn ends ``blocked``); ``None`` keeps the decision.
- ``turn_stopping(stopping)``: every listener in order when a turn is about to end; one may
  ``agent.steer(...)`` to force another step.
- ``request(step, config)``: in order, each sees the config so far and may return a replacement
  :class:`~dsh_agent.RequestConfig` (``None`` keeps it). Messages are never theirs to touch.
- ``request_error(error, decision)``: in order until one returns :class:`Retry` or
  :class:`Fail`; ``None`` passes to the next; without a decision the step fails. A listener
  that raises fails the step (no retry).
- ``approval(request)``: answerers, in order until one returns an outcome; ``None`` passes to
  the next; no answer is ``unavailable`` (see ``dsh_agent.ApprovalRequest``).
- ``tool_output(execution, text)``: every listener in order, each time a running tool reports
  output (a bash command's lines as they come). Plain functions only, called on the event loop
  and expected to return at once; for display, never logged (the result is); one that raises
  is skipped for that report. Without listeners, tools are not asked to report.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from dsh_agent._approval import ApprovalAnswerer
from dsh_agent._options import RequestConfig
from dsh_llm import LlmFailure, Message, UserMessage
from dsh_tools import Disposer, ToolOutputListener

if TYPE_CHECKING:
    from dsh_agent._agent import Agent

__all__ = [
    "Enter",
    "Extensions",
    "Fail",
    "Listeners",
    "PreStepDecision",
    "PreStepListener",
    "PrefixNext",
    "Reject",
    "RequestError",
    "RequestErrorDecision",
    "RequestErrorListener",
    "RequestListener",
    "Retry",
    "SessionPrefixListener",
    "SessionStartListener",
    "SessionStartSource",
    "StepContext",
    "TurnStopping",
    "TurnStoppingListener",
]

F = TypeVar("F", bound=Callable[..., Any])

SessionStartSource = Literal["startup", "resume"]
"""``startup`` for a new (or forked) session, ``resume`` for one read back from persistence."""


@dataclass(frozen=True, slots=True)
class StepContext:
    """Where the loop is: ``agent``, ``turn`` and the ``step`` about to run (both from 1)."""

    agent: Agent
    turn: int
    step: int


@dataclass(frozen=True, slots=True)
class Enter:
    """Run the step with ``messages`` entering the log (``user/message`` each, in order)."""

    messages: tuple[UserMessage, ...] = ()


@dataclass(frozen=True, slots=True)
class Reject:
    """Do not run the step: the turn ends ``blocked`` and the claimed messages are dropped."""

    reason: str | None = None


PreStepDecision = Enter | Reject
"""What ``pre_step`` listeners decide."""


@dataclass(frozen=True, slots=True)
class TurnStopping:
    """A turn is about to end with ``reason`` (its ``turn/end`` reason) after ``step``."""

    agent: Agent
    turn: int
    step: int
    reason: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RequestError:
    """Model call number ``attempt`` (from 1) of a step failed with ``failure``.

    ``config`` is the request config of the failed call; ``retryable`` is ``False`` for failures
    that did not come from the model (no model for the route, a request the loop refused).
    """

    agent: Agent
    turn: int
    step: int
    attempt: int
    failure: LlmFailure
    config: RequestConfig
    retryable: bool = True


@dataclass(frozen=True, slots=True)
class Retry:
    """Call the model again in the same step (the failed attempt stays in the log)."""


@dataclass(frozen=True, slots=True)
class Fail:
    """Give up: the turn ends with the failure."""


RequestErrorDecision = Retry | Fail
"""What ``request_error`` listeners decide."""

PrefixNext = Callable[[], Awaitable[Sequence[Message]]]
"""What a prefix listener awaits for the later listeners' composition."""

SessionStartListener = Callable[["Agent", SessionStartSource], Awaitable[None] | None]
"""``(agent, source)``."""
SessionPrefixListener = Callable[["Agent", PrefixNext], Awaitable[Sequence[Message]]]
"""``async (agent, next) -> messages``; canonically ``[mine, *await next()]``."""
PreStepListener = Callable[
    [StepContext, PreStepDecision], Awaitable[PreStepDecision | None] | PreStepDecision | None
]
"""``(step, decision so far) -> replacement or None``."""
TurnStoppingListener = Callable[[TurnStopping], Awaitable[None] | None]
"""``(stopping)``; may steer the agent to run another step."""
RequestListener = Callable[
    [StepContext, RequestConfig], Awaitable[RequestConfig | None] | RequestConfig | None
]
"""``(step, config so far) -> replacement or None``."""
RequestErrorListener = Callable[
    [RequestError], Awaitable[RequestErrorDecision | None] | RequestErrorDecision | None
]
"""``(error) -> Retry, Fail or None`` (no opinion)."""


class _Entry(Generic[F]):
    __slots__ = ("listener",)

    def __init__(self, listener: F) -> None:
        self.listener = listener


class Listeners(Generic[F]):
    """An ordered list of listeners of one extension point."""

    __slots__ = ("_entries", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._entries: list[_Entry[F]] = []

    def add(self, listener: F) -> Disposer:
        """Register ``listener`` after the others; the disposer withdraws this registration
        (the same function added twice is two registrations)."""
        if not callable(listener):
            raise TypeError(f"{self.name} listener must be callable, not {type(listener).__name__}")
        entry = _Entry(listener)
        entries = self._entries
        entries.append(entry)

        def withdraw() -> None:
            for index, existing in enumerate(entries):
                if existing is entry:
                    del entries[index]
                    return

        return Disposer(withdraw)

    def __iter__(self) -> Iterator[F]:
        """A snapshot, in registration order (adding or withdrawing while iterating is safe)."""
        return iter([entry.listener for entry in self._entries])

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __repr__(self) -> str:
        return f"<Listeners {self.name}: {len(self._entries)}>"


@dataclass(slots=True)
class Extensions:
    """Every extension point of the agent loop (see the module docstring for each one's rule)."""

    session_start: Listeners[SessionStartListener] = field(
        default_factory=lambda: Listeners("session_start")
    )
    session_prefix: Listeners[SessionPrefixListener] = field(
        default_factory=lambda: Listeners("session_prefix")
    )
    pre_step: Listeners[PreStepListener] = field(default_factory=lambda: Listeners("pre_step"))
    turn_stopping: Listeners[TurnStoppingListener] = field(
        default_factory=lambda: Listeners("turn_stopping")
    )
    request: Listeners[RequestListener] = field(default_factory=lambda: Listeners("request"))
    request_error: Listeners[RequestErrorListener] = field(
        default_factory=lambda: Listeners("request_error")
    )
    approval: Listeners[ApprovalAnswerer] = field(default_factory=lambda: Listeners("approval"))
    tool_output: Listeners[ToolOutputListener] = field(
        default_factory=lambda: Listeners("tool_output")
    )
