"""ScriptedModel: a keyless Model that replays a script of responses."""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from dsh_llm._chunks import StreamChunk
from dsh_llm._request import ModelRequest

__all__ = ["HANG", "Hang", "ScriptEntry", "ScriptExhaustedError", "ScriptedModel"]


@dataclass(frozen=True)
class Hang:
    """A script entry that yields ``before`` and then waits until the consumer is cancelled."""

    before: Sequence[StreamChunk] = field(default_factory=tuple)


HANG = Hang()
"""Hang at once, until cancelled (use ``Hang(before=...)`` to stream a partial answer first)."""

ScriptEntry = (
    Sequence[StreamChunk]
    | Callable[
        [ModelRequest],
        Sequence[StreamChunk] | AsyncIterator[StreamChunk] | Awaitable[Sequence[StreamChunk]],
    ]
    | Hang
)
"""One scripted response: chunks, a callable from the request to chunks (a sequence, an async
iterator, or an awaitable sequence, so ``async def`` functions and generators both work), or a
``Hang``."""


class ScriptExhaustedError(RuntimeError):
    """The model was asked more often than its script has responses.

    ``request_number`` is the 1-based number of the request that found the script empty;
    ``request`` is that request.
    """

    def __init__(self, request_number: int, request: ModelRequest) -> None:
        self.request_number = request_number
        self.request = request
        super().__init__(
            f"ScriptedModel script exhausted: request #{request_number} "
            f"({request.provider}/{request.model}, {len(request.messages)} messages) has no "
            "scripted response; add one more entry to the script"
        )


class ScriptedModel:
    """A ``Model`` that answers request N with script entry N. Keyless and deterministic.

    Every request is recorded in ``requests`` (in call order), including one that finds the script
    exhausted. A callable entry receives the request and returns chunks (a list or an async
    iterator). Between chunks the stream yields to the event loop, so cancelling the consumer
    takes effect at the next chunk; a ``Hang`` entry waits until cancelled. ``context_window``
    is what it reports as `dsh_llm.ModelInfo` (``None``: unknown).
    """

    def __init__(
        self, script: Iterable[ScriptEntry] = (), *, context_window: int | None = None
    ) -> None:
        self._script: deque[ScriptEntry] = deque(script)
        self._context_window = context_window
        self.requests: list[ModelRequest] = []
        """Every request received, in order."""

    def context_window(self, model: str) -> int | None:
        """The ``context_window`` given at construction, for every model name (`ModelInfo`)."""
        return self._context_window

    def add(self, *entries: ScriptEntry) -> None:
        """Append responses to the end of the script."""
        self._script.extend(entries)

    @property
    def remaining(self) -> int:
        """How many scripted responses are left."""
        return len(self._script)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Record ``request`` and replay the next script entry."""
        self.requests.append(request)
        if not self._script:
            raise ScriptExhaustedError(len(self.requests), request)
        entry = self._script.popleft()
        if isinstance(entry, Hang):
            for chunk in entry.before:
                await asyncio.sleep(0)
                yield chunk
            await asyncio.Event().wait()  # only cancellation ends this
            return
        if callable(entry):
            produced = entry(request)
            if inspect.isawaitable(produced):
                produced = await produced
            if isinstance(produced, AsyncIterator):
                async for chunk in produced:
                    await asyncio.sleep(0)
                    yield chunk
                return
            entry = produced
        for chunk in entry:
            await asyncio.sleep(0)
            yield chunk
